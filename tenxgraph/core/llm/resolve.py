"""Turn a model name into a ChatModel, choosing the provider the way users expect."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from tenxgraph.core.llm.base import ChatModel
from tenxgraph.core.llm.retry import RetryingModel, RetryPolicy
from tenxgraph.errors import GraphBuildError

__all__ = ["resolve_model"]

_ADAPTERS: Final[Mapping[str, tuple[str, str]]] = MappingProxyType(
    {
        "openai": ("openai", "OpenAIChatModel"),
        "openai-compatible": ("openai", "OpenAIChatModel"),
        "openai-responses": ("openai_responses", "OpenAIResponsesModel"),
        "anthropic": ("anthropic", "AnthropicModel"),
        "google": ("google", "GoogleModel"),
        "local": ("local", "LocalLlamaModel"),
    }
)
"""Provider name -> (module in ``tenxgraph.core.llm``, adapter class)."""

_NAME_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(ft:)?(gpt-|chatgpt-|o\d)"), "openai"),
    (re.compile(r"^claude-"), "anthropic"),
    (re.compile(r"^gemini-"), "google"),
    (re.compile(r"^local$|\.gguf$"), "local"),
)


def resolve_model(
    model: str | ChatModel,
    *,
    provider: str | None = None,
    retry: RetryPolicy | None = None,
    **kwargs: Any,
) -> ChatModel:
    """Return a ChatModel for ``model``: a model instance as is, or a name resolved to an adapter.

    Names map to providers by prefix: ``gpt-*``, ``chatgpt-*``, ``o1``/``o3``/
    ``o4``... and fine-tuned ``ft:gpt-*`` to OpenAI, ``claude-*`` to Anthropic,
    ``gemini-*`` to Google, ``"local"`` or a ``*.gguf`` path to the in-process local model.
    ``provider=`` overrides the guess (``"openai-compatible"`` needs
    ``base_url=``). ``kwargs`` go to the adapter's constructor; with ``retry``
    the model is wrapped in a ``RetryingModel``.
    """
    if isinstance(model, ChatModel):
        if provider is not None or kwargs:
            raise GraphBuildError(
                "resolve_model: provider= and adapter arguments apply to model names only, "
                f"but a {type(model).__name__} instance was given"
            )
        resolved = model
    else:
        resolved = _build(model, provider, kwargs)
    return RetryingModel(resolved, retry) if retry is not None else resolved


def _build(name: str, provider: str | None, kwargs: dict[str, Any]) -> ChatModel:
    provider = provider or _guess_provider(name)
    if provider not in _ADAPTERS:
        raise GraphBuildError(
            f"resolve_model: unknown provider {provider!r}; choose one of {', '.join(_ADAPTERS)}"
        )
    if provider == "openai-compatible":
        if not kwargs.get("base_url"):
            raise GraphBuildError(
                "resolve_model: provider 'openai-compatible' needs base_url= "
                "(e.g. 'http://localhost:8000/v1')"
            )
        kwargs.setdefault("provider", "openai-compatible")
    module_name, class_name = _ADAPTERS[provider]
    module = importlib.import_module(f"tenxgraph.core.llm.{module_name}")
    adapter: Callable[..., ChatModel] = getattr(module, class_name)
    if provider == "local":
        return adapter(None if name == "local" else name, **kwargs)
    return adapter(name, **kwargs)


def _guess_provider(name: str) -> str:
    for pattern, provider in _NAME_PATTERNS:
        if pattern.search(name):
            return provider
    raise GraphBuildError(
        f"resolve_model: cannot tell the provider of model {name!r}. Model names starting "
        "with gpt-, chatgpt- or o<digit> are OpenAI, claude- Anthropic, gemini- Google; "
        "'local' or a .gguf path is the local model. Otherwise pass provider= one of "
        f"{', '.join(_ADAPTERS)}"
    )
