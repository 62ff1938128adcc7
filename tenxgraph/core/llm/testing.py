"""Public test models: replace a provider at the model boundary so the real agent loop runs.

``ScriptedModel`` answers from a queue and fails loudly when the script and
the conversation disagree; ``FunctionModel`` answers by calling a function.
Both stream like real adapters (text deltas, then the complete message) and
fill ``usages`` with a deterministic estimate (about four characters a token).
"""

from __future__ import annotations

import inspect
import json
import re
from abc import abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import TypeAlias

from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.state.message import Message, TokenUsages
from tenxgraph.core.state.message_block import ContentBlock, TextBlock, ToolCallBlock
from tenxgraph.errors import TenxGraphError

__all__ = [
    "FunctionModel",
    "ModelFunction",
    "ModelReply",
    "ScriptError",
    "ScriptedModel",
    "ScriptedResponse",
]

ModelReply: TypeAlias = Message | str | ToolCallBlock | Sequence[ToolCallBlock]
"""What a test model answers: an assistant ``Message``, a text (an assistant text
message), or one or more tool calls (an assistant message holding them)."""

ScriptedResponse: TypeAlias = ModelReply | BaseException
"""One scripted turn: a reply, or an exception to raise when that turn comes
(to test error handling and retries)."""

ModelFunction: TypeAlias = Callable[[ModelRequest], ModelReply | Awaitable[ModelReply]]
"""A function that answers a request, sync or async."""

_WORDS = re.compile(r"\s*\S+\s*|\s+")


class ScriptError(TenxGraphError, AssertionError):
    """A test model was used in a way its test did not expect."""


class _TestModel(ChatModel):
    """Shared streaming and usage estimation of the test models."""

    def __init__(self, model: str, provider: str) -> None:
        self.model = model
        self.provider = provider
        self.requests: list[ModelRequest] = []
        """Every request received, in order."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Yield one delta per word of each text block, then the complete message."""
        self.requests.append(request)
        reply = await self._answer(request, len(self.requests) - 1)
        message = _finish(_as_message(reply, f"{type(self).__name__} reply"), request)
        for block in message.content:
            if isinstance(block, TextBlock):
                for piece in _WORDS.findall(block.text):
                    yield Message(
                        message_id=message.message_id,
                        role="assistant",
                        content=[TextBlock(text=piece)],
                        delta=True,
                    )
        yield message

    @abstractmethod
    async def _answer(self, request: ModelRequest, call: int) -> ModelReply:
        """The reply to ``request``, the ``call``-th (from 0) this model received."""


class ScriptedModel(_TestModel):
    """Answers from a script, one entry per call, and checks the script is used exactly.

    A call after the script ran out raises ``ScriptError`` (the conversation
    made more model calls than the test expected). Used as a context manager,
    or with ``assert_consumed()``, it also fails when entries are left.

        with ScriptedModel(["Hi!", ToolCallBlock(id="c1", name="f")]) as model:
            ...
    """

    def __init__(
        self,
        responses: Iterable[ScriptedResponse],
        *,
        model: str = "scripted",
        provider: str = "test",
    ) -> None:
        super().__init__(model, provider)
        entries = list(responses)
        for index, entry in enumerate(entries):
            if not isinstance(entry, BaseException):
                _as_message(entry, f"ScriptedModel response {index}")
        self._script: deque[ScriptedResponse] = deque(entries)
        self._total = len(entries)

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been used yet."""
        return len(self._script)

    def assert_consumed(self) -> None:
        """Raise ``ScriptError`` if some scripted responses were never requested."""
        if self._script:
            raise ScriptError(
                f"ScriptedModel: {len(self._script)} of {self._total} scripted responses "
                f"were never requested (next unused: {_describe(self._script[0])})"
            )

    def __enter__(self) -> ScriptedModel:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.assert_consumed()

    async def _answer(self, request: ModelRequest, call: int) -> ModelReply:
        if not self._script:
            last = request.messages[-1].text()[:80] if request.messages else ""
            raise ScriptError(
                f"ScriptedModel: unexpected call {call + 1}; the script had {self._total} "
                f"responses (last message of the request: {last!r})"
            )
        entry = self._script.popleft()
        if isinstance(entry, BaseException):
            raise entry
        return entry


class FunctionModel(_TestModel):
    """Answers each request by calling ``function(request)``.

    An async function is awaited; a sync one is called on the event loop, so
    it should be quick (it is a test double, not a place for blocking work).
    """

    def __init__(
        self, function: ModelFunction, *, model: str = "function", provider: str = "test"
    ) -> None:
        super().__init__(model, provider)
        self.function = function

    async def _answer(self, request: ModelRequest, call: int) -> ModelReply:
        result = self.function(request)
        if inspect.isawaitable(result):
            return await result
        return result


def _as_message(reply: object, where: str) -> Message:
    """Validate a reply and turn it into an assistant message."""
    if isinstance(reply, Message):
        if reply.role != "assistant" or reply.delta:
            raise ScriptError(
                f"{where}: a model answers with a complete assistant message, "
                f"got role={reply.role!r}, delta={reply.delta}"
            )
        return reply
    if isinstance(reply, str):
        return Message.text_message(reply, role="assistant")
    if isinstance(reply, ToolCallBlock):
        return Message(role="assistant", content=[reply])
    if (
        isinstance(reply, Sequence)
        and reply
        and all(isinstance(item, ToolCallBlock) for item in reply)
    ):
        return Message(role="assistant", content=list(reply))
    raise ScriptError(
        f"{where}: expected a Message, a str, or ToolCallBlock(s), got {_describe(reply)}"
    )


def _finish(message: Message, request: ModelRequest) -> Message:
    """A copy of the answer (the caller keeps its own) with usage filled when it has none."""
    usages = message.usages or _estimate_usage(request.messages, message)
    return message.model_copy(update={"usages": usages}, deep=True)


def _estimate_usage(prompt: Sequence[Message], answer: Message) -> TokenUsages:
    prompt_tokens = sum(_estimate_tokens(message.content) for message in prompt)
    completion_tokens = _estimate_tokens(answer.content)
    return TokenUsages(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
    )


def _estimate_tokens(blocks: Sequence[ContentBlock]) -> int:
    """About four characters a token: text as written, other blocks as their JSON."""
    chars = 0
    for block in blocks:
        if isinstance(block, TextBlock):
            chars += len(block.text)
        else:
            chars += len(json.dumps(block.model_dump(mode="json")))
    return -(-chars // 4)


def _describe(value: object) -> str:
    if isinstance(value, Message):
        return f"Message(role={value.role!r}, text={value.text()[:40]!r})"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
