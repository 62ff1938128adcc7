"""One model call of an ``Agent``, and the ``wrap_model_call`` middleware chain around it.

A ``ModelCall`` is what the Agent is about to send: the model, the system
prompt, the messages after it (the ``context_summary`` and the context),
the tools and the other request options, with the state they came from.
A wrapper is ``async def wrap(call, handler) -> Message``: ``handler(call)``
runs the next wrapper, and the innermost handler streams ``call.model`` and
returns its complete assistant message. A wrapper may change the call
(``call.override(...)``: another prompt, fewer tools, another model), call
the handler several times (retries, fallbacks), change the answer, or
answer without calling the model. The first wrapper is the outermost.

Deltas go out live, as each attempt produces them, so a retried or
discarded attempt's deltas have already been streamed; a consumer knows
the answer that counts by the complete message the Agent's step adds
(the only one stored). The built-in adapters give the deltas of one answer
one ``message_id``, so a new id in the stream marks a new attempt.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tenxgraph.core.graph._tracing import traced_model, tracer
from tenxgraph.core.llm.base import ChatModel, ModelRequest, ToolChoice, ToolSpec
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ModelError

__all__ = ["ModelCall", "ModelCallHandler", "ModelCallWrapper", "stream_model_call"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """One model call as ``wrap_model_call`` middleware sees it; change it with ``override``."""

    model: ChatModel
    """The model that answers (a fallback or router puts another one here)."""
    messages: list[Message]
    """What follows the system prompt: the ``context_summary`` (if any), then the context."""
    system_prompt: str | None = None
    """Sent first, as a system message; None (or empty) sends none."""
    tools: list[ToolSpec] = field(default_factory=list)
    """What the model is told about the tools. Leaving a tool out hides it from this call only."""
    tool_choice: ToolChoice = "auto"
    output_schema: dict[str, Any] | None = None
    """JSON schema of structured output; the Agent's ``output_schema`` validates the answer."""
    output_schema_name: str = "output"
    temperature: float | None = None
    max_tokens: int | None = None
    state: AgentState
    """The graph state the call was built from (read it; a wrapper's changes are not saved)."""
    config: dict[str, Any] = field(default_factory=dict)
    """The run's config (``thread_id``...)."""
    invocation_state: dict[str, Any] = field(default_factory=dict)
    """The per-invocation dict given to ``invoke``, shared with tools and hooks."""

    def override(self, **changes: Any) -> ModelCall:
        """A copy with ``changes`` (``model=``, ``system_prompt=``, ``tools=``...)."""
        return replace(self, **changes)

    def request(self) -> ModelRequest:
        """The provider-neutral request for ``model``: the system prompt, then the messages."""
        prompt = self.system_prompt
        system = [Message.text_message(prompt, role="system")] if prompt else []
        return ModelRequest(
            messages=[*system, *self.messages],
            tools=list(self.tools),
            tool_choice=self.tool_choice,
            output_schema=self.output_schema,
            output_schema_name=self.output_schema_name,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            user_id=self.config.get("user_id"),
        )


ModelCallHandler = Callable[[ModelCall], Awaitable[Message]]
"""``await handler(call)``: the next wrapper, or the model; returns the complete answer."""

ModelCallWrapper = Callable[[ModelCall, ModelCallHandler], Awaitable[Message]]
"""``async def wrap(call, handler) -> Message``: runs around each model call (middleware)."""


async def stream_model_call(
    call: ModelCall, wrappers: Sequence[ModelCallWrapper] = ()
) -> AsyncIterator[Message]:
    """Yield the deltas of every attempt the chain makes, then the chain's complete answer.

    Without wrappers the model is streamed here directly. With wrappers the
    chain runs in a task, and its model attempts hand their deltas over a
    queue, so they are yielded while the wrappers are still waiting.
    """
    if not wrappers:
        async for message in _attempt(call):
            yield message
        return
    deltas: asyncio.Queue[Message | None] = asyncio.Queue()

    async def innermost(wanted: ModelCall) -> Message:
        answer: Message | None = None
        async for message in _attempt(wanted):
            if message.delta:
                deltas.put_nowait(message)
            else:
                answer = message
        assert answer is not None  # _attempt ends with the complete message or raises
        return answer

    handler: ModelCallHandler = innermost
    for wrapper in reversed(wrappers):
        handler = _around(wrapper, handler)
    chain = asyncio.ensure_future(_closing(handler(call), deltas))
    try:
        while (delta := await deltas.get()) is not None:
            yield delta
        yield await chain
    finally:
        if chain.done() and not chain.cancelled():
            chain.exception()  # retrieved: it was raised above, or the consumer left first
        chain.cancel()


async def _attempt(call: ModelCall) -> AsyncIterator[Message]:
    """One model call: its deltas, then exactly one complete message (or ``ModelError``)."""
    answer: Message | None = None
    found = tracer()
    request = call.request()
    if found is None:
        stream = call.model.stream(request)
    else:
        stream = traced_model(found, call.model, request, call.config)
    async for message in stream:
        if message.delta:
            yield message
        else:
            answer = message
    if answer is None:  # a custom model's stream ended with deltas only
        raise ModelError(
            f"model {call.model.model!r} returned no complete message",
            provider=call.model.provider,
        )
    yield answer


async def _closing(answer: Awaitable[Message], deltas: asyncio.Queue[Message | None]) -> Message:
    """Await the chain's answer; tell the reader of ``deltas`` there are no more, in any case."""
    try:
        return await answer
    finally:
        deltas.put_nowait(None)


def _around(wrapper: ModelCallWrapper, inner: ModelCallHandler) -> ModelCallHandler:
    """``inner`` wrapped by ``wrapper``, whose answer must be a complete assistant message."""

    async def call(wanted: ModelCall) -> Message:
        answer = await wrapper(wanted, inner)
        if not isinstance(answer, Message) or answer.role != "assistant" or answer.delta:
            name = getattr(wrapper, "__qualname__", repr(wrapper))
            raise ModelError(
                f"wrap_model_call {name} returned {_describe(answer)}; it must return "
                "a complete assistant Message (what its handler returned, or one it made)"
            )
        return answer

    return call


def _describe(value: object) -> str:
    if isinstance(value, Message):
        return f"a Message with role={value.role!r}, delta={value.delta}"
    return f"{type(value).__name__} {value!r:.60}"
