"""A support desk of three agents, with a person approving refunds; offline.

``triage`` hands the conversation to ``orders``, which looks the order up and
hands over to ``billing``. Billing asks the ``policy`` agent (an agent used
as a tool, in its own context window) and wants to refund: the swarm's
``HumanApproval`` middleware pauses the run until a person decides. The
thread lives in SQLite, so the next message goes to the agent that was
active when the process stopped.

Test models answer from the conversation; swap in ``"gpt-4o"`` or any model
name to run it for real.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

from tenxgraph.core.graph import (
    CompiledGraph,
    HumanApproval,
    agent_tool,
    create_agent,
    create_swarm,
)
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.llm.testing import ModelReply
from tenxgraph.core.state import ToolCallBlock
from tenxgraph.storage.checkpointer import SqliteCheckpointer


def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: delivered damaged"


def refund(order: str, amount: float) -> str:
    """Refund an order."""
    return f"refunded {amount:.2f} for order {order}"


def call(name: str, **args: object) -> ToolCallBlock:
    return ToolCallBlock(id=f"call_{uuid.uuid4().hex[:8]}", name=name, args=args)


def answered(request: ModelRequest, tool: str) -> bool:
    """True once a call of ``tool`` has its result in the request."""
    called = {c.id for m in request.messages for c in m.tool_calls() if c.name == tool}
    return any(r.call_id in called for m in request.messages for r in m.tool_results())


def orders_model(request: ModelRequest) -> ModelReply:
    if not answered(request, "lookup"):
        return call("lookup", order="42")
    return call("transfer_to_billing")


def billing_model(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "user":
        return "Glad to help. Anything else?"
    if not answered(request, "policy"):
        return call("policy", request="Damaged delivery of a 30.00 order: refund how much?")
    if not answered(request, "refund"):
        return call("refund", order="42", amount=30.0)
    return f"Done: {last.text()}."


def build(checkpointer: SqliteCheckpointer) -> CompiledGraph[Any]:
    policy = create_agent(
        ScriptedModel(["A full refund: 30.00."] * 4), name="policy", system_prompt="Refund rules."
    )
    members = [
        create_agent(
            FunctionModel(lambda request: call("transfer_to_orders")),
            name="triage",
            system_prompt="Send the customer to the right desk.",
        ),
        create_agent(FunctionModel(orders_model), [lookup], name="orders"),
        create_agent(
            FunctionModel(billing_model),
            [refund, agent_tool(policy, description="What our refund policy allows.")],
            name="billing",
            system_prompt="You handle money.",
        ),
    ]
    approval = HumanApproval(["refund"], description="Refund this order?")
    return create_swarm(members, middleware=[approval], checkpointer=checkpointer)


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    config = {"thread_id": "customer-7"}
    checkpointer = SqliteCheckpointer(str(folder / "desk.sqlite"))
    app = build(checkpointer)
    paused = app.invoke({"messages": [("user", "Order 42 arrived broken.")]}, config)
    [pending] = paused["interrupt"].value["calls"]
    print("a person is asked:", pending["name"], pending["args"])
    result = app.invoke({"resume": "approve"}, config)
    print("billing:", result["messages"][-1].text())
    checkpointer.close()

    checkpointer = SqliteCheckpointer(str(folder / "desk.sqlite"))  # a later process
    app = build(checkpointer)
    state = app.get_state(config)
    assert state is not None
    print("active agent after a restart:", state.active_agent)
    for message in state.context:
        who = message.metadata.get("agent") or message.role
        print(f"  {who:>8}: {message.text() or message.tool_calls()[0].name}")
    print("policy agent's own messages:", len(state.agent_messages))
    reply = app.invoke({"messages": [("user", "Thanks!")]}, config)["messages"][-1]
    print(f"{reply.metadata['agent']} answers the next message: {reply.text()}")
    checkpointer.close()


if __name__ == "__main__":
    main()
