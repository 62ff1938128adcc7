"""Strands' direct tool calls, in tenxgraph: call_tool, recorded or not.

Run: python examples/004_direct_tool_calls.py
"""

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.storage.checkpointer import InMemoryCheckpointer

notebooks: dict[str, str] = {}


def notebook(mode: str, name: str = "", new_str: str = "") -> str:
    """A tiny notebook tool.

    Args:
        mode: "create" or "list".
        name: Notebook name.
        new_str: Initial text.
    """
    if mode == "create":
        notebooks[name] = new_str
        return f"created {name}"
    return ", ".join(notebooks) or "no notebooks"


agent = create_agent(ScriptedModel([]), [notebook], checkpointer=InMemoryCheckpointer())
config = {"thread_id": "notes"}

# Direct tool call with recording (default behavior)
agent.call_tool(
    "notebook", {"mode": "create", "name": "ideas", "new_str": "# Project ideas"}, config
)
recorded = len(agent.get_state(config).context)

# Direct tool call without recording
print(agent.call_tool("notebook", {"mode": "list"}, config, record=False).output)

messages = agent.get_state(config).context
print([(m.role, [b.type for b in m.content]) for m in messages])
assert recorded > 0
assert len(messages) == recorded
