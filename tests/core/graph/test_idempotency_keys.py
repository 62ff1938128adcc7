"""Every tool call gets an idempotency key: one per call, the same each time that call starts.

The crash re-run (a process killed between the tool's return and the save
of its result) is in ``test_idempotency_kill.py``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from tenxgraph.core.graph import (
    RemoteTool,
    StateGraph,
    Tool,
    ToolNode,
    ToolOutcome,
    create_agent,
    pending_remote_calls,
    remote_tool_result,
    wrap_tool_call,
)
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, ToolCallBlock
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer, ThreadWrite
from tests.storage.conftest import MakeCheckpointer

KEY_SHAPE = re.compile(r"[0-9a-f]{32}")


class Payments:
    """Records the key of every call of its ``charge`` tool, in call order."""

    def __init__(self, failures: int = 0) -> None:
        self.keys: list[str] = []
        self.failures = failures

    def charge(self, amount: int, idempotency_key: str) -> str:
        """Charge the customer.

        Args:
            amount: In cents.
        """
        self.keys.append(idempotency_key)
        if self.failures:
            self.failures -= 1
            raise ConnectionError("payments API unreachable")
        return f"charged {amount}"


def call(call_id: str, amount: int = 100) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name="charge", args={"amount": amount})


@wrap_tool_call
async def retry_once(call: ToolCallBlock, handler: Any) -> ToolOutcome:
    """Call the tool again when it fails, with a changed copy of the call the second time."""
    outcome = await handler(call)
    if outcome.is_error:
        outcome = await handler(call.model_copy(update={"id": "changed-by-the-wrapper"}))
    return outcome


def test_the_key_is_injected_and_not_shown_to_the_model() -> None:
    payments = Payments()
    spec = Tool(payments.charge).spec()
    assert list(spec.parameters["properties"]) == ["amount"]
    app = create_agent(ScriptedModel([call("c1"), "done"]), [payments.charge])
    result = app.invoke({"messages": [("user", "pay")]})
    assert result["messages"][1].tool_results()[0].output == "charged 100"
    [key] = payments.keys
    assert KEY_SHAPE.fullmatch(key)


async def test_a_retrying_wrapper_gets_the_same_key(make_checkpointer: MakeCheckpointer) -> None:
    payments = Payments(failures=1)
    app = create_agent(
        ScriptedModel([call("c1"), "done"]),
        [payments.charge],
        middleware=[retry_once],
        checkpointer=make_checkpointer(),
    )
    result = await app.ainvoke({"messages": [("user", "pay")]}, {"thread_id": "retry"})
    [answer] = result["messages"][1].tool_results()
    assert (answer.output, answer.is_error) == ("charged 100", False)
    first, second = payments.keys
    assert KEY_SHAPE.fullmatch(first)
    assert second == first


async def test_calls_threads_and_turns_get_different_keys(
    make_checkpointer: MakeCheckpointer,
) -> None:
    """Two calls of one message, one call id in two threads, and again in a later turn."""
    payments = Payments()
    checkpointer = make_checkpointer()

    def app() -> Any:
        script = [Message(role="assistant", content=[call("c1"), call("c2", 200)]), "done"]
        return create_agent(ScriptedModel(script), [payments.charge], checkpointer=checkpointer)

    for thread in ("one", "two", "one"):  # the same call ids each time
        await app().ainvoke({"messages": [("user", "pay")]}, {"thread_id": thread})
    assert len(payments.keys) == 6
    assert len(set(payments.keys)) == 6


def _charging_thread(payments: Payments, checkpointer: Checkpointer) -> Any:
    """A graph whose ToolNode runs the calls a thread ends with (then ends)."""
    graph = StateGraph(AgentState)
    graph.add_node("tools", ToolNode([payments.charge]))
    graph.set_entry_point("tools")
    return graph.compile(checkpointer)


CONVERSATION = [
    Message.text_message("pay", message_id="m1"),
    Message(role="assistant", content=[call("c1")], message_id="m2"),
]


async def test_a_thread_deleted_and_created_anew_gets_new_keys(
    make_checkpointer: MakeCheckpointer,
) -> None:
    """Same ids, messages and call: only the thread's incarnation differs."""
    payments = Payments()
    checkpointer = make_checkpointer()
    app = _charging_thread(payments, checkpointer)
    config = {"thread_id": "again", "user_id": "ana"}
    for _ in range(2):
        await app.acreate_thread(config, CONVERSATION)
        result = await app.ainvoke(None, config)
        assert result["messages"][0].tool_results()[0].output == "charged 100"
        assert await checkpointer.adelete_thread(ThreadKey("again", "ana"))
    first, second = payments.keys
    assert second != first


