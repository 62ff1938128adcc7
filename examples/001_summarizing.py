"""Context management, strategy 2: summarizing with SummaryContextManager.

First built with provider model names ("gemini-2.0-flash" summarizes, "gpt-4o"
answers; neither is contacted unless called), then run offline with test models.
Run: python examples/001_summarizing.py
"""

from tenxgraph.core import Agent, StateGraph
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import Message, SummaryContextManager
from tenxgraph.storage.checkpointer import InMemoryCheckpointer

context_manager = SummaryContextManager(
    model="gemini-2.0-flash",
    max_messages=30,  # summarize when > 30 messages
    token_budget=8000,  # or when > 8000 est. tokens
    keep_recent=8,  # preserve the last 8 messages
    remove_tool_msgs=False,
)

agent = Agent(
    model="gpt-4o",
    trim_context=True,  # enable summarization
)

graph = StateGraph(context_manager=context_manager)
graph.add_node("main", agent)
graph.set_entry_point("main")
app = graph.compile()
print("built:", context_manager)


# Offline: a summarizer that lists the user's words, and an agent that shows what it saw.
def summarize(request: ModelRequest) -> str:
    transcript = request.messages[-1].text()
    said = [line[5:].strip() for line in transcript.splitlines() if line.startswith("User:")]
    return "Earlier the user said: " + "; ".join(said)


def answer(request: ModelRequest) -> str:
    roles = ["summary" if m.metadata.get("context_summary") else m.role for m in request.messages]
    return f"I was sent: {', '.join(roles)}"


graph = StateGraph(
    context_manager=SummaryContextManager(
        model=FunctionModel(summarize), max_messages=6, keep_recent=2
    )
)
graph.add_node("main", Agent(model=FunctionModel(answer), trim_context=True))
graph.set_entry_point("main")
app = graph.compile(InMemoryCheckpointer())
config = {"thread_id": "summary"}
for fact in ["my name is Ada", "I live in Lyon", "I like tea", "I play chess", "what do you know?"]:
    result = app.invoke({"messages": [Message.text_message(fact)]}, config)
    print(f"user: {fact!r:22} -> {result['messages'][-1].text()}")
state = app.get_state(config)
print("context_summary:", state.context_summary)
print("kept verbatim:", len(state.context), "messages")
assert state.context_summary and "Ada" in state.context_summary
