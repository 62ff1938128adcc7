"""``trim_messages``: cut a message list to a token or message budget, LangChain style.

For code that manages its own message lists (a node building a request, a
tool that forwards a conversation). Stateless: it returns a new list and
touches neither the messages nor any state. A tool call and its results are
one unit, kept or dropped together, and a result without its call is never
returned.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from tenxgraph.core.state.context.base import check_count
from tenxgraph.core.state.context.exchanges import message_list, role_names
from tenxgraph.core.state.context.fit import drop_orphan_results
from tenxgraph.core.state.context.tokens import TokenCounter, as_token_counter
from tenxgraph.core.state.message import Message, Role
from tenxgraph.core.state.message_block import ContentBlock, TextBlock
from tenxgraph.core.state.message_input import MessageLike
from tenxgraph.errors import ConfigError

__all__ = ["trim_messages"]

_OWNER = "trim_messages"

Cost = Callable[[Sequence[Message]], int]
Split = Callable[[str], Sequence[str]]


class SplitsText(Protocol):
    """A text splitter object, such as LangChain's ``TextSplitter``: ``split_text(text)``."""

    def split_text(self, text: str) -> list[str]:
        """The pieces of ``text``, in order."""
        ...


def _lines(text: str) -> list[str]:
    """The default split: lines, each with its line break."""
    return text.splitlines(keepends=True)


@dataclass(frozen=True, slots=True)
class _Trim:
    limit: int
    cost: Cost
    last: bool
    include_system: bool
    start_on: frozenset[Role] | None
    end_on: frozenset[Role] | None
    allow_partial: bool
    split: Split = _lines


def trim_messages(
    messages: Sequence[MessageLike],
    *,
    max_tokens: int | None = None,
    max_messages: int | None = None,
    strategy: Literal["last", "first"] = "last",
    token_counter: TokenCounter | None = None,
    include_system: bool = False,
    start_on: str | Collection[str] | None = None,
    end_on: str | Collection[str] | None = None,
    allow_partial: bool = False,
    text_splitter: Split | SplitsText | None = None,
) -> list[Message]:
    """Keep the last (or first) messages that fit ``max_tokens`` or ``max_messages``.

    Args:
        messages: Messages or message-like values (``("user", "hi")``...).
        max_tokens: Token budget, counted by ``token_counter``.
        max_messages: Message budget instead (pass exactly one of the two).
        strategy: ``"last"`` keeps the most recent messages, ``"first"`` the
            earliest; either way the kept part is contiguous.
        token_counter: A ``TokenCounter`` (``count(messages) -> int``); the
            default estimates about 4 characters a token.
        include_system: (``"last"`` only) always keep the system messages,
            wherever they are (but after ``end_on``'s cut); their cost comes
            out of the budget first.
        start_on: (``"last"`` only) role(s) the kept part must start on:
            what comes before the first such message is dropped, after the
            budget is applied. ``"human"``/``"ai"`` are accepted as well.
        end_on: Role(s) the kept part must end on: what comes after the last
            such message (and its tool results) is dropped; before the budget
            with ``"last"``, after it with ``"first"``.
        allow_partial: Keep part of the message at the edge when the whole
            one does not fit: its last (``"first"``: first) content blocks,
            then part of the next text block. Never a tool call or a tool result.
        text_splitter: (with ``allow_partial``) how a text block is cut: a
            function ``text -> list of pieces`` or an object with
            ``split_text`` (LangChain's text splitters). The pieces must keep
            their separators: the kept ones are joined as they are. The
            default splits into lines.

    Returns:
        A new list, in the input's order. Kept messages are the input objects
        (a partial message is a copy with the same id). A tool call and its
        results are kept or dropped together; a result that answers no call
        is never returned. When ``include_system`` keeps system messages that
        alone pass the budget, nothing else is kept.

    Raises:
        ConfigError: an option is missing, unknown or contradicts another.
        StateError: ``messages`` holds something that is not message-like.
    """
    options = _options(
        max_tokens, max_messages, strategy, token_counter, include_system, start_on, end_on
    )
    if allow_partial:
        if max_tokens is None:
            raise ConfigError(
                f"{_OWNER}: allow_partial needs max_tokens (a part of a message is still "
                "one message)"
            )
        options = replace(options, allow_partial=True, split=_splitter(text_splitter))
    elif text_splitter is not None:
        raise ConfigError(
            f"{_OWNER}: text_splitter cuts the partial message: pass allow_partial=True with it"
        )
    listed = message_list(_OWNER, messages)
    listed = drop_orphan_results(listed)
    return _trim_last(listed, options) if options.last else _trim_first(listed, options)


