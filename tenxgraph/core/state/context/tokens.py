"""Token counting: a one-method protocol and the default estimate of about 4 characters a token.

A counter must be additive (the count of a list is the sum of the counts of
its messages), so a manager can count a long history one message at a time,
walking back from the end, and stop as soon as its budget is reached.
"""

from __future__ import annotations

import inspect
import json
import math
import reprlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import (
    AudioBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    RemoteToolCallBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from tenxgraph.errors import ConfigError

__all__ = [
    "CHARS_PER_TOKEN",
    "MEDIA_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "CharEstimateCounter",
    "TokenCounter",
    "countable_parts",
]

CHARS_PER_TOKEN = 4
"""The documented rough ratio of English text: about 4 characters per token."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens a chat format spends per message on the role and separators (OpenAI's chat
format spends 3 plus the role's 1)."""

MEDIA_TOKENS = 256
"""Flat estimate for one image, audio, video, document file or data block. Providers
charge media by resolution or duration, not by the size of its base64 text, so counting
the encoded bytes would be far off; this is an order of magnitude, not a price."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a list of messages costs. Must be additive over messages."""

    def count(self, messages: Sequence[Message]) -> int:
        """Return the token count of ``messages``."""
        ...


class CharEstimateCounter:
    """The default counter: characters / ``chars_per_token`` (rounded up) per message.

    It counts the text of every block (tool names, JSON arguments and tool
    outputs included), ``MEDIA_TOKENS`` per media block and
    ``MESSAGE_OVERHEAD_TOKENS`` per message. Fast and provider-neutral; use
    ``TiktokenCounter`` for exact counts on OpenAI models.
    """

    __slots__ = ("chars_per_token", "media_tokens", "message_overhead")

    def __init__(
        self,
        chars_per_token: float = CHARS_PER_TOKEN,
        *,
        message_overhead: int = MESSAGE_OVERHEAD_TOKENS,
        media_tokens: int = MEDIA_TOKENS,
    ) -> None:
        if not chars_per_token > 0:
            raise ConfigError(
                f"CharEstimateCounter: chars_per_token must be positive, got {chars_per_token!r}"
            )
        self.chars_per_token = chars_per_token
        self.message_overhead = message_overhead
        self.media_tokens = media_tokens

    def count_text(self, text: str) -> int:
        """Estimated tokens of ``text``."""
        return math.ceil(len(text) / self.chars_per_token)

    def count(self, messages: Sequence[Message]) -> int:
        """Estimated tokens of ``messages``."""
        total = 0
        for message in messages:
            chars = 0
            media = 0
            for part in countable_parts(message):
                if isinstance(part, str):
                    chars += len(part)
                else:
                    media += 1
            total += (
                math.ceil(chars / self.chars_per_token)
                + media * self.media_tokens
                + self.message_overhead
            )
        return total

    def __repr__(self) -> str:
        return f"CharEstimateCounter(chars_per_token={self.chars_per_token!r})"


def as_token_counter(owner: str, value: object) -> TokenCounter:
    """The counter a manager's ``token_counter`` option names: the default for None.

    A counter is an object with a ``count(messages)`` method (the ``TokenCounter``
    protocol); anything else raises ``ConfigError`` naming ``owner`` when the
    manager is built, not at its first trim. Strings, lists and tuples have a
    ``count`` method of their own (a substring or item count), so containers
    are refused by kind, and a class is refused with a hint to pass an instance.
    """
    if value is None:
        return CharEstimateCounter()
    problem = _counter_problem(value)
    if problem is None and isinstance(value, TokenCounter):
        return value
    raise ConfigError(
        f"{owner}: token_counter must be a token counter, an object with a count(messages) "
        f"method such as CharEstimateCounter() or TiktokenCounter(); got "
        f"{reprlib.repr(value)} ({type(value).__name__}): {problem}"
    )


def _counter_problem(value: object) -> str | None:
    if isinstance(value, type):
        return f"a class, not an instance (pass {value.__name__}())"
    if isinstance(value, str):
        return f"a string (for a model or encoding name, pass TiktokenCounter({value!r}))"
    if isinstance(value, bytes | Sequence | Mapping):
        return "a container, not a counter"
    count = getattr(value, "count", None)
    if not callable(count):
        hint = " (wrap a function in a class with a count method)" if callable(value) else ""
        return f"it has no count method{hint}"
    try:
        inspect.signature(count).bind([])
    except TypeError:
        return "its count method cannot be called with one list of messages"
    except ValueError:
        pass  # no signature to read (some builtins): trust the name
    return None


def countable_parts(message: Message) -> Iterator[str | MediaRef | None]:
    """Yield the text a model reads from ``message``, and one media item per media block.

    Strings are text to count; a ``MediaRef`` (or ``None`` for a data block
    without one) stands for one piece of media. Shared by every counter so
    they agree on what a message contains.
    """
    return _block_parts(message.content)


def _block_parts(blocks: Sequence[object]) -> Iterator[str | MediaRef | None]:
    for block in blocks:
        if isinstance(block, TextBlock):
            yield block.text
        elif isinstance(block, ReasoningBlock):
            yield block.summary
            yield from block.details or ()
        elif isinstance(block, ToolCallBlock | RemoteToolCallBlock):
            yield block.name
            yield _json(block.args)
        elif isinstance(block, ToolResultBlock):
            yield from _output_parts(block.output)
        elif isinstance(block, ErrorBlock):
            yield block.message
        elif isinstance(block, DocumentBlock):
            yield block.media
            if block.text:
                yield block.text
        elif isinstance(block, ImageBlock | AudioBlock | VideoBlock | DataBlock):
            yield block.media


def _output_parts(output: Any) -> Iterator[str | MediaRef | None]:
    if isinstance(output, str | MediaRef):
        yield output
    elif isinstance(output, list) and output and all(isinstance(i, BaseModel) for i in output):
        yield from _block_parts(output)
    elif output is not None:
        yield _json(output)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
