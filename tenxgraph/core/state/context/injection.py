"""Put ``context_summary`` in front of the retained context when building a model request."""

from __future__ import annotations

from collections.abc import Sequence

from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message

__all__ = ["SUMMARY_MESSAGE_ID", "messages_for_model", "summary_message"]

SUMMARY_MESSAGE_ID = "context_summary"
"""Message id of the injected summary; it is built per request and never stored."""


def summary_message(summary: str) -> Message:
    """The assistant message that carries ``summary`` into a model request."""
    return Message.text_message(
        f"Summary of the earlier conversation:\n{summary}",
        role="assistant",
        message_id=SUMMARY_MESSAGE_ID,
        metadata={"context_summary": True},
    )


def messages_for_model(state: AgentState, system: str | Sequence[Message] = ()) -> list[Message]:
    """The messages a model call sends: system prompt, then the summary, then the context.

    ``system`` is the Agent's system prompt (a string or system messages).
    The summary, when there is one, goes after the system messages that
    open the context, as an assistant message, so the model reads
    ``[system prompt] [summary of earlier exchanges] [retained context]``.
    """
    prompt = (
        [Message.text_message(system, role="system")] if isinstance(system, str) else list(system)
    )
    context = state.context
    if not state.context_summary:
        return [*prompt, *context]
    lead = 0
    while lead < len(context) and context[lead].role == "system":
        lead += 1
    return [*prompt, *context[:lead], summary_message(state.context_summary), *context[lead:]]
