"""Strands' invocation state, in tenxgraph: per-invoke data for tools and hooks.

Run: python examples/004_invocation_state.py
"""

from typing import Any

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message, ToolCallBlock


def whoami(invocation_state: dict[str, Any]) -> str:
    """Return the user id carried in the invocation state."""
    user_id = invocation_state.get("user_id", "unknown")
    invocation_state["answered"] = True  # shared by reference
    return f"Current user: {user_id}"


model = ScriptedModel(
    [Message(role="assistant", content=[ToolCallBlock(id="w", name="whoami")]), "You are u-1."]
)
agent = create_agent(model, [whoami])
result = agent.invoke(
    {"messages": [Message.text_message("Who am I?")]},
    invocation_state={"request_id": "r-42", "user_id": "u-1"},
)
print(result["invocation_state"])  # never persisted, never shown to the model
