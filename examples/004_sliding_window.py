"""Strands' SlidingWindowConversationManager, in tenxgraph.

Run: python examples/004_sliding_window.py
"""

from tenxgraph.core import Agent, StateGraph
from tenxgraph.core.llm import FunctionModel
from tenxgraph.core.state import SlidingWindowContextManager
from tenxgraph.core.state.message import Message
from tenxgraph.storage.checkpointer import InMemoryCheckpointer

# keep the 10 most recent messages; the window never starts on a tool result
context_manager = SlidingWindowContextManager(window_size=10)
model = FunctionModel(lambda request: f"seen {len(request.messages)} messages")
graph = StateGraph(context_manager=context_manager)
graph.add_node("main", Agent(model=model, trim_context=True))
graph.set_entry_point("main")
agent = graph.compile(checkpointer=InMemoryCheckpointer())

config = {"thread_id": "window"}
for turn in range(8):
    result = agent.invoke({"messages": [Message.text_message(f"message {turn}")]}, config)
print(result["messages"][-1].text())
print("messages kept in context:", len(agent.get_state(config).context))
