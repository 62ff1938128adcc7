"""Context managers: keep ``state.context`` within the model's window.

Trimming (``MessageContextManager``), summarizing (``SummaryContextManager``),
a token budget (``TokenBudgetContextManager``) and a sliding window
(``SlidingWindowContextManager``), plus token counters, overflow recovery,
and the stateless ``trim_messages`` and ``filter_messages`` for code that
manages its own message lists. Every cut keeps tool calls with their results; dropped messages
stay in the thread's message log. The exports are imported on first use
(see ``tenxgraph.utils._lazy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "SUMMARY_MESSAGE_ID",
    "BaseContextManager",
    "CharEstimateCounter",
    "MessageContextManager",
    "SlidingWindowContextManager",
    "SummaryContextManager",
    "TiktokenCounter",
    "TokenBudgetContextManager",
    "TokenCounter",
    "areduce_on_overflow",
    "filter_messages",
    "messages_for_model",
    "render_transcript",
    "summary_message",
    "trim_messages",
    "truncate_largest_tool_results",
]

if TYPE_CHECKING:
    from tenxgraph.core.state.context.base import BaseContextManager
    from tenxgraph.core.state.context.injection import (
        SUMMARY_MESSAGE_ID,
        messages_for_model,
        summary_message,
    )
    from tenxgraph.core.state.context.message_filtering import filter_messages
    from tenxgraph.core.state.context.message_trimming import trim_messages
    from tenxgraph.core.state.context.overflow import (
        areduce_on_overflow,
        truncate_largest_tool_results,
    )
    from tenxgraph.core.state.context.render import render_transcript
    from tenxgraph.core.state.context.sliding_window import SlidingWindowContextManager
    from tenxgraph.core.state.context.summary import DEFAULT_SUMMARY_PROMPT, SummaryContextManager
    from tenxgraph.core.state.context.tiktoken_counter import TiktokenCounter
    from tenxgraph.core.state.context.token_budget import TokenBudgetContextManager
    from tenxgraph.core.state.context.tokens import CharEstimateCounter, TokenCounter
    from tenxgraph.core.state.context.trimming import MessageContextManager
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.core.state.context.base": ("BaseContextManager",),
            "tenxgraph.core.state.context.injection": (
                "SUMMARY_MESSAGE_ID",
                "messages_for_model",
                "summary_message",
            ),
            "tenxgraph.core.state.context.message_filtering": ("filter_messages",),
            "tenxgraph.core.state.context.message_trimming": ("trim_messages",),
            "tenxgraph.core.state.context.overflow": (
                "areduce_on_overflow",
                "truncate_largest_tool_results",
            ),
            "tenxgraph.core.state.context.render": ("render_transcript",),
            "tenxgraph.core.state.context.sliding_window": ("SlidingWindowContextManager",),
            "tenxgraph.core.state.context.summary": (
                "DEFAULT_SUMMARY_PROMPT",
                "SummaryContextManager",
            ),
            "tenxgraph.core.state.context.tiktoken_counter": ("TiktokenCounter",),
            "tenxgraph.core.state.context.token_budget": ("TokenBudgetContextManager",),
            "tenxgraph.core.state.context.tokens": (
                "CharEstimateCounter",
                "TokenCounter",
            ),
            "tenxgraph.core.state.context.trimming": ("MessageContextManager",),
        },
    )
