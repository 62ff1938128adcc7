"""OpenTelemetry spans of a run (``core/graph/_tracing.py``), read back from the SDK's exporter.

Each test sets a real SDK tracer provider for its own duration (``tests/tracing.py``).
"""

from __future__ import annotations

import asyncio
import operator
import sys
from typing import Annotated, Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from tenxgraph.core.graph import Agent, StateGraph, create_agent
from tenxgraph.core.graph._tracing import CONTENT_ENV, tracer
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, MessageContextManager, ToolCallBlock
from tenxgraph.errors import ContextWindowExceededError
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.utils.constants import START
from tests.tracing import Spans, spans_fixture  # noqa: F401 - the fixture

SECRET = "sk-the-key-of-this-test"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def broken(city: str) -> str:
    """Always fails."""
    raise RuntimeError(f"no weather for {city}")


def _agent(*tools: Any, answers: list[Any]) -> Any:
    model = ScriptedModel(answers, model="gpt-test", provider="openai")
    model.api_key = SECRET  # type: ignore[attr-defined]  # a key the trace must never show
    return create_agent(model, list(tools), checkpointer=InMemoryCheckpointer())


def _texts(spans: Spans) -> str:
    return repr([(s.name, dict(s.attributes or {}), s.events) for s in spans.all()])


def test_an_agent_with_a_tool_is_one_trace_run_nodes_model_and_tool_calls(spans: Spans) -> None:
    call = ToolCallBlock(id="call-1", name="add", args={"a": 2, "b": 3})
    app = _agent(add, answers=[call, "5"])
    app.invoke({"messages": [Message.text_message("2+3?")]}, {"thread_id": "t1"})

    run = spans.one("invoke_agent graph")
    assert run.parent is None
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.conversation.id"] == "t1"
    assert run.attributes["tenxgraph.run.status"] == "completed"
    names = [span.name for span in spans.children(run)]
    assert names[:2] == ["tenxgraph.lease", "tenxgraph.save"]  # the lease, then the input
    assert [n for n in names if n.startswith("node")] == ["node agent", "node tools", "node agent"]
    assert len({span.context.trace_id for span in spans.all() if span.context}) == 1

    first_agent = next(s for s in spans.children(run) if s.name == "node agent")
    chat = spans.children(first_agent)[0]
    assert chat.name == "chat gpt-test" and chat.kind is SpanKind.CLIENT
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-test"
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attributes["gen_ai.usage.input_tokens"] > 0
    assert attributes["gen_ai.usage.output_tokens"] > 0

    tools = spans.one("node tools")
    tool = next(s for s in spans.children(tools) if s.name == "execute_tool add")
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.name"] == "add"
    assert tool.attributes["gen_ai.tool.call.id"] == "call-1"
    assert tool.status.status_code is StatusCode.UNSET
    # content is off by default, and no key is ever recorded
    assert "2+3?" not in _texts(spans) and "gen_ai.input.messages" not in _texts(spans)
    assert SECRET not in _texts(spans)


def test_content_is_recorded_on_opt_in_by_the_config_or_the_env(
    spans: Spans, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = ToolCallBlock(id="call-1", name="add", args={"a": 2, "b": 3})
    app = _agent(add, answers=[call, "5"])
    config = {"thread_id": "t1", "trace_content": True}
    app.invoke({"messages": [Message.text_message("2+3?")]}, config)
    chat = spans.named("chat gpt-test")[0]
    assert chat.attributes is not None
    assert "2+3?" in str(chat.attributes["gen_ai.input.messages"])
    assert '"tool_call"' in str(chat.attributes["gen_ai.output.messages"])
    tool = spans.one("execute_tool add")
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"a": 2, "b": 3}'
    assert tool.attributes["gen_ai.tool.call.result"] == "5"
    assert SECRET not in _texts(spans)

    spans.exporter.clear()
    monkeypatch.setenv(CONTENT_ENV, "true")
    app = _agent(add, answers=["hello"])
    app.invoke({"messages": [Message.text_message("hi there")]}, {"thread_id": "t2"})
    assert "hi there" in _texts(spans)
    spans.exporter.clear()  # the config's word wins over the environment's
    app = _agent(add, answers=["hello"])
    config = {"thread_id": "t3", "trace_content": False}
    app.invoke({"messages": [Message.text_message("hi there")]}, config)
    assert "hi there" not in _texts(spans)


