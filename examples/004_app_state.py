"""Strands' agent state, in tenxgraph: state.app_state, a JSON key-value store.

Run: python examples/004_app_state.py
"""

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, AppState, Message, ToolCallBlock
from tenxgraph.storage.checkpointer import InMemoryCheckpointer

# Basic usage
state = AppState({"user_preferences": {"theme": "dark"}, "session_count": 0})
print(state.get("user_preferences"))  # {'theme': 'dark'}
state.set("last_action", "login")
state.set("session_count", 1)
print(state.get())  # all data as a dictionary
state.delete("last_action")

# Validation: only JSON values
for value in ("hello", 42, True, [1, 2, 3], {"nested": "data"}, None):
    state.set("value", value)
try:
    state.set("function", lambda x: x)
except ValueError as e:
    print(f"Error: {e}")


# Using app state in tools: it persists with the thread and never reaches the model
def track_user_action(action: str, state: AgentState) -> str:
    """Track user actions in app state.

    Args:
        action: The action to track
    """
    action_count = state.app_state.get("action_count") or 0
    state.app_state.set("action_count", action_count + 1)
    state.app_state.set("last_action", action)
    return f"Action '{action}' recorded. Total actions: {action_count + 1}"


def get_user_stats(state: AgentState) -> str:
    """Get user statistics from app state."""
    action_count = state.app_state.get("action_count") or 0
    last_action = state.app_state.get("last_action") or "none"
    return f"Actions performed: {action_count}, Last action: {last_action}"


def call(action: str) -> Message:
    block = ToolCallBlock(id=action, name="track_user_action", args={"action": action})
    return Message(role="assistant", content=[block])


model = ScriptedModel([call("login"), "Tracked.", call("view profile"), "Tracked."])
agent = create_agent(
    model, [track_user_action, get_user_stats], checkpointer=InMemoryCheckpointer()
)
config = {"thread_id": "actions"}
agent.invoke({"messages": [Message.text_message("Track that I logged in")]}, config)
agent.invoke({"messages": [Message.text_message("Track that I viewed my profile")]}, config)
saved = agent.get_state(config).app_state
print(f"Actions taken: {saved.get('action_count')}")
print(f"Last action: {saved.get('last_action')}")
