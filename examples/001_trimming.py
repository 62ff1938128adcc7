"""Context management, strategy 1: trimming with MessageContextManager.

First built with a provider model name (gemini-2.5-flash is only contacted when
called), then run offline with a FunctionModel that reports what it was sent.
Run: python examples/001_trimming.py
"""

from tenxgraph.core import Agent, StateGraph
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import Message, MessageContextManager
from tenxgraph.storage.checkpointer import InMemoryCheckpointer

context_manager = MessageContextManager(
    max_messages=10,  # keep the last 10 user messages
    remove_tool_msgs=False,  # keep tool calls and results
)

agent = Agent(
    model="gemini-2.5-flash",
    trim_context=True,  # enable trimming for this Agent
)

graph = StateGraph(context_manager=context_manager)
graph.add_node("main", agent)
graph.set_entry_point("main")
app = graph.compile()
print("built:", context_manager)


# Offline: the same setup with a model that answers with the number of user turns it saw.
def count_turns(request: ModelRequest) -> str:
    return f"I can see {sum(m.role == 'user' for m in request.messages)} user turns"


graph = StateGraph(context_manager=MessageContextManager(max_messages=3))
graph.add_node("main", Agent(model=FunctionModel(count_turns), trim_context=True))
graph.set_entry_point("main")
app = graph.compile(InMemoryCheckpointer())
config = {"thread_id": "trim"}
for n in range(1, 6):
    result = app.invoke({"messages": [Message.text_message(f"turn {n}")]}, config)
    print(f"turn {n}: {result['messages'][-1].text()}")
state = app.get_state(config)
print("persisted context:", [m.text() for m in state.context if m.role == "user"])
assert [m.text() for m in state.context if m.role == "user"] == ["turn 3", "turn 4", "turn 5"]