def test_a_failed_tool_is_an_error_span_and_the_run_goes_on(spans: Spans) -> None:
    call = ToolCallBlock(id="call-9", name="broken", args={"city": "Oslo"})
    app = _agent(broken, answers=[call, "sorry"])
    app.invoke({"messages": [Message.text_message("weather?")]}, {"thread_id": "t"})
    tool = spans.one("execute_tool broken")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes is not None and tool.attributes["error.type"] == "tool_error"
    assert "no weather for Oslo" in (tool.status.description or "")
    run = spans.one("invoke_agent graph")
    assert run.status.status_code is StatusCode.UNSET


def test_a_failed_node_marks_its_span_and_the_run(spans: Spans) -> None:
    def fails(state: AgentState) -> dict[str, Any]:
        raise ValueError("bad input")

    graph = StateGraph(AgentState)
    graph.add_node("fails", fails)
    graph.add_edge(START, "fails")
    with pytest.raises(Exception, match="bad input"):
        graph.compile().invoke({"messages": [Message.text_message("x")]})
    node = spans.one("node fails")
    assert node.status.status_code is StatusCode.ERROR
    assert node.attributes is not None and node.attributes["error.type"] == "ValueError"
    run = spans.one("invoke_agent graph")
    assert run.status.status_code is StatusCode.ERROR
    assert spans.children(run) == [node]


class Notes(AgentState):
    notes: Annotated[list[str], operator.add] = []


def test_a_parallel_step_has_a_span_per_task_under_the_steps(spans: Spans) -> None:
    def note(text: str) -> Any:
        async def node(state: Notes) -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"notes": [text]}

        return node

    graph = StateGraph(Notes)
    for name in ("a", "b", "c"):
        graph.add_node(name, note(name))
        graph.add_edge(START, name)
    app = graph.compile(checkpointer=InMemoryCheckpointer())
    assert app.invoke({}, {"thread_id": "p"})["state"].notes == ["a", "b", "c"]
    step = spans.one("parallel step")
    tasks = [span for span in spans.children(step) if span.name.startswith("node")]
    assert sorted(span.name for span in tasks) == ["node a", "node b", "node c"]
    assert step.parent is not None
    assert step.parent.span_id == spans.one("invoke_agent graph").context.span_id


def test_a_streamed_run_read_from_sync_code_keeps_its_tree(spans: Spans) -> None:
    """``stream`` reads each event in a new task: the spans nest by the run, not by the reader."""
    app = _agent(add, answers=[ToolCallBlock(id="c", name="add", args={"a": 1, "b": 1}), "2"])
    outer = trace.get_tracer("test").start_span("the caller's request")
    with trace.use_span(outer, end_on_exit=True):
        events = list(app.stream({"messages": [Message.text_message("1+1")]}, {"thread_id": "s"}))
    assert events
    run = spans.one("invoke_agent graph")
    assert run.parent is not None and run.parent.span_id == outer.get_span_context().span_id
    for chat in spans.named("chat gpt-test"):
        assert chat.parent is not None
        parent = next(s for s in spans.all() if s.context.span_id == chat.parent.span_id)
        assert parent.name == "node agent"
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left current after the run


