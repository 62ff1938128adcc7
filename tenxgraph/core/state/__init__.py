"""The data model: messages, content blocks, state, reducers and context managers.

No I/O and no provider code lives here.
"""

from tenxgraph.core.state.agent_state import AgentState, ExecMeta, field_reducers
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
from tenxgraph.core.state.pairing import is_paired, pairing_violations, repair_pairing
from tenxgraph.core.state.reducers import (
    add_messages,
    append_items,
    remove_tool_messages,
    replace_messages,
    replace_value,
)
from tenxgraph.core.state.tool_result import ToolResult

__all__ = [
    "MAX_INLINE_BYTES",
    "AgentState",
    "AnnotationBlock",
    "AnnotationRef",
    "AudioBlock",
    "ContentBlock",
    "DataBlock",
    "DocumentBlock",
    "ErrorBlock",
    "ExecMeta",
    "IdGenerator",
    "ImageBlock",
    "MediaRef",
    "Message",
    "MessagesAdapter",
    "ReasoningBlock",
    "RemoteToolCallBlock",
    "TextBlock",
    "TokenUsages",
    "ToolCallBlock",
    "ToolResult",
    "ToolResultBlock",
    "VideoBlock",
    "add_messages",
    "append_items",
    "field_reducers",
    "is_paired",
    "new_message_id",
    "pairing_violations",
    "remove_tool_messages",
    "repair_pairing",
    "replace_messages",
    "replace_value",
]
