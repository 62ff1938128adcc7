"""Turn a model name into a ChatModel, choosing the provider the way users expect.

``check_model`` applies the same rules without building anything (no SDK
import, no API key), so an ``Agent`` given a mistyped name fails when it is
built rather than at its first call.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from tenxgraph.core.llm.base import ChatModel
from tenxgraph.core.llm.retry import RetryingModel, RetryPolicy
from tenxgraph.errors import GraphBuildError

__all__ = ["NAME_FORMS", "PROVIDERS", "check_model", "guess_provider", "resolve_model"]

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

PROVIDERS: Final[tuple[str, ...]] = tuple(_ADAPTERS)
"""The provider names ``provider=`` accepts."""

_NAME_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(ft:)?(gpt-|chatgpt-|o\d)"), "openai"),
    (re.compile(r"^claude-"), "anthropic"),
    (re.compile(r"^gemini-"), "google"),
    (re.compile(r"^local$|\.gguf$"), "local"),
)
NAME_FORMS: Final = (
    "gpt-*, chatgpt-*, o<digit>* or ft:gpt-* (OpenAI), claude-* (Anthropic), "
    "gemini-* (Google), local or a .gguf path (the local model)"
)
"""The model names whose provider is known without asking, for messages."""


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
    the model is wrapped in a ``RetryingModel``. A name that fits none of
    these raises ``GraphBuildError`` (as ``check_model`` does).
    """
    chosen = check_model(model, provider=provider, **kwargs)
    resolved = model if isinstance(model, ChatModel) else _build(model, chosen, kwargs)
    return RetryingModel(resolved, retry) if retry is not None else resolved


def check_model(model: str | ChatModel, *, provider: str | None = None, **kwargs: Any) -> str:
    """Check what ``resolve_model`` will be asked for, without building it; return the provider.

    Raises ``GraphBuildError`` for a name no provider claims, an unknown
    ``provider``, ``"openai-compatible"`` without ``base_url=``, or
    ``provider``/adapter arguments given with a model instance. Nothing is
    imported and no API key is read, so this is cheap enough for build time.
    """
    if isinstance(model, ChatModel):
        if provider is not None or kwargs:
            raise GraphBuildError(
                "provider= and adapter arguments apply to model names only, "
                f"but a {type(model).__name__} instance was given"
            )
        return model.provider
    if provider is None:
        provider = guess_provider(model)
        if provider is None:
            raise GraphBuildError(
                f"cannot tell the provider of model {model!r}: the known names are "
                f"{NAME_FORMS}; for another model pass provider= (one of {', '.join(PROVIDERS)})"
            )
    if provider not in _ADAPTERS:
        raise GraphBuildError(
            f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}"
        )
    if provider == "openai-compatible" and not kwargs.get("base_url"):
        raise GraphBuildError(
            "provider 'openai-compatible' needs base_url= (e.g. 'http://localhost:8000/v1')"
        )
    return provider


def guess_provider(name: str) -> str | None:
    """The provider a model name implies (see ``NAME_FORMS``), or None when it does not tell."""
    for pattern, provider in _NAME_PATTERNS:
        if pattern.search(name):
            return provider
    return None


def _build(name: str, provider: str, kwargs: dict[str, Any]) -> ChatModel:
    if provider == "openai-compatible":
        kwargs.setdefault("provider", "openai-compatible")
    module_name, class_name = _ADAPTERS[provider]
    module = importlib.import_module(f"tenxgraph.core.llm.{module_name}")
    adapter: Callable[..., ChatModel] = getattr(module, class_name)
    if provider == "local":
        return adapter(None if name == "local" else name, **kwargs)
    return adapter(name, **kwargs)
