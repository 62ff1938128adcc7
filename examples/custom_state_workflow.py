"""A workflow over custom state: reducers, routing on state, Command, and a human approval.

An expense request goes through plain function nodes (no model): classify it,
route on the amount, ask a human to approve large ones with ``interrupt``,
then record the outcome. State is saved in SQLite, so the paused run resumes
later, even from another process.
Run: python examples/custom_state_workflow.py
"""

import tempfile
from pathlib import Path
from typing import Annotated

from tenxgraph.core.graph import Command, StateGraph, interrupt
from tenxgraph.core.state import AgentState, Message, append_items
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.utils.constants import END


class Expense(AgentState):
    amount: float = 0.0
    """Parsed from the request."""
    category: str = ""
    audit: Annotated[list[str], append_items] = []
    """Every node adds a line; the reducer appends instead of replacing."""
    approved: bool | None = None


def classify(state: Expense) -> dict:
    words = state.context[-1].text().split()
    amount = float(next(w.strip("$") for w in words if w.strip("$").replace(".", "").isdigit()))
    category = "travel" if "train" in words or "flight" in words else "other"
    return {"amount": amount, "category": category, "audit": [f"classified {category} ${amount}"]}


def route(state: Expense) -> str:
    return "review" if state.amount > 100 else "auto_approve"


def review(state: Expense) -> Command:
    answer = interrupt({"question": f"Approve ${state.amount} for {state.category}?"})
    approved = answer == "yes"
    return Command(goto="record", update={"approved": approved, "audit": [f"human said {answer}"]})


def auto_approve(state: Expense) -> dict:
    return {"approved": True, "audit": ["auto-approved (<= $100)"]}


def record(state: Expense) -> list[Message]:
    verdict = "approved" if state.approved else "rejected"
    return [Message.text_message(f"Expense of ${state.amount} {verdict}.", role="assistant")]


def build(path: Path):
    graph = StateGraph(Expense)
    graph.add_node("classify", classify)
    graph.add_node("review", review, ends=["record"])
    graph.add_node("auto_approve", auto_approve)
    graph.add_node("record", record)
    graph.set_entry_point("classify")
    graph.add_conditional_edges("classify", route, ["review", "auto_approve"])
    graph.add_edge("auto_approve", "record")
    graph.add_edge("record", END)
    return graph.compile(SqliteCheckpointer(path))


path = Path(tempfile.mkdtemp()) / "expenses.sqlite"
app = build(path)

small = app.invoke({"messages": [Message.text_message("Lunch $12")]}, {"thread_id": "e1"})
print(small["messages"][-1].text(), "| audit:", small["state"].audit)

config = {"thread_id": "e2"}
paused = app.invoke({"messages": [Message.text_message("train ticket $240")]}, config)
print("paused:", paused["interrupt"].value)

# Later, with a new graph and checkpointer on the same file (as another process would):
resumed = build(path).invoke({"resume": "yes"}, config)
print(resumed["messages"][-1].text(), "| audit:", resumed["state"].audit)
assert resumed["state"].approved is True
assert resumed["state"].audit == ["classified travel $240.0", "human said yes"]
