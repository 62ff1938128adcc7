"""State and messages: keep context within the model window.

The graph is first built with a provider model name ("gemini-2.5-flash", which
is only contacted when called), then run offline with a ScriptedModel.
Run: python examples/000_keep_context_within_window.py
"""

from tenxgraph.core import Agent
from tenxgraph.core.graph import StateGraph
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, MessageContextManager
from tenxgraph.storage.checkpointer import InMemoryCheckpointer

# Keep the first message and the most recent 10 user turns
graph = StateGraph(AgentState, context_manager=MessageContextManager(max_messages=10))
graph.add_node("MAIN", Agent(model="gemini-2.5-flash", trim_context=True))
graph.set_entry_point("MAIN")
graph.compile()
print("built with gemini-2.5-flash (not called)")

# The same graph, run offline: 12 turns, trimmed to the last 10 user turns.
# keep_first=True is the opt-in for "keep the first message" (see docs/context-management.md).
offline = StateGraph(
    AgentState, context_manager=MessageContextManager(max_messages=10, keep_first=True)
)
model = ScriptedModel([f"answer {n}" for n in range(12)])
offline.add_node("MAIN", Agent(model=model, trim_context=True))
offline.set_entry_point("MAIN")
app = offline.compile(InMemoryCheckpointer())  # the thread lives on between invokes

for n in range(12):
    app.invoke({"messages": [Message.text_message(f"question {n}")]}, {"thread_id": "t"})
users = [m.text() for m in model.requests[-1].messages if m.role == "user"]
print("the last call saw user turns:", users[0], "+", users[1], "...", users[-1])
assert users[0] == "question 0" and len(users) == 11  # the first one kept, plus 10 recent
