"""A long conversation kept short for the model by a rolling summary.

Forty turns on one SQLite thread. SummaryContextManager folds older turns
into ``context_summary`` whenever the context passes 12 messages, keeping
the last 4 verbatim; the model then receives [system, summary, recent
turns]. The stored log keeps every message; only the window moves. The
summarizer here is a FunctionModel that keeps the facts (lines with "my");
use any ChatModel (or a model name) in real code.
Run: python examples/long_summarized_conversation.py
"""

import asyncio
import tempfile
from pathlib import Path

from tenxgraph.core.graph import Agent, StateGraph
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import AgentState, Message, SummaryContextManager, ThreadKey
from tenxgraph.storage.checkpointer import SqliteCheckpointer


def summarize(request: ModelRequest) -> str:
    """List the 'my ...' facts of the new messages; it is appended to the summary so far."""
    text = request.messages[-1].text().split("Messages that followed:")[-1]
    facts = [line.strip("- ") for line in text.splitlines() if " my " in f" {line.lower()} "]
    return "\n".join(dict.fromkeys(f"- {fact.removeprefix('User: ')}" for fact in facts))


seen_sizes: list[int] = []


def reply(request: ModelRequest) -> str:
    seen_sizes.append(len(request.messages))
    summary = next((m for m in request.messages if m.metadata.get("context_summary")), None)
    known = summary.text().count("\n- ") if summary else 0
    return f"Noted. (I see {len(request.messages)} messages; the summary holds {known} facts.)"


manager = SummaryContextManager(FunctionModel(summarize), max_messages=12, keep_recent=4)
graph = StateGraph(AgentState, context_manager=manager)
graph.add_node("chat", Agent(FunctionModel(reply), system_prompt="Be brief.", trim_context=True))
graph.set_entry_point("chat")
path = Path(tempfile.mkdtemp()) / "long.sqlite"
checkpointer = SqliteCheckpointer(path)
app = graph.compile(checkpointer)
config = {"thread_id": "long"}

for turn in range(1, 41):
    text = f"my fact number {turn} is {turn * turn}" if turn % 4 == 0 else f"small talk {turn}"
    result = app.invoke({"messages": [Message.text_message(text)]}, config)
    if turn % 10 == 0:
        state = result["state"]
        log = asyncio.run(checkpointer.alist_messages(ThreadKey("long")))
        print(
            f"turn {turn}: log {len(log)} messages, window {len(state.context)}, "
            f"summary {len(state.context_summary or '')} chars; last reply: "
            f"{result['messages'][-1].text()}"
        )

state = app.get_state(config)
print("summary now:\n" + (state.context_summary or ""))
assert max(seen_sizes) <= 14  # the model never saw more than system + summary + 12
assert "my fact number 4 is 16" in (state.context_summary or "")  # an early fact survived
