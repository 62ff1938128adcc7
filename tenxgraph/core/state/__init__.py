"""The data model: messages, content blocks, state, reducers, context managers and thread ids.

No I/O and no provider code lives here. The exports are imported on first
use (see ``tenxgraph.utils._lazy``): ``from tenxgraph.core.state import
Message`` loads the message model, not the context managers or ``asyncio``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "DEFAULT_USER",
    "MAX_ID_LENGTH",
    "MAX_INLINE_BYTES",
    "REMOVE_ALL_MESSAGES",
    "ROLE_ALIASES",
    "AgentState",
    "AnnotationBlock",
    "AnnotationRef",
    "AppState",
    "AudioBlock",
    "BaseContextManager",
    "CharEstimateCounter",
    "ContentBlock",
    "DataBlock",
    "DocumentBlock",
    "ErrorBlock",
    "ExecMeta",
    "IdGenerator",
    "ImageBlock",
    "MediaRef",
    "Message",
    "MessageContextManager",
    "MessageEdit",
    "MessageLike",
    "MessagesAdapter",
    "ReasoningBlock",
    "RemoteToolCallBlock",
    "RemoveMessage",
    "ReplaceMessage",
    "SlidingWindowContextManager",
    "SummaryContextManager",
    "TextBlock",
    "ThreadKey",
    "TiktokenCounter",
    "TokenBudgetContextManager",
    "TokenCounter",
    "TokenUsages",
    "ToolCallBlock",
    "ToolResult",
    "ToolResultBlock",
    "VideoBlock",
    "add_messages",
    "append_items",
    "areduce_on_overflow",
    "as_message",
    "as_messages",
    "check_id",
    "field_reducers",
    "filter_messages",
    "from_langchain_message",
    "is_paired",
    "messages_for_model",
    "new_message_id",
    "pairing_violations",
    "remove_tool_messages",
    "repair_pairing",
    "replace_messages",
    "replace_value",
    "run_config",
    "summary_message",
    "to_langchain_message",
    "trim_messages",
    "truncate_largest_tool_results",
]

if TYPE_CHECKING:
    from tenxgraph.core.state.agent_state import AgentState, ExecMeta, field_reducers
    from tenxgraph.core.state.app_state import AppState
    from tenxgraph.core.state.context.base import BaseContextManager
    from tenxgraph.core.state.context.injection import messages_for_model, summary_message
    from tenxgraph.core.state.context.message_filtering import filter_messages
    from tenxgraph.core.state.context.message_trimming import trim_messages
    from tenxgraph.core.state.context.overflow import (
        areduce_on_overflow,
        truncate_largest_tool_results,
    )
    from tenxgraph.core.state.context.sliding_window import SlidingWindowContextManager
    from tenxgraph.core.state.context.summary import DEFAULT_SUMMARY_PROMPT, SummaryContextManager
    from tenxgraph.core.state.context.tiktoken_counter import TiktokenCounter
    from tenxgraph.core.state.context.token_budget import TokenBudgetContextManager
    from tenxgraph.core.state.context.tokens import CharEstimateCounter, TokenCounter
    from tenxgraph.core.state.context.trimming import MessageContextManager
    from tenxgraph.core.state.edits import (
        REMOVE_ALL_MESSAGES,
        MessageEdit,
        RemoveMessage,
        ReplaceMessage,
    )
    from tenxgraph.core.state.ids import (
        DEFAULT_USER,
        MAX_ID_LENGTH,
        ThreadKey,
        check_id,
        run_config,
    )
    from tenxgraph.core.state.langchain_format import (
        from_langchain_message,
        to_langchain_message,
    )
    from tenxgraph.core.state.message import (
        MAX_INLINE_BYTES,
        IdGenerator,
        Message,
        MessagesAdapter,
        TokenUsages,
        new_message_id,
    )
    from tenxgraph.core.state.message_block import (
        AnnotationBlock,
        AnnotationRef,
        AudioBlock,
        ContentBlock,
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
    from tenxgraph.core.state.message_input import (
        ROLE_ALIASES,
        MessageLike,
        as_message,
        as_messages,
    )
    from tenxgraph.core.state.pairing import is_paired, pairing_violations, repair_pairing
    from tenxgraph.core.state.reducers import (
        add_messages,
        append_items,
        remove_tool_messages,
        replace_messages,
        replace_value,
    )
    from tenxgraph.core.state.tool_result import ToolResult
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.core.state.agent_state": (
                "AgentState",
                "ExecMeta",
                "field_reducers",
            ),
            "tenxgraph.core.state.app_state": ("AppState",),
            "tenxgraph.core.state.context.base": ("BaseContextManager",),
            "tenxgraph.core.state.context.injection": (
                "messages_for_model",
                "summary_message",
            ),
            "tenxgraph.core.state.context.message_filtering": ("filter_messages",),
            "tenxgraph.core.state.context.message_trimming": ("trim_messages",),
            "tenxgraph.core.state.context.overflow": (
                "areduce_on_overflow",
                "truncate_largest_tool_results",
            ),
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
            "tenxgraph.core.state.edits": (
                "REMOVE_ALL_MESSAGES",
                "MessageEdit",
                "RemoveMessage",
                "ReplaceMessage",
            ),
            "tenxgraph.core.state.ids": (
                "DEFAULT_USER",
                "MAX_ID_LENGTH",
                "ThreadKey",
                "check_id",
                "run_config",
            ),
            "tenxgraph.core.state.langchain_format": (
                "from_langchain_message",
                "to_langchain_message",
            ),
            "tenxgraph.core.state.message": (
                "MAX_INLINE_BYTES",
                "IdGenerator",
                "Message",
                "MessagesAdapter",
                "TokenUsages",
                "new_message_id",
            ),
            "tenxgraph.core.state.message_block": (
                "AnnotationBlock",
                "AnnotationRef",
                "AudioBlock",
                "ContentBlock",
                "DataBlock",
                "DocumentBlock",
                "ErrorBlock",
                "ImageBlock",
                "MediaRef",
                "ReasoningBlock",
                "RemoteToolCallBlock",
                "TextBlock",
                "ToolCallBlock",
                "ToolResultBlock",
                "VideoBlock",
            ),
            "tenxgraph.core.state.message_input": (
                "ROLE_ALIASES",
                "MessageLike",
                "as_message",
                "as_messages",
            ),
            "tenxgraph.core.state.pairing": (
                "is_paired",
                "pairing_violations",
                "repair_pairing",
            ),
            "tenxgraph.core.state.reducers": (
                "add_messages",
                "append_items",
                "remove_tool_messages",
                "replace_messages",
                "replace_value",
            ),
            "tenxgraph.core.state.tool_result": ("ToolResult",),
        },
    )
