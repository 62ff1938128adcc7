"""Retries with exponential backoff on transient model errors, as a ChatModel wrapper."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field

from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ModelError, ModelTimeoutError, RateLimitError, ServerError

__all__ = ["RetryPolicy", "RetryingModel"]


class RetryPolicy(BaseModel):
    """How often and how patiently to retry a model call that failed transiently.

    The wait before retry ``n`` (from 1) is ``initial_delay * multiplier**(n-1)``,
    capped at ``max_delay``, then spread by up to ``jitter`` of itself either way.
    """

    model_config = ConfigDict(frozen=True)

    max_attempts: int = Field(default=3, ge=1)
    """Calls in total, the first included; 1 means no retry."""
    initial_delay: float = Field(default=0.5, ge=0)
    """Seconds to wait before the first retry."""
    max_delay: float = Field(default=8.0, ge=0)
    """Longest wait between two attempts, in seconds."""
    multiplier: float = Field(default=2.0, ge=1)
    """Growth of the wait from one retry to the next."""
    jitter: float = Field(default=0.1, ge=0, le=1)
    """Random spread of each wait, as a fraction of it (0 for exact waits)."""
    retry_on: tuple[type[ModelError], ...] = (RateLimitError, ServerError, ModelTimeoutError)
    """Errors worth retrying; anything else is raised at once."""

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        base = min(self.initial_delay * self.multiplier ** (retry - 1), self.max_delay)
        if self.jitter:
            base *= 1 + random.uniform(-self.jitter, self.jitter)
        return max(base, 0.0)


class RetryingModel(ChatModel):
    """Wraps a model and retries calls that fail with a transient error.

    A call is retried only while nothing has been yielded yet: once a delta
    went out, a retry would repeat it, so the error is raised instead.
    """

    def __init__(
        self,
        model: ChatModel,
        policy: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.inner = model
        """The wrapped model."""
        self.policy = policy or RetryPolicy()
        self.provider = model.provider
        self.model = model.model
        self._context_window = model.context_window
        self._sleep = sleep

    def supports_output_schema(self, *, with_tools: bool) -> bool:
        """What the wrapped model says."""
        return self.inner.supports_output_schema(with_tools=with_tools)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Stream from the wrapped model, starting over after a transient failure."""
        attempt = 1
        while True:
            yielded = False
            try:
                async for message in self.inner.stream(request):
                    yielded = True
                    yield message
                return
            except self.policy.retry_on:
                if yielded or attempt >= self.policy.max_attempts:
                    raise
            await self._sleep(self.policy.delay(attempt))
            attempt += 1
