"""003's middleware: hooks, jump_to, can_jump_to, state_schema, wrap_tool_call."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tenxgraph.core.graph import (
    AgentMiddleware,
    ToolOutcome,
    after_agent,
    after_model,
    before_agent,
    before_model,
    create_agent,
    wrap_model_call,
    wrap_tool_call,
)
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, ToolCallBlock
from tenxgraph.errors import GraphBuildError, NodeError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer


@before_model(can_jump_to=["end"])
def check_question(state: AgentState) -> dict[str, Any] | None:
    """Refuse password questions before the model sees them."""
    if not state.context:
        return None
    if "password" in state.context[-1].text():
        return {
            "jump_to": "end",
            "context": [
                Message.text_message(
                    "Sorry, for security reasons I cannot answer questions about passwords.",
                    role="assistant",
                )
            ],
        }
    return None


def test_before_model_jump_to_end_skips_the_model() -> None:
    model = ScriptedModel(["Start with the official tutorial."])
    checkpointer = InMemoryCheckpointer()
    app = create_agent(model, middleware=[check_question], checkpointer=checkpointer)
    normal = app.invoke(
        {"messages": [Message.text_message("How do I start with Python?")]}, {"thread_id": "a"}
    )
    assert normal["messages"][-1].text() == "Start with the official tutorial."
    blocked = app.invoke(
        {"messages": [Message.text_message("Tell me your system password")]}, {"thread_id": "b"}
    )
    assert "security reasons" in blocked["messages"][-1].text()
    assert len(model.requests) == 1
    stored = checkpointer.get_state({"thread_id": "b"})
    assert stored is not None
    assert "jump_to" not in stored.model_dump_json()


def test_undeclared_jump_is_refused() -> None:
    @after_model
    def sneaky(state: AgentState) -> dict[str, Any]:
        return {"jump_to": "end"}

    app = create_agent(ScriptedModel(["x"]), middleware=[sneaky])
    with pytest.raises(NodeError, match="was not declared in can_jump_to"):
        app.invoke({"messages": [Message.text_message("q")]})


def test_jump_to_tools_needs_tools() -> None:
    @before_model(can_jump_to=["tools"])
    def to_tools(state: AgentState) -> None:
        return None

    with pytest.raises(GraphBuildError, match="can_jump_to 'tools' but the agent has no tools"):
        create_agent(ScriptedModel([]), middleware=[to_tools])


def test_after_model_jump_back_to_model() -> None:
    @after_model(can_jump_to=["model"])
    def insist(state: AgentState) -> dict[str, Any] | None:
        if state.context[-1].text() == "lazy":
            return {"jump_to": "model", "context": [Message.text_message("Try harder.")]}
        return None

    model = ScriptedModel(["lazy", "thorough answer"])
    app = create_agent(model, middleware=[insist])
    result = app.invoke({"messages": [Message.text_message("q")]})
    assert [m.text() for m in result["messages"]] == ["lazy", "Try harder.", "thorough answer"]


class Audit(BaseModel):
    audit: list[str] = []


class Auditor(AgentMiddleware):
    state_schema = Audit

    def before_agent(self, state: Any) -> dict[str, Any]:
        return {"audit": [*state.audit, "start"]}

    def before_model(self, state: Any) -> dict[str, Any]:
        return {"audit": [*state.audit, "model"]}

    def after_agent(self, state: Any, invocation_state: dict[str, Any]) -> dict[str, Any]:
        invocation_state["audited"] = True
        return {"audit": [*state.audit, "end"]}

    async def wrap_tool_call(self, call: ToolCallBlock, handler: Any) -> ToolOutcome:
        if call.name == "forbidden":
            return ToolOutcome("blocked by policy", is_error=True)
        outcome = await handler(call.model_copy(update={"args": {"x": call.args["x"] * 10}}))
        return ToolOutcome(f"[audited] {outcome.output}", outcome.is_error, outcome.update)


def double(x: int) -> int:
    """Double x."""
    return 2 * x


def forbidden() -> str:
    """Never runs."""
    raise AssertionError("the wrapper must block this")


def test_class_middleware_state_schema_hooks_and_tool_wrapping() -> None:
    calls = Message(
        role="assistant",
        content=[
            ToolCallBlock(id="1", name="double", args={"x": 2}),
            ToolCallBlock(id="2", name="forbidden"),
        ],
    )
    model = ScriptedModel([calls, "done"])
    checkpointer = InMemoryCheckpointer()
    app = create_agent(
        model, [double, forbidden], middleware=[Auditor()], checkpointer=checkpointer
    )
    shared: dict[str, Any] = {}
    result = app.invoke(
        {"messages": [Message.text_message("go")]}, {"thread_id": "audit"}, invocation_state=shared
    )
    state = result["state"]
    assert state.audit == ["start", "model", "model", "end"]
    outputs = [m.text() for m in state.context if m.role == "tool"]
    assert outputs == ["[audited] 40", "blocked by policy"]
    assert shared == {"audited": True}
    stored = app.get_state({"thread_id": "audit"})  # the graph reads through its state class
    assert stored is not None
    assert stored.audit == ["start", "model", "model", "end"]


def test_conflicting_middleware_state_fields_are_a_build_error() -> None:
    class Mine(AgentState):
        audit: int = 0

    with pytest.raises(GraphBuildError, match="state field 'audit' is <class 'int'> in Mine"):
        create_agent(ScriptedModel([]), state=Mine, middleware=[Auditor()])


def test_hook_order_before_in_order_after_reversed() -> None:
    order: list[str] = []

    def make(label: str) -> list[AgentMiddleware]:
        @before_agent
        def first(state: AgentState) -> None:
            order.append(f"{label}.before_agent")

        @after_agent
        def last(state: AgentState) -> None:
            order.append(f"{label}.after_agent")

        first.function.__name__ = f"{label}_first"
        last.function.__name__ = f"{label}_last"
        return [first, last]

    app = create_agent(ScriptedModel(["ok"]), middleware=[*make("a"), *make("b")])
    app.invoke({"messages": [Message.text_message("q")]})
    assert order == ["a.before_agent", "b.before_agent", "b.after_agent", "a.after_agent"]


@pytest.mark.parametrize(
    "method", ["before_modle", "wrap_model_request", "before_tool", "after_tool_call", "on_x"]
)
def test_an_unknown_hook_name_is_a_build_error(method: str) -> None:
    def hook(self: Any, state: Any) -> None:
        return None

    typo = type("Typo", (AgentMiddleware,), {method: hook})
    if method == "on_x":  # not hook-like: an ordinary method
        create_agent(ScriptedModel([]), middleware=[typo()])
        return
    with pytest.raises(GraphBuildError) as caught:
        create_agent(ScriptedModel([]), middleware=[typo()])
    message = str(caught.value)
    assert f"middleware 'Typo' defines {method}(), which is not a hook" in message
    assert "before_agent, before_model, after_model, after_agent, wrap_model_call" in message


def test_langchain_async_spellings_point_to_the_hook() -> None:
    class Ported(AgentMiddleware):
        async def awrap_model_call(self, call: Any, handler: Any) -> Any:
            return await handler(call)

    with pytest.raises(
        GraphBuildError,
        match=r"awrap_model_call\(\), which is not a hook "
        r"\(define wrap_model_call itself, as async def\)",
    ):
        create_agent(ScriptedModel([]), middleware=[Ported()])


def test_helper_methods_and_private_hook_like_names_are_allowed() -> None:
    class Helpful(AgentMiddleware):
        def before_model(self, state: Any) -> None:
            self._before_count()

        def _before_count(self) -> None:
            self.count = getattr(self, "count", 0) + 1

        def summarize(self) -> str:
            return "ok"

    helpful = Helpful()
    create_agent(ScriptedModel(["x"]), middleware=[helpful]).invoke(
        {"messages": [Message.text_message("q")]}
    )
    assert helpful.count == 1


def test_wrap_hooks_must_be_async() -> None:
    class SyncWrap(AgentMiddleware):
        def wrap_model_call(self, call: Any, handler: Any) -> Any:  # type: ignore[override]
            return handler(call)

    with pytest.raises(GraphBuildError, match="'SyncWrap': wrap_model_call must be async def"):
        create_agent(ScriptedModel([]), middleware=[SyncWrap()])
    with pytest.raises(GraphBuildError, match="@wrap_tool_call needs an async function"):

        @wrap_tool_call
        def sync_wrap(call: Any, handler: Any) -> Any:
            return handler(call)


def test_two_middleware_with_one_name_are_a_build_error() -> None:
    with pytest.raises(GraphBuildError, match="two middleware are named 'Auditor'"):
        create_agent(ScriptedModel([]), middleware=[Auditor(), Auditor()])

    @wrap_model_call(name="policy")
    async def first(call: Any, handler: Any) -> Any:
        return await handler(call)

    @before_model(name="policy")
    def second(state: Any) -> None:
        return None

    with pytest.raises(GraphBuildError, match="two middleware are named 'policy'"):
        create_agent(ScriptedModel([]), middleware=[first, second])


def test_a_middleware_tool_name_used_twice_is_a_build_error() -> None:
    class Doubler(AgentMiddleware):
        tools = [double]

    with pytest.raises(
        GraphBuildError,
        match="tool name 'double' is used twice: by middleware 'Doubler' and by the agent's tools",
    ):
        create_agent(ScriptedModel([]), [double], middleware=[Doubler()])

    class Other(AgentMiddleware):
        tools = [double]

    with pytest.raises(GraphBuildError, match="by middleware 'Other' and by middleware 'Doubler'"):
        create_agent(ScriptedModel([]), middleware=[Doubler(), Other()])


def test_wrap_tool_call_decorator() -> None:
    @wrap_tool_call(name="tenfold")
    async def tenfold(call: ToolCallBlock, handler: Any) -> ToolOutcome:
        outcome: ToolOutcome = await handler(call)
        return ToolOutcome(outcome.output * 10)

    model = ScriptedModel([ToolCallBlock(id="1", name="double", args={"x": 2}), "done"])
    result = create_agent(model, [double], middleware=[tenfold]).invoke(
        {"messages": [Message.text_message("go")]}
    )
    assert result["messages"][1].text() == "40"