def test_direct_calls_get_a_key_each() -> None:
    payments = Payments()
    app = create_agent(ScriptedModel([]), [payments.charge], checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "direct"}
    app.call_tool("charge", {"amount": 5}, config)
    app.call_tool("charge", {"amount": 5}, config, record=False)
    create_agent(ScriptedModel([]), [payments.charge]).call_tool("charge", {"amount": 5}, None)
    assert len(payments.keys) == 3
    assert all(KEY_SHAPE.fullmatch(key) for key in payments.keys)
    assert len(set(payments.keys)) == 3


async def test_remote_calls_carry_their_key_in_every_pause() -> None:
    """A partial answer pauses again: the call still pending keeps its key."""
    locate = RemoteTool("locate", "The user's location.")
    calls = [ToolCallBlock(id=i, name="locate", args={}) for i in ("r1", "r2")]
    model = ScriptedModel([Message(role="assistant", content=calls), "done"])
    app = create_agent(model, [locate], checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "remote"}
    paused = await app.ainvoke({"messages": [("user", "where?")]}, config)
    keys = {e["call"]["id"]: e["idempotency_key"] for e in paused["interrupt"].value["calls"]}
    assert all(KEY_SHAPE.fullmatch(key) for key in keys.values())
    assert keys["r1"] != keys["r2"]
    pending = pending_remote_calls(await app.aget_state(config))
    assert {p.call.id: p.idempotency_key for p in pending} == keys

    answer = {"tool_results": [remote_tool_result("r1", "Paris")]}
    again = await app.ainvoke({"resume": answer}, config)
    [entry] = again["interrupt"].value["calls"]
    assert (entry["call"]["id"], entry["idempotency_key"]) == ("r2", keys["r2"])


async def test_a_pause_saved_before_keys_existed_gets_them_when_it_pauses_again() -> None:
    locate = RemoteTool("locate", "The user's location.")
    calls = [ToolCallBlock(id=i, name="locate", args={}) for i in ("r1", "r2")]
    checkpointer = InMemoryCheckpointer()
    model = ScriptedModel([Message(role="assistant", content=calls), "done"])
    app = create_agent(model, [locate], checkpointer=checkpointer)
    config = {"thread_id": "old-pause"}
    paused = await app.ainvoke({"messages": [("user", "where?")]}, config)
    keys = {e["call"]["id"]: e["idempotency_key"] for e in paused["interrupt"].value["calls"]}

    key = ThreadKey("old-pause")
    stored = await checkpointer.aload(key)
    assert stored is not None
    values = copy.deepcopy(stored.values)
    for entry in values["execution_meta"]["interrupt_value"]["calls"]:
        del entry["idempotency_key"]
    write = ThreadWrite(
        stored.version, [], values, stored.window, "tools", 0,
        expected_incarnation=stored.incarnation,
    )  # fmt: skip
    await checkpointer.asave(key, write)
    old = pending_remote_calls(await app.aget_state(config))
    assert [p.idempotency_key for p in old] == [None, None]

    answer = {"tool_results": [remote_tool_result("r1", "Paris")]}
    again = await app.ainvoke({"resume": answer}, config)
    [entry] = again["interrupt"].value["calls"]
    assert (entry["call"]["id"], entry["idempotency_key"]) == ("r2", keys["r2"])
