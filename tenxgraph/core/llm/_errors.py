"""Map a provider failure (an HTTP status and a message) to the library's ``ModelError`` tree.

Adapters catch their SDK's exceptions at the boundary and call ``status_error``
(or ``timeout_error`` for a request that never got an answer), so callers
only ever see ``tenxgraph.errors``. Providers report an over-long prompt as a
plain 400; ``mentions_context_overflow`` recognizes their wordings.
"""

from __future__ import annotations

import re

from tenxgraph.errors import (
    AuthenticationError,
    BadRequestError,
    ContextWindowExceededError,
    ModelError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)

__all__ = ["mentions_context_overflow", "status_error", "timeout_error"]

_CONTEXT_OVERFLOW = re.compile(
    r"prompt is too long"  # Anthropic
    r"|context[_ ]length[_ ]exceeded|maximum context length|context window"  # OpenAI
    r"|input token count.*exceeds|exceeds the maximum number of tokens"  # Gemini
    r"|too many (input )?tokens|reduce the length of the (messages|input)",
    re.IGNORECASE,
)


def mentions_context_overflow(*texts: str | None) -> bool:
    """True when a provider's error code or message says the prompt does not fit the context."""
    return any(text and _CONTEXT_OVERFLOW.search(text) for text in texts)


def status_error(
    status: int | None, message: str, *, provider: str, context_overflow: bool = False
) -> ModelError:
    """Return the library error for an HTTP ``status`` (keeps ``status`` and ``provider``).

    ``context_overflow`` marks a request rejected for not fitting the context
    window (the caller decides, from the provider's error code or message).
    """
    text = f"{provider}: {message}" if provider else message
    kind: type[ModelError]
    if context_overflow:
        kind = ContextWindowExceededError
    elif status == 429:
        kind = RateLimitError
    elif status in (401, 403):
        kind = AuthenticationError
    elif status == 408:
        kind = ModelTimeoutError
    elif status is not None and 400 <= status < 500:
        kind = BadRequestError
    elif status is not None and status >= 500:
        kind = ServerError
    else:
        kind = ModelError
    return kind(text, status=status, provider=provider)


def timeout_error(message: str, *, provider: str) -> ModelTimeoutError:
    """Return the error for a request that timed out or could not connect."""
    return ModelTimeoutError(f"{provider}: {message}", provider=provider)
