"""wrap_model_call middleware as LangChain v1 users write it: prompts, fallbacks, retries."""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.graph import (
    AgentMiddleware,
    MessageEvent,
    ModelCall,
    UpdateEvent,
    create_agent,
    wrap_model_call,
)
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import Message, ToolCallBlock
from tenxgraph.errors import ModelError, ServerError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer

Handler = Any  # ModelCallHandler; kept loose as users' own code would


def ask(text: str) -> dict[str, Any]:
    return {"messages": [Message.text_message(text)]}


def deltas_and_answers(events: list[Any]) -> tuple[str, list[str]]:
    """The streamed text, and the complete messages the agent node added."""
    streamed = "".join(
        e.message.text() for e in events if isinstance(e, MessageEvent) and e.message.delta
    )
    complete = [
        e.message.text() for e in events if isinstance(e, MessageEvent) and not e.message.delta
    ]
    return streamed, complete


class ExpertiseLevel(AgentMiddleware):
    """A dynamic system prompt: the user's expertise comes with each invocation."""

    async def wrap_model_call(self, call: ModelCall, handler: Handler) -> Message:
        level = call.invocation_state.get("expertise", "beginner")
        prompt = f"{call.system_prompt} The reader is a {level}."
        return await handler(call.override(system_prompt=prompt))


def test_dynamic_system_prompt_from_invocation_state() -> None:
    model = ScriptedModel(["Use a list.", "Use collections.deque."])
    app = create_agent(model, system_prompt="You teach Python.", middleware=[ExpertiseLevel()])
    app.invoke(ask("How do I keep a queue?"))
    app.invoke(ask("How do I keep a queue?"), invocation_state={"expertise": "specialist"})
    prompts = [request.messages[0] for request in model.requests]
    assert [p.role for p in prompts] == ["system", "system"]
    assert [p.text() for p in prompts] == [
        "You teach Python. The reader is a beginner.",
        "You teach Python. The reader is a specialist.",
    ]


def test_decorated_prompt_reads_the_state_and_is_not_stored() -> None:
    @wrap_model_call
    async def count_turns(call: ModelCall, handler: Handler) -> Message:
        turns = sum(1 for m in call.state.context if m.role == "user")
        return await handler(call.override(system_prompt=f"This is turn {turns}."))

    model = ScriptedModel(["one", "two"])
    checkpointer = InMemoryCheckpointer()
    app = create_agent(model, middleware=[count_turns], checkpointer=checkpointer)
    config = {"thread_id": "turns"}
    app.invoke(ask("hi"), config)
    app.invoke(ask("again"), config)
    assert [r.messages[0].text() for r in model.requests] == ["This is turn 1.", "This is turn 2."]
    stored = app.get_state(config)
    assert stored is not None
    assert [m.role for m in stored.context] == ["user", "assistant", "user", "assistant"]


class Fallback(AgentMiddleware):
    """Model fallback: when the primary model fails, the same call goes to the next one."""

    def __init__(self, *models: Any) -> None:
        self.models = models

    async def wrap_model_call(self, call: ModelCall, handler: Handler) -> Message:
        try:
            return await handler(call)
        except ModelError:
            for model in self.models:
                try:
                    return await handler(call.override(model=model))
                except ModelError:
                    continue
            raise


def test_model_fallback_answers_when_the_primary_fails_and_its_deltas_stream() -> None:
    primary = ScriptedModel([ServerError("primary is down", status=503)])
    broken = ScriptedModel([ModelError("also down")])
    backup = ScriptedModel(["The backup model answers."])
    app = create_agent(primary, middleware=[Fallback(broken, backup)])
    events = list(app.stream(ask("hello?")))
    streamed, complete = deltas_and_answers(events)
    assert streamed == "The backup model answers."
    assert complete == ["The backup model answers."]
    assert [len(m.requests) for m in (primary, broken, backup)] == [1, 1, 1]
    assert backup.requests[0].messages == primary.requests[0].messages
    result = events[-1].as_dict()
    assert [m.text() for m in result["messages"]] == ["The backup model answers."]


