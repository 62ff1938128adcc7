"""A handoff by a Command from a node of your own: the swarm as a subgraph, active_agent kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tenxgraph.core.graph import Command, StateGraph, create_agent, create_swarm
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, ToolCallBlock, is_paired
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.utils.constants import END, START


class Desk(AgentState):
    active_agent: str | None = None


def triage(state: Desk) -> Command:
    """Route the first message by a rule; the swarm takes it from there."""
    asked = state.context[-1].text().lower()
    target = "billing" if "refund" in asked else "orders"
    return Command(goto="agents", update={"active_agent": target})


def _desk(path: Path, orders: ScriptedModel, billing: ScriptedModel) -> Any:
    swarm = create_swarm(
        [create_agent(orders, name="orders"), create_agent(billing, name="billing")]
    )
    graph = StateGraph(Desk)
    graph.add_node("triage", triage, ends=["agents"])
    graph.add_node("agents", swarm)
    graph.add_conditional_edges(
        START, lambda s: "agents" if s.active_agent else "triage", ["triage", "agents"]
    )
    graph.add_edge("agents", END)
    return graph.compile(SqliteCheckpointer(path / "desk.db"))


def test_a_command_hands_over_and_the_active_agent_survives_a_new_process(
    tmp_path: Path,
) -> None:
    orders = ScriptedModel(["Order 42 shipped."])
    billing = ScriptedModel(["Refund sent.", ToolCallBlock(id="h1", name="transfer_to_orders")])
    app = _desk(tmp_path, orders, billing)
    config = {"thread_id": "desk"}
    result = app.invoke({"messages": [("user", "I want a refund")]}, config)
    assert result["messages"][-1].metadata["agent"] == "billing"
    assert result["state"].active_agent == "billing"
    app.checkpointer.close()

    reopened = _desk(tmp_path, orders, billing)  # as a new process would
    assert reopened.get_state(config).active_agent == "billing"
    result = reopened.invoke({"messages": [("user", "And my order?")]}, config)
    assert result["state"].active_agent == "orders"  # billing handed over by its tool
    state = reopened.get_state(config)
    assert [(m.role, m.metadata.get("agent"), m.text()) for m in state.context] == [
        ("user", None, "I want a refund"),
        ("assistant", "billing", "Refund sent."),
        ("user", None, "And my order?"),
        ("assistant", "billing", ""),
        ("tool", None, "transferred to orders"),
        ("assistant", "orders", "Order 42 shipped."),
    ]
    assert is_paired(state.context)
    assert [m.text() for m in billing.requests[1].messages][-1] == "And my order?"
    reopened.checkpointer.close()