def _options(
    max_tokens: int | None,
    max_messages: int | None,
    strategy: object,
    token_counter: TokenCounter | None,
    include_system: bool,
    start_on: str | Collection[str] | None,
    end_on: str | Collection[str] | None,
) -> _Trim:
    if (max_tokens is None) == (max_messages is None):
        raise ConfigError(f"{_OWNER}: pass exactly one of max_tokens and max_messages")
    if strategy not in ("last", "first"):
        raise ConfigError(f"{_OWNER}: strategy must be 'last' or 'first', got {strategy!r}")
    last = strategy == "last"
    if not last and include_system:
        raise ConfigError(
            f"{_OWNER}: include_system is for strategy='last' (with 'first' the "
            "opening system messages are kept first anyway)"
        )
    if not last and start_on is not None:
        raise ConfigError(f"{_OWNER}: start_on is for strategy='last'")
    cost: Cost
    if max_tokens is not None:
        check_count(_OWNER, "max_tokens", max_tokens, minimum=0)
        cost = as_token_counter(_OWNER, token_counter).count
        limit = max_tokens
    else:
        assert max_messages is not None
        check_count(_OWNER, "max_messages", max_messages, minimum=0)
        if token_counter is not None:
            raise ConfigError(
                f"{_OWNER}: token_counter counts tokens for max_tokens; "
                "max_messages counts messages"
            )
        cost = len
        limit = max_messages
    no_tool_start = {"tool": "a tool result cannot open a list without its call"}
    return _Trim(
        limit=limit,
        cost=cost,
        last=last,
        include_system=bool(include_system),
        start_on=role_names(_OWNER, "start_on", start_on, refuse=no_tool_start),
        end_on=role_names(_OWNER, "end_on", end_on),
        allow_partial=False,
    )


def _splitter(value: Split | SplitsText | None) -> Split:
    """``text_splitter`` as a function whose result is checked to be a list of texts."""
    if value is None:
        return _lines
    split = getattr(value, "split_text", value)
    if not callable(split):
        raise ConfigError(
            f"{_OWNER}: text_splitter must be a function (text -> list of texts) or have "
            f"a split_text method, got {type(value).__name__}"
        )

    def checked(text: str) -> Sequence[str]:
        pieces = split(text)
        if not isinstance(pieces, list | tuple) or not all(isinstance(p, str) for p in pieces):
            raise ConfigError(
                f"{_OWNER}: text_splitter must return a list of texts, got "
                f"{type(pieces).__name__} {pieces!r:.60}"
            )
        return pieces

    return checked


def _groups(messages: Sequence[Message], skip_system: bool) -> list[range]:
    """Index ranges of the units that are kept whole: a message and the tool results after it."""
    groups: list[range] = []
    start = None
    for index, message in enumerate(messages):
        if message.role == "tool":
            continue  # follows its call's message (orphans are gone)
        if start is not None:
            groups.append(range(start, _tool_run_end(messages, start)))
        start = None if skip_system and message.role == "system" else index
    if start is not None:
        groups.append(range(start, _tool_run_end(messages, start)))
    return groups


def _tool_run_end(messages: Sequence[Message], start: int) -> int:
    end = start + 1
    while end < len(messages) and messages[end].role == "tool":
        end += 1
    return end