def test_fallback_that_runs_out_raises_the_primary_error() -> None:
    backup = ScriptedModel([ModelError("backup down too")])
    app = create_agent(
        ScriptedModel([ServerError("primary down", status=500)]), middleware=[Fallback(backup)]
    )
    with pytest.raises(ServerError, match="primary down"):
        app.invoke(ask("hello?"))
    backup.assert_consumed()


def test_routing_to_a_larger_model_for_long_conversations() -> None:
    small = FunctionModel(lambda request: "small", model="small")
    large = FunctionModel(lambda request: "large", model="large")

    @wrap_model_call
    async def route(call: ModelCall, handler: Handler) -> Message:
        long = len(call.state.context) > 2
        return await handler(call.override(model=large) if long else call)

    app = create_agent(small, middleware=[route], checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "route"}
    answers = [app.invoke(ask(f"q{i}"), config)["messages"][-1].text() for i in range(3)]
    assert answers == ["small", "large", "large"]
    assert (len(small.requests), len(large.requests)) == (1, 2)


def search(query: str) -> str:
    """Search the documents."""
    return f"found {query}"


def delete_everything() -> str:
    """Delete every document."""
    raise AssertionError("the filter must hide this tool")


class AdminToolsOnly(AgentMiddleware):
    """Per-request tool filtering: only admins see destructive tools."""

    async def wrap_model_call(self, call: ModelCall, handler: Handler) -> Message:
        if call.invocation_state.get("role") != "admin":
            call = call.override(tools=[t for t in call.tools if not t.name.startswith("delete")])
        return await handler(call)


def test_tool_filtering_per_request() -> None:
    def reply(request: ModelRequest) -> str | ToolCallBlock:
        if any(m.role == "tool" for m in request.messages):
            return "done"
        return ToolCallBlock(id="s", name="search", args={"query": "report"})

    model = FunctionModel(reply)
    app = create_agent(model, [search, delete_everything], middleware=[AdminToolsOnly()])
    result = app.invoke(ask("find the report"), invocation_state={"role": "user"})
    assert result["messages"][1].text() == "found report"
    assert [[t.name for t in r.tools] for r in model.requests] == [["search"], ["search"]]
    app.invoke(ask("find the report"), invocation_state={"role": "admin"})
    assert [t.name for t in model.requests[2].tools] == ["search", "delete_everything"]


class Retry(AgentMiddleware):
    """Retries: call the handler again on a transient error, and on an empty answer."""

    def __init__(self, attempts: int) -> None:
        self.attempts = attempts

    async def wrap_model_call(self, call: ModelCall, handler: Handler) -> Message:
        for attempt in range(1, self.attempts + 1):
            try:
                answer: Message = await handler(call)
            except ServerError:
                if attempt == self.attempts:
                    raise
                continue
            if answer.text().strip() or answer.tool_calls() or attempt == self.attempts:
                return answer
        raise AssertionError("unreachable")


def test_retry_middleware_calls_the_handler_again() -> None:
    model = ScriptedModel([ServerError("busy", status=503), ServerError("busy", status=503), "ok"])
    app = create_agent(model, middleware=[Retry(3)])
    assert app.invoke(ask("q"))["messages"][-1].text() == "ok"
    model.assert_consumed()

    exhausted = ScriptedModel([ServerError("busy", status=503)] * 2)
    with pytest.raises(ServerError, match="busy"):
        create_agent(exhausted, middleware=[Retry(2)]).invoke(ask("q"))


def test_deltas_of_a_discarded_attempt_were_streamed_and_the_kept_answer_is_complete() -> None:
    # documented: deltas go out live; the complete message is the answer that counts
    model = ScriptedModel([" ", "second try"])
    events = list(create_agent(model, middleware=[Retry(2)]).stream(ask("q")))
    streamed, complete = deltas_and_answers(events)
    assert streamed == " second try"
    assert complete == ["second try"]
    attempts = [e.message.message_id for e in events if isinstance(e, MessageEvent)]
    assert len(set(attempts[:-1])) == 2  # each attempt's deltas carry their own id


