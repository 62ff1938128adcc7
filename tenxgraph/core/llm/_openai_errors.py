"""Map errors of the ``openai`` SDK (any server speaking its protocol) to tenxgraph errors."""

from __future__ import annotations

from typing import Any

from tenxgraph.core.llm._errors import mentions_context_overflow, status_error, timeout_error
from tenxgraph.errors import ModelError

__all__ = ["map_openai_error"]


def map_openai_error(exc: Exception, provider: str) -> ModelError:
    """Translate an ``openai.OpenAIError`` into the matching tenxgraph ``ModelError``.

    A stream that ends in an error event has no HTTP status: it maps to a
    plain ``ModelError`` unless its text says the context overflowed.
    """
    import openai

    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return timeout_error(f"could not get an answer: {exc}", provider=provider)
    if isinstance(exc, openai.APIError):
        status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
        message = _message(exc)
        overflow = status in (None, 400, 413) and mentions_context_overflow(exc.code, message)
        return status_error(status, message, provider=provider, context_overflow=overflow)
    return ModelError(f"{provider}: {exc}", provider=provider)


def _message(exc: Any) -> str:
    """The server's own error text when the body has one, else the SDK's message."""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return str(exc.message)
