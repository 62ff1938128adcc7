"""Overflow recovery: shrink a context the model refused as too long for its window.

The Agent calls ``areduce_on_overflow`` when a model call raises
``ContextWindowExceededError``, retries once if it returns True, and raises
if it returns False or the retry overflows too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.context.cuts import (
    count_user_messages,
    keep_from,
    nth_last_user_index,
    replace_context,
)
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ContentBlock, ToolResultBlock
from tenxgraph.errors import ConfigError

if TYPE_CHECKING:
    from tenxgraph.core.state.context.base import BaseContextManager

__all__ = [
    "TRUNCATION_MARKER",
    "areduce_on_overflow",
    "drop_older_half",
    "shrink_tool_results",
    "truncate_largest_tool_results",
]

TRUNCATION_MARKER = "\n[tenxgraph: tool output truncated from {total} characters]"
"""Appended to a shortened tool output, so the model knows it is not seeing all of it."""


async def areduce_on_overflow(state: AgentState, manager: BaseContextManager | None) -> bool:
    """Shrink ``state.context`` after an overflow; True if it shrank, so a retry can help.

    With a manager, its ``areduce_context`` decides; without one only the
    largest tool outputs are shortened (no turn is dropped that the user did
    not ask to drop).
    """
    if manager is not None:
        return await manager.areduce_context(state)
    return shrink_tool_results(state)


def drop_older_half(state: AgentState) -> bool:
    """Keep the most recent half of the user turns (at least one); True if anything went."""
    context = state.context
    keep = max(1, count_user_messages(context) // 2)
    start = nth_last_user_index(context, keep)
    if start is None:
        return False
    return replace_context(state, keep_from(context, start, state.message_index().system_positions))


def shrink_tool_results(state: AgentState) -> bool:
    """Apply ``truncate_largest_tool_results`` to ``state.context``; True if anything shrank."""
    return replace_context(state, truncate_largest_tool_results(state.context))


def truncate_largest_tool_results(
    messages: Sequence[Message], *, keep_ratio: float = 0.5, min_chars: int = 500
) -> list[Message]:
    """Shorten the largest tool outputs first until they total ``keep_ratio`` of their size.

    Every text or JSON output longer than a common cap is cut to that cap,
    with the cap chosen as high as the target allows (never below
    ``min_chars``), so small outputs are left whole. A shortened output is a
    string ending in ``TRUNCATION_MARKER`` and its message gets
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
        marker = TRUNCATION_MARKER.format(total=len(text))
        if len(text) <= cap + len(marker):
            continue
        message = result[i]
        content: list[ContentBlock] = list(message.content)
        content[j] = content[j].model_copy(update={"output": text[:cap] + marker})
        result[i] = message.model_copy(
            update={"content": content, "metadata": {**message.metadata, "truncated": True}}
        )
    return result


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