def _end_after(messages: Sequence[Message], roles: frozenset[Role]) -> int:
    """Length of the prefix that ends with the last message of ``roles`` and its results."""
    for index in range(len(messages) - 1, -1, -1):
        role = messages[index].role
        if role in roles:
            return _tool_run_end(messages, index)  # a call's results come along
    return 0


def _trim_last(messages: list[Message], options: _Trim) -> list[Message]:
    if options.end_on is not None:
        messages = messages[: _end_after(messages, options.end_on)]
    systems = [i for i, m in enumerate(messages) if m.role == "system"]
    if not options.include_system:
        systems = []
    room = options.limit - (options.cost([messages[i] for i in systems]) if systems else 0)
    if room < 0:
        return [messages[i] for i in systems]
    kept: list[tuple[int, Message]] = []  # newest first
    for group in reversed(_groups(messages, skip_system=options.include_system)):
        members = [messages[i] for i in group]
        size = options.cost(members)
        if size <= room:
            room -= size
            kept.extend((i, messages[i]) for i in reversed(group))
            continue
        if options.allow_partial and len(group) == 1:
            part = _partial(members[0], room, options, keep_end=True)
            if part is not None:
                kept.append((group.start, part))
        break
    kept.reverse()
    if options.start_on is not None:
        first = next((n for n, (_, m) in enumerate(kept) if m.role in options.start_on), len(kept))
        kept = kept[first:]
    chosen = dict(kept)
    chosen.update((i, messages[i]) for i in systems)
    return [chosen[i] for i in sorted(chosen)]


def _trim_first(messages: list[Message], options: _Trim) -> list[Message]:
    room = options.limit
    kept: list[Message] = []
    for group in _groups(messages, skip_system=False):
        members = [messages[i] for i in group]
        size = options.cost(members)
        if size <= room:
            room -= size
            kept.extend(members)
            continue
        if options.allow_partial and len(group) == 1:
            part = _partial(members[0], room, options, keep_end=False)
            if part is not None:
                kept.append(part)
        break
    if options.end_on is not None:
        kept = kept[: _end_after(kept, options.end_on)]
    return kept


def _partial(message: Message, room: int, options: _Trim, *, keep_end: bool) -> Message | None:
    """The largest part of ``message`` within ``room``: whole blocks, then pieces of one text.

    ``keep_end`` keeps the last blocks and pieces (strategy "last"), else
    the first. The whole blocks at that end that fit are kept; the text
    block next to them gives the pieces (``options.split``) that still fit.
    None when nothing fits or the message is a tool call or result.
    """
    blocks = message.content
    cost = options.cost
    if message.role == "tool" or message.tool_calls() or room <= 0 or not blocks:
        return None

    def with_blocks(count: int, extra: ContentBlock | None = None) -> Message:
        chosen = list(blocks[len(blocks) - count :] if keep_end else blocks[:count])
        if extra is not None:
            chosen.insert(0 if keep_end else len(chosen), extra)
        return message.model_copy(update={"content": chosen})

    count = _largest(len(blocks) - 1, lambda n: cost([with_blocks(n)]) <= room)
    edge = blocks[len(blocks) - count - 1] if keep_end else blocks[count]
    text = edge.text if isinstance(edge, TextBlock) else ""
    pieces = [piece for piece in options.split(text) if piece] if text else []

    def with_pieces(n: int) -> Message:
        chosen = pieces[len(pieces) - n :] if keep_end else pieces[:n]
        return with_blocks(count, edge.model_copy(update={"text": "".join(chosen)}))

    taken = _largest(len(pieces), lambda n: cost([with_pieces(n)]) <= room)
    if taken:
        return with_pieces(taken)
    return with_blocks(count) if count else None


def _largest(high: int, fits: Callable[[int], bool]) -> int:
    """The largest n in 0..high with ``fits(n)`` (``fits`` is monotone; 0 always counts)."""
    low = 0
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
