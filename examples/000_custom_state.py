"""State and messages: custom state, and updating custom fields from outside the graph.

Run: python examples/000_custom_state.py
"""

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.utils.constants import END, START


# title="state.py"
class MyState(AgentState):
    user_id: str = ""
    session_data: dict = {}
    selected_city: str = ""


# Pass the class (or an instance, to set initial values) to StateGraph.
graph = StateGraph(MyState)
seeded = StateGraph(MyState(user_id="u-42"))
print("seeded initial user_id:", seeded.initial_state.user_id)


# Updating custom fields from outside the graph: the `state` key of the input.
class MyState(AgentState):  # a second, unrelated MyState for this part
    selected_city: str = ""


def reply(state: MyState) -> list[Message]:
    # Read a custom field and append one assistant message to context
    text = f"Selected city: {state.selected_city or 'none'}"
    return [Message.text_message(text, role="assistant")]


graph = StateGraph(MyState)
graph.add_node("REPLY", reply)
graph.add_edge(START, "REPLY")
graph.add_edge("REPLY", END)
app = graph.compile()

result = app.invoke(
    {
        "messages": [Message.text_message("Hi")],
        "state": {"selected_city": "Paris"},  # merged into MyState
    },
    config={"thread_id": "demo"},
)
print(result["messages"][-1].text())  # Selected city: Paris
assert result["state"].selected_city == "Paris"
