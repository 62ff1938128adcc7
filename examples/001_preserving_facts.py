"""Context management: preserving facts across trimming in custom state fields.

Run: python examples/001_preserving_facts.py
"""

from tenxgraph.core import Agent, StateGraph
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import AgentState, Message, MessageContextManager
from tenxgraph.storage.checkpointer import InMemoryCheckpointer


class CustomState(AgentState):
    user_profile: str  # Static facts about the user
    decisions_made: list[str]  # Extracted decisions


context_manager = MessageContextManager(max_messages=10)


async def extract_decision(state: CustomState) -> CustomState:
    # After the model's response, extract and store the decision
    last_msg = state.context[-1]
    if "decided" in last_msg.text():
        state.decisions_made.append(last_msg.text())
    return state


# Wire it after an Agent. The fields have no defaults, so the graph gets an
# instance holding their initial values.
def decide(request: ModelRequest) -> str:
    return f"We decided: {request.messages[-1].text()}"


graph = StateGraph(
    CustomState(user_profile="Prefers trains", decisions_made=[]),
    context_manager=MessageContextManager(max_messages=1),
)
graph.add_node("main", Agent(model=FunctionModel(decide), trim_context=True))
graph.add_node("extract", extract_decision)
graph.set_entry_point("main")
graph.add_edge("main", "extract")
app = graph.compile(InMemoryCheckpointer())
config = {"thread_id": "facts"}
for choice in ["go to Rome", "leave on Friday", "book a sleeper"]:
    app.invoke({"messages": [Message.text_message(choice)]}, config)
state = app.get_state(config)
print("context after trimming:", [m.text() for m in state.context])
print("user_profile:", state.user_profile)
print("decisions_made:", state.decisions_made)
assert len(state.decisions_made) == 3  # all three survive, though the context kept one turn
