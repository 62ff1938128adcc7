"""Small builders for conversations used by the context-manager tests."""

from __future__ import annotations

from collections.abc import Sequence

from tenxgraph.core.state import (
    AgentState,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.core.state.message_block import ContentBlock


def user(text: str = "question") -> Message:
    return Message.text_message(text)


def assistant(text: str = "answer") -> Message:
    return Message.text_message(text, role="assistant")


def system(text: str = "be brief") -> Message:
    return Message.text_message(text, role="system")


def calls(*call_ids: str, text: str | None = None, name: str = "lookup") -> Message:
    blocks: list[ContentBlock] = [TextBlock(text=text)] if text else []
    blocks += [ToolCallBlock(id=i, name=name, args={"query": i}) for i in call_ids]
    return Message(role="assistant", content=blocks)


def results(*call_ids: str, output: str = "ok") -> Message:
    return Message.tool_message([ToolResultBlock(call_id=i, output=output) for i in call_ids])


def tool_turn(n: int, *, question: str | None = None) -> list[Message]:
    """A user question answered after one tool call: 4 messages."""
    return [
        user(question or f"question {n}"),
        calls(f"t{n}"),
        results(f"t{n}", output=f"result {n}"),
        assistant(f"answer {n}"),
    ]


def state_of(messages: Sequence[Message]) -> AgentState:
    """A state whose context was built the way the runtime builds it."""
    state = AgentState()
    state.append_messages(messages)
    return state


def ids(messages: Sequence[Message]) -> list[str | int]:
    return [message.message_id for message in messages]


def roles(messages: Sequence[Message]) -> list[str]:
    return [message.role for message in messages]
