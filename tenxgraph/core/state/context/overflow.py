"""Overflow recovery: shrink a context the model refused as too long for its window.

When a model call raises ``ContextWindowExceededError`` the Agent calls
``areduce_on_overflow`` and retries, up to ``MAX_OVERFLOW_ATTEMPTS`` times.
Each call takes the gentlest step that still changes something:

1. shorten the largest tool outputs (their start and end stay, with a
   marker giving the original size);
2. replace images, audio, video and documents inside tool results, except
   the last exchange's, by a short text placeholder;
3. ask the manager (``areduce_context``): drop the older half of the turns,
   or of the current turn's exchanges, or summarize them.

When nothing is left to reduce (or the attempts run out) the Agent raises
``ContextWindowExceededError`` naming the size of what is left
(``irreducible_error``).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.context.cuts import keep_from, replace_context
from tenxgraph.core.state.context.fit import drop_orphan_results, last_group_start
from tenxgraph.core.state.context.injection import messages_for_model
from tenxgraph.core.state.context.tokens import CharEstimateCounter, TokenCounter
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    MediaRef,
    TextBlock,
    ToolResultBlock,
    VideoBlock,
)
from tenxgraph.errors import ConfigError, ContextWindowExceededError

if TYPE_CHECKING:
    from tenxgraph.core.state.context.base import BaseContextManager

__all__ = [
    "MAX_OVERFLOW_ATTEMPTS",
    "MEDIA_PLACEHOLDER",
    "TRUNCATION_MARKER",
    "afit_before_request",
    "areduce_on_overflow",
    "drop_older_half",
    "drop_older_half_of_turn",
    "irreducible_error",
    "replace_old_media",
    "shrink_tool_results",
    "truncate_largest_tool_results",
]

MAX_OVERFLOW_ATTEMPTS = 12
"""Most reductions (and retries) after a context-window error before giving up."""

TRUNCATION_MARKER = (
    "\n[tenxgraph: tool output truncated from {total} characters; {omitted} omitted]\n"
)
"""Put between the start and the end of a shortened tool output."""

MEDIA_PLACEHOLDER = "[tenxgraph: {kind} {name} removed from this old tool result to fit the window]"
"""Text that replaces a media item of an old tool result."""

_MARKER = re.compile(r"\n\[tenxgraph: tool output truncated from (\d+) characters")
_MEDIA = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)


async def areduce_on_overflow(state: AgentState, manager: BaseContextManager | None) -> bool:
    """Take the next reduction step on ``state.context``; True if it shrank.

    Without a manager only tool outputs and old media are reduced: no turn is
    dropped that the user did not ask to drop.
    """
    if shrink_tool_results(state) or replace_old_media(state):
        return True
    return manager is not None and await manager.areduce_context(state)


def drop_older_half(state: AgentState) -> bool:
    """Keep the most recent half of the user turns (at least one); True if anything went.

    With one turn, what comes before its question (but the system messages) goes:
    an older turn's leftovers, such as a result whose call was trimmed away.
    """
    context = state.context
    users = state.message_index().user_positions
    if not users:
        return False
    start = users[-max(1, len(users) // 2)]
    kept = keep_from(context, start, state.message_index().system_positions)
    return replace_context(state, drop_orphan_results(kept))


def drop_older_half_of_turn(state: AgentState) -> bool:
    """In the current turn, drop the older half of its exchanges; True if anything went.

    An *exchange* is a message of the turn that is neither a tool result nor
    a system message, with the tool results that follow it: a tool call and
    its results, a progress note, the final answer. Of ``n`` exchanges the
    newer ``max(1, n // 2)`` stay whole, after the question and the system
    messages before them, so calls keep their results and the last exchange
    is never cut.
    """
    context = state.context
    index = state.message_index()
    question = index.user_positions[-1] if index.user_positions else -1
    starts = [
        i for i in range(question + 1, len(context)) if context[i].role not in ("tool", "system")
    ]
    if len(starts) < 2:
        return False
    cut = starts[-max(1, len(starts) // 2)]
    systems = index.system_positions
    head = list(systems[: bisect_left(systems, cut)])
    if question >= 0:
        head = sorted({*head, question})
    kept = [context[p] for p in head] + context[cut:]
    return replace_context(state, drop_orphan_results(kept))


def shrink_tool_results(state: AgentState) -> bool:
    """Apply ``truncate_largest_tool_results`` to ``state.context``; True if anything shrank."""
    return replace_context(state, truncate_largest_tool_results(state.context))


def truncate_largest_tool_results(
    messages: Sequence[Message], *, keep_ratio: float = 0.5, min_chars: int = 500
) -> list[Message]:
    """Shorten the largest tool outputs first until they total ``keep_ratio`` of their size.

    Every text or JSON output longer than a common cap is cut to that cap,
    with the cap chosen as high as the target allows (never below
    ``min_chars``), so small outputs are left whole. A shortened output keeps
    its first three quarters and last quarter of the cap around
    ``TRUNCATION_MARKER``, which gives the size of the *original* output (an
    output shortened before keeps the size it had first); its message gets
    ``metadata["truncated"] = True``. Media outputs are left alone. Returns a
    new list; messages without a shortened output are the same objects.
    """
    if not 0 < keep_ratio < 1:
        raise ConfigError(f"keep_ratio must be between 0 and 1, got {keep_ratio!r}")
    texts = {
        (i, j): text
        for i, message in enumerate(messages)
        if message.role == "tool"
        for j, block in enumerate(message.content)
        if isinstance(block, ToolResultBlock) and (text := _output_text(block.output)) is not None
    }
    cap = _cap(sorted((len(t) for t in texts.values()), reverse=True), keep_ratio, min_chars)
    result = list(messages)
    for (i, j), text in texts.items():
        short = _shorten(text, cap)
        if short is None:
            continue
        message = result[i]
        content: list[ContentBlock] = list(message.content)
        content[j] = content[j].model_copy(update={"output": short})
        result[i] = message.model_copy(
            update={"content": content, "metadata": {**message.metadata, "truncated": True}}
        )
    return result


def _shorten(text: str, cap: int) -> str | None:
    """``text`` cut to about ``cap`` characters around the marker, or None if it fits."""
    found = _MARKER.search(text)
    total = int(found.group(1)) if found else len(text)
    marker_room = len(TRUNCATION_MARKER) + 2 * len(str(total))
    if len(text) <= cap + marker_room:
        return None
    head = cap * 3 // 4
    tail = cap - head
    omitted = total - head - tail
    marker = TRUNCATION_MARKER.format(total=total, omitted=omitted)
    return text[:head] + marker + text[len(text) - tail :]


def replace_old_media(state: AgentState) -> bool:
    """Replace media inside tool results, except the last exchange's, by a placeholder."""
    context = state.context
    last = last_group_start(context)
    result = list(context)
    for i, message in enumerate(context[: max(last, 0)]):
        if message.role != "tool":
            continue
        content = [_without_media(block) for block in message.content]
        if any(new is not old for new, old in zip(content, message.content, strict=True)):
            result[i] = message.model_copy(
                update={"content": content, "metadata": {**message.metadata, "media_removed": True}}
            )
    return replace_context(state, result)


def _without_media(block: ContentBlock) -> ContentBlock:
    if not isinstance(block, ToolResultBlock):
        return block
    output = block.output
    if isinstance(output, MediaRef):
        return block.model_copy(update={"output": _placeholder("media", output)})
    if isinstance(output, list) and any(isinstance(item, _MEDIA) for item in output):
        items = [
            TextBlock(text=_placeholder(item.type, item.media))
            if isinstance(item, _MEDIA)
            else item
            for item in output
        ]
        return block.model_copy(update={"output": items})
    return block


def _placeholder(kind: str, media: MediaRef) -> str:
    name = media.filename or media.url or media.file_id or media.mime_type or ""
    return MEDIA_PLACEHOLDER.format(kind=kind, name=repr(name) if name else "").replace("  ", " ")


def _cap(lengths: list[int], keep_ratio: float, min_chars: int) -> int:
    """The largest per-output cap whose capped total is within ``keep_ratio`` of the total."""
    target = int(sum(lengths) * keep_ratio)
    low, high = min_chars, max(lengths, default=min_chars)
    while low < high:  # sum(min(length, cap)) grows with cap: binary search
        middle = (low + high + 1) // 2
        if sum(min(length, middle) for length in lengths) <= target:
            low = middle
        else:
            high = middle - 1
    return low


def _output_text(output: Any) -> str | None:
    if isinstance(output, str):
        return output
    if isinstance(output, dict) or (
        isinstance(output, list) and not any(isinstance(item, BaseModel) for item in output)
    ):
        return json.dumps(output, ensure_ascii=False)
    return None


async def afit_before_request(
    state: AgentState, manager: BaseContextManager, window: int | None, prompt: Sequence[Message]
) -> None:
    """Reduce ``state.context`` before a call when the request would pass ``proactive_at``.

    The request (``prompt``, the summary and the context) is estimated with
    the manager's ``token_counter`` (the character estimate if it has none)
    against ``proactive_at`` of the window; the steps are those of
    ``areduce_on_overflow``, so the provider never has to refuse it first.
    """
    window = manager.context_window or window
    if manager.proactive_at is None or window is None:
        return
    limit = int(window * manager.proactive_at)
    counter = getattr(manager, "token_counter", None)
    if not isinstance(counter, TokenCounter):
        counter = CharEstimateCounter()
    for _ in range(MAX_OVERFLOW_ATTEMPTS):
        if counter.count([*prompt, *messages_for_model(state)]) <= limit:
            return
        if not await areduce_on_overflow(state, manager):
            return


def irreducible_error(
    request: Sequence[Message], attempts: int, cause: ContextWindowExceededError
) -> ContextWindowExceededError:
    """The error raised when reductions cannot make the request fit: it names what is left."""
    tokens = CharEstimateCounter().count(request)
    why = (
        f"reducing the context {attempts} times (the most allowed)"
        if attempts >= MAX_OVERFLOW_ATTEMPTS
        else f"reducing the context {attempts} times; nothing more can be removed"
    )
    return ContextWindowExceededError(
        f"the request still does not fit the model's context window after {why}: what is "
        f"left ({len(request)} messages, the system prompt, question and last exchange "
        f"among them) is about {tokens} tokens (estimated at ~4 characters a token): {cause}",
        status=cause.status,
        provider=cause.provider,
    )
