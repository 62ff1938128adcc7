"""LangGraph's add_messages, in tenxgraph: merging, replace by id, remove by id.

LangGraph's reducer replaces a message whose id already exists; in tenxgraph a
re-sent id is skipped (re-sending is harmless), and changes are explicit edits.

Run: python examples/003_messages_reducer.py
"""

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import (
    REMOVE_ALL_MESSAGES,
    AgentState,
    Message,
    RemoveMessage,
    ReplaceMessage,
    add_messages,
)

existing = [
    Message.text_message("Hello", message_id="1"),
    Message.text_message("Hi!", role="assistant", message_id="2"),
]
new_msg = Message.text_message("How can I help you?", role="assistant", message_id="3")
result = add_messages(existing, [new_msg])
print(f"Before merging: {len(existing)} messages")
print(f"After merging: {len(result)} messages")
for msg in result:
    print(f"  [{msg.role}] {msg.text()}")


def edit(state: AgentState) -> list[object]:
    """Replace message 2, remove message 1, add one: explicit edits, applied in order."""
    return [
        ReplaceMessage(Message.text_message("Hello there!", role="assistant", message_id="2")),
        RemoveMessage("1"),
        Message.text_message("Anything else?", role="assistant", message_id="4"),
    ]


graph = StateGraph(AgentState)
graph.add_node("edit", edit)
graph.set_entry_point("edit")
state = graph.compile().invoke({"messages": result})["state"]
print("after edits:", [m.text() for m in state.context])
assert [m.message_id for m in state.context] == ["2", "3", "4"]

clear = StateGraph(AgentState)
clear.add_node("clear", lambda s: [RemoveMessage(REMOVE_ALL_MESSAGES)])
clear.set_entry_point("clear")
print("after remove-all:", clear.compile().invoke({"messages": result})["state"].context)