def test_user_code_in_a_tool_sees_the_tool_span_as_current(spans: Spans) -> None:
    seen: list[str] = []

    async def lookup(term: str) -> str:
        """Look a term up."""
        with trace.get_tracer("user").start_as_current_span("user work"):
            seen.append(term)
        return "found"

    app = _agent(lookup, answers=[ToolCallBlock(id="c", name="lookup", args={"term": "x"}), "ok"])
    app.invoke({"messages": [Message.text_message("look x up")]}, {"thread_id": "u"})
    work = spans.one("user work")
    assert work.parent is not None
    assert work.parent.span_id == spans.one("execute_tool lookup").context.span_id


def test_without_a_tracer_provider_nothing_is_traced_or_imported() -> None:
    assert tracer() is None  # the API's proxy provider: no SDK set
    code = (
        "import sys; from tenxgraph.core.graph import create_agent; "
        "from tenxgraph.core.llm import ScriptedModel; "
        "create_agent(ScriptedModel(['hi'])).invoke({'messages': [{'role': 'user', "
        "'content': [{'type': 'text', 'text': 'hi'}]}]}); "
        "print('opentelemetry' in sys.modules)"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "False"


def test_trims_and_an_overflow_recovery_are_events_on_the_agents_span(spans: Spans) -> None:
    model = ScriptedModel([ContextWindowExceededError("too long"), "fits now"])
    graph = StateGraph(AgentState, context_manager=MessageContextManager(max_messages=4))
    graph.add_node("main", Agent(model=model, trim_context=True))
    graph.set_entry_point("main")
    seed = [
        Message.text_message(f"turn {i}", role="user" if i % 2 == 0 else "assistant")
        for i in range(21)
    ]
    graph.compile().invoke({"messages": seed})
    events = {event.name: dict(event.attributes or {}) for event in spans.one("node main").events}
    trim = events["tenxgraph.context.trim"]
    assert trim["tenxgraph.context.messages_before"] == 21
    assert trim["tenxgraph.context.messages_after"] == 7  # the last 4 user turns
    overflow = events["tenxgraph.context.overflow"]
    assert (
        overflow["tenxgraph.context.messages_after"] < overflow["tenxgraph.context.messages_before"]
    )
    chats = spans.named("chat scripted")
    assert [chat.status.status_code for chat in chats] == [StatusCode.ERROR, StatusCode.UNSET]
    assert dict(chats[0].attributes or {})["error.type"] == "ContextWindowExceededError"


def test_an_agent_called_as_a_tool_is_a_run_under_the_tool_call(spans: Spans) -> None:
    inner = _agent(answers=["inner answer"])

    async def ask_expert(question: str) -> str:
        """Ask the expert agent."""
        result = await inner.ainvoke(
            {"messages": [Message.text_message(question)]}, {"thread_id": "in"}
        )
        return str(result["messages"][-1].text())

    call = ToolCallBlock(id="c", name="ask_expert", args={"question": "why?"})
    outer = _agent(ask_expert, answers=[call, "done"])
    outer.invoke({"messages": [Message.text_message("ask")]}, {"thread_id": "out"})
    runs = spans.named("invoke_agent graph")
    assert len(runs) == 2
    tool = spans.one("execute_tool ask_expert")
    nested = next(run for run in runs if run.parent is not None)
    assert nested.parent is not None and nested.parent.span_id == tool.context.span_id
    # the inner run's saves nest under its own run and steps, not under the outer tool call
    assert all(
        save.parent.span_id != tool.context.span_id for save in spans.named("tenxgraph.save")
    )


def test_a_reader_that_leaves_early_ends_the_spans_without_an_error(spans: Spans) -> None:
    async def leave_early() -> None:
        app = _agent(answers=["a long answer of many words"])
        stream = app.astream({"messages": [Message.text_message("hi")]}, {"thread_id": "t"})
        async for _ in stream:
            break
        await stream.aclose()

    asyncio.run(leave_early())
    run = spans.one("invoke_agent graph")
    assert run.status.status_code is StatusCode.UNSET
    node = spans.one("node agent")
    assert node.status.status_code is StatusCode.UNSET
    assert dict(node.attributes or {})["tenxgraph.cancelled"] is True


def test_a_run_refused_before_it_starts_still_ends_its_span(spans: Spans) -> None:
    app = _agent(answers=["x"])
    with pytest.raises(Exception, match="thread_id"):
        app.invoke({"messages": [Message.text_message("hi")]})  # a checkpointer needs a thread
    run = spans.one("invoke_agent graph")
    assert run.status.status_code is StatusCode.ERROR
    assert dict(run.attributes or {})["tenxgraph.run.status"] == "error"


def test_a_subgraphs_run_nests_under_its_parents_node(spans: Spans) -> None:
    call = ToolCallBlock(id="call-1", name="add", args={"a": 1, "b": 2})
    model = ScriptedModel([call, "3"], model="gpt-test", provider="openai")
    inner = create_agent(model, [add], name="adder")
    outer = StateGraph(AgentState)
    outer.add_node("helper", inner)
    outer.add_edge(START, "helper")
    app = outer.compile(InMemoryCheckpointer())
    app.invoke({"messages": [Message.text_message("1+2?")]}, {"thread_id": "t-sub"})

    parent = spans.one("invoke_agent graph")  # an unnamed graph
    helper = spans.one("node helper")
    assert helper.parent is not None and helper.parent.span_id == parent.context.span_id
    (nested,) = spans.children(helper)
    assert nested.name == "invoke_agent adder"  # the inner agent's run says whose it is
    assert dict(nested.attributes or {})["gen_ai.agent.name"] == "adder"
    assert [s.name for s in spans.children(nested)] == ["node agent", "node tools", "node agent"]
    assert len({span.context.trace_id for span in spans.all() if span.context}) == 1
    # the agent's name (create_agent(name=...)) is on its steps' spans
    for step in spans.named("node agent"):
        assert step.attributes is not None and step.attributes["gen_ai.agent.name"] == "adder"
        assert spans.children(step)[0].name == "chat gpt-test"
    tool = spans.one("execute_tool add")
    assert tool.parent is not None
    (owner,) = [s for s in spans.all() if s.context.span_id == tool.parent.span_id]
    assert owner.name == "node tools"


def test_an_unnamed_agent_sets_no_agent_name_on_its_steps(spans: Spans) -> None:
    app = _agent(answers=["hi"])
    app.invoke({"messages": [Message.text_message("hello")]}, {"thread_id": "t-unnamed"})
    step = spans.one("node agent")
    assert step.attributes is not None and "gen_ai.agent.name" not in step.attributes


def test_a_remote_tools_round_trip_lands_under_the_step_that_paused_for_it(spans: Spans) -> None:
    from tenxgraph.core.graph import RemoteTool, remote_tool_result

    schema = {"type": "object", "properties": {}}
    locate = RemoteTool("get_location", "The user's location.", schema, timeout=30)
    call = ToolCallBlock(id="r1", name="get_location", args={})
    model = ScriptedModel([call, "Sunny where you are."], model="gpt-test", provider="openai")
    app = create_agent(model, [locate], checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "t-remote"}
    app.invoke({"messages": [Message.text_message("Weather here?")]}, config)
    paused = spans.one("node tools")
    assert [event.name for event in paused.events] == ["tenxgraph.interrupt"]

    resume = {"tool_results": [remote_tool_result("r1", {"lat": 48.85}, is_error=False)]}
    app.invoke({"resume": resume}, config)

    trip = next(s for s in spans.named("execute_tool get_location"))
    attributes = dict(trip.attributes or {})
    assert attributes["tenxgraph.tool.remote"] is True
    assert attributes["gen_ai.tool.call.id"] == "r1"
    assert trip.parent is not None and trip.parent.span_id == paused.context.span_id
    assert trip.context.trace_id == paused.context.trace_id  # the first run's trace
    assert trip.start_time is not None and paused.start_time is not None
    assert paused.start_time <= trip.start_time <= (paused.end_time or 0)
    assert trip.status.status_code is not StatusCode.ERROR
