"""The model boundary: one request type and a one-method interface every adapter implements.

Streaming is the primitive. ``ChatModel.stream`` yields zero or more delta
messages (``delta=True``, never stored) and then exactly one complete message
(``delta=False``). ``ChatModel.complete`` is that stream drained.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConfigError, ModelError

__all__ = ["ChatModel", "ModelRequest", "ToolChoice", "ToolSpec"]

ToolChoice = Literal["auto", "required", "none"] | str
"""``auto``, ``required`` (some tool), ``none``, or the name of the one tool to call."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about one tool."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments (an ``object`` schema)."""


@dataclass(slots=True)
class ModelRequest:
    """Everything one model call needs, in provider-neutral terms.

    ``messages`` is the full conversation as the model should see it, system
    messages included (adapters move them where their provider wants them).
    """

    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: ToolChoice = "auto"
    output_schema: dict[str, Any] | None = None
    """JSON schema (of an object) the answer must follow, through the provider's own
    structured output; the answer is its JSON text. None: no constraint. (An Agent's
    tool strategy offers the schema as a tool instead and leaves this None.)"""
    output_schema_name: str = "output"
    """The schema's name, for providers that want one (OpenAI's ``json_schema.name``)."""
    temperature: float | None = None
    max_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Provider-specific request parameters, passed through as they are."""
    user_id: str | None = None
    """The tenant whose media store ``graph://media/{key}`` refs in ``messages`` name (None:
    ``"default"``). An Agent sets it from the run config's ``user_id``."""


class ChatModel(ABC):
    """A chat model. Adapters implement ``stream``; everything else builds on it."""

    provider: str = "custom"
    """Short provider name, used in error messages."""
    model: str = ""
    """The provider's model name."""
    _context_window: int | None = None

    @property
    def context_window(self) -> int | None:
        """Tokens one request may hold: as told (``model.context_window = n``), else known.

        Known for the OpenAI, Anthropic and Gemini families (their published
        windows); None for other models until told. Context managers take
        budgets given as a fraction of it.
        """
        if self._context_window is not None:
            return self._context_window
        from tenxgraph.core.llm._windows import known_context_window

        return known_context_window(self.model)

    @context_window.setter
    def context_window(self, tokens: int | None) -> None:
        if tokens is not None and (
            isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1
        ):
            raise ConfigError(f"context_window must be an integer >= 1 or None, got {tokens!r}")
        self._context_window = tokens

    @abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Yield delta messages, then exactly one complete assistant message."""

    def supports_output_schema(self, *, with_tools: bool) -> bool:
        """Whether the model follows ``ModelRequest.output_schema`` itself (natively).

        ``with_tools``: in a request that also offers tools. An Agent whose
        ``output_strategy`` is ``auto`` asks for structured output through a
        tool when this is False. The default, True, suits adapters that send
        the schema to their provider and test models.
        """
        return True

    async def aclose(self) -> None:  # noqa: B027 - optional hook; most models hold nothing
        """Release clients and files the model opened (a no-op unless it opened some)."""

    async def complete(self, request: ModelRequest) -> Message:
        """Return the complete message: the stream drained."""
        final: Message | None = None
        async for message in self.stream(request):
            if not message.delta:
                final = message
        if final is None:
            raise ModelError(
                f"{type(self).__name__}.stream ended without a complete message",
                provider=self.provider,
            )
        return final