def test_first_middleware_is_outermost() -> None:
    order: list[str] = []

    def tracer(label: str) -> AgentMiddleware:
        @wrap_model_call(name=label)
        async def trace(call: ModelCall, handler: Handler) -> Message:
            order.append(f"{label} in")
            answer: Message = await handler(call)
            order.append(f"{label} out")
            return answer

        return trace

    app = create_agent(ScriptedModel(["x"]), middleware=[tracer("outer"), tracer("inner")])
    app.invoke(ask("q"))
    assert order == ["outer in", "inner in", "inner out", "outer out"]


def test_a_wrapper_may_answer_without_the_model_and_change_the_answer() -> None:
    @wrap_model_call
    async def cached(call: ModelCall, handler: Handler) -> Message:
        if call.messages[-1].text() == "ping":
            return Message.text_message("pong", role="assistant")
        answer: Message = await handler(call)
        return answer.model_copy(update={"metadata": {"checked": True}})

    model = ScriptedModel(["real answer"])
    app = create_agent(model, middleware=[cached])
    assert app.invoke(ask("ping"))["messages"][-1].text() == "pong"
    checked = app.invoke(ask("other"))["messages"][-1]
    assert (checked.text(), checked.metadata) == ("real answer", {"checked": True})
    model.assert_consumed()


def test_a_wrapper_must_return_a_complete_assistant_message() -> None:
    @wrap_model_call
    async def sloppy(call: ModelCall, handler: Handler) -> Any:
        answer = await handler(call)
        return answer.text()

    app = create_agent(ScriptedModel(["x"]), middleware=[sloppy])
    with pytest.raises(ModelError, match=r"sloppy returned str 'x'; it must return a complete"):
        app.invoke(ask("q"))


def test_the_structured_output_correction_goes_through_the_wrappers() -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        value: int

    seen: list[str] = []

    @wrap_model_call
    async def log(call: ModelCall, handler: Handler) -> Message:
        seen.append(call.messages[-1].text().split(":")[0])
        answer: Message = await handler(call)
        return answer

    model = ScriptedModel(["forty-two", '{"value": 42}'])
    result = create_agent(model, middleware=[log], output_schema=Answer).invoke(ask("q"))
    assert result["structured_response"] == Answer(value=42)
    assert seen == ["q", "Your answer did not match the required JSON schema"]


class Memo(AgentMiddleware):
    """A middleware that brings its own tool (and a helper method, which is allowed)."""

    def __init__(self) -> None:
        self.notes: list[str] = []

        def remember(note: str) -> str:
            """Remember a note for later."""
            self.notes.append(note)
            return self.describe()

        self.tools = [remember]

    def describe(self) -> str:
        return f"{len(self.notes)} note(s) kept"


def test_a_middleware_tool_is_offered_and_called() -> None:
    memo = Memo()
    model = ScriptedModel(
        [ToolCallBlock(id="m", name="remember", args={"note": "buy milk"}), "Noted."]
    )
    app = create_agent(model, [search], middleware=[memo])
    result = app.invoke(ask("remember to buy milk"))
    assert memo.notes == ["buy milk"]
    assert [m.text() for m in result["messages"]] == ["", "1 note(s) kept", "Noted."]
    assert [t.name for t in model.requests[0].tools] == ["search", "remember"]


def test_a_middleware_tool_alone_makes_the_tool_loop() -> None:
    memo = Memo()
    model = ScriptedModel([ToolCallBlock(id="m", name="remember", args={"note": "x"}), "ok"])
    create_agent(model, middleware=[memo]).invoke(ask("remember x"))
    assert memo.notes == ["x"]


def test_decorator_name_sets_the_node_names() -> None:
    from tenxgraph.core.graph import before_model

    @before_model(name="trim")
    def drop_nothing(state: Any) -> None:
        return None

    events = list(create_agent(ScriptedModel(["x"]), middleware=[drop_nothing]).stream(ask("q")))
    nodes = [e.node for e in events if isinstance(e, UpdateEvent)]
    assert nodes == ["trim.before_model", "agent"]
