from __future__ import annotations

import asyncio
import threading
import time
from typing import Annotated, Any

import pytest

from tenxgraph.core.graph import (
    Command,
    ErrorEvent,
    InterruptEvent,
    MessageEvent,
    RunResult,
    StateGraph,
    UpdateEvent,
    interrupt,
)
from tenxgraph.core.state import AgentState, Message, append_items
from tenxgraph.errors import (
    GraphBuildError,
    NodeError,
    RecursionLimitError,
    StateError,
    UsageError,
)
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.utils import END, START


class MyState(AgentState):
    selected_city: str = ""


def say(text: str) -> Any:
    def node(state: AgentState) -> list[Message]:
        return [Message.text_message(text, role="assistant")]

    node.__name__ = f"say_{text}"
    return node


def test_spec_custom_state_example_runs_as_written() -> None:
    def reply(state: MyState) -> list[Message]:
        text = f"Selected city: {state.selected_city or 'none'}"
        return [Message.text_message(text, role="assistant")]

    graph = StateGraph(MyState)
    graph.add_node("REPLY", reply)
    graph.add_edge(START, "REPLY")
    graph.add_edge("REPLY", END)
    app = graph.compile()

    result = app.invoke(
        {"messages": [Message.text_message("Hi")], "state": {"selected_city": "Paris"}},
        config={"thread_id": "demo"},
    )
    assert [m.text() for m in result["messages"]] == ["Selected city: Paris"]
    state = result["state"]
    assert isinstance(state, MyState)
    assert [m.text() for m in state.context] == ["Hi", "Selected city: Paris"]
    assert state.execution_meta.status == "completed"
    assert state.execution_meta.current_node == "REPLY"


def test_without_checkpointer_every_invoke_starts_fresh() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("a", say("x"))
    graph.set_entry_point("a")
    app = graph.compile()
    first = app.invoke({"messages": [Message.text_message("1")]}, {"thread_id": "t"})
    second = app.invoke({"messages": [Message.text_message("2")]}, {"thread_id": "t"})
    assert len(first["state"].context) == 2
    assert [m.text() for m in second["state"].context] == ["2", "x"]


def test_checkpointer_restores_thread_and_keeps_custom_fields() -> None:
    checkpointer = InMemoryCheckpointer()
    graph = StateGraph(MyState)
    graph.add_node("a", say("reply"))
    graph.set_entry_point("a")
    app = graph.compile(checkpointer=checkpointer)
    config = {"thread_id": "t1"}
    app.invoke(
        {"messages": [Message.text_message("one")], "state": {"selected_city": "Oslo"}}, config
    )
    result = app.invoke({"messages": [Message.text_message("two")]}, config)
    assert [m.text() for m in result["state"].context] == ["one", "reply", "two", "reply"]
    saved = checkpointer.get_state(config, MyState)  # a checkpointer knows no graph's class
    assert isinstance(saved, MyState)
    assert saved.selected_city == "Oslo"
    assert [m.text() for m in saved.context] == ["one", "reply", "two", "reply"]
    assert app.get_state({"thread_id": "other"}) is None


def test_node_return_kinds_merge() -> None:
    class Tagged(AgentState):
        tags: Annotated[list[str], append_items] = []
        note: str = ""

    def one_message(state: Tagged) -> Message:
        return Message.text_message("m", role="assistant")

    def partial(state: Tagged) -> dict[str, Any]:
        return {"tags": ["a"], "note": "n1"}

    def whole_object(state: Tagged) -> Tagged:
        return Tagged(tags=["b"], note="n2")

    def mutate(state: Tagged) -> Tagged:
        state.note = "n3"
        state.context.append(Message.text_message("direct", role="assistant"))
        return state

    async def async_node(state: Tagged) -> None:
        await asyncio.sleep(0)

    graph = StateGraph(Tagged)
    for fn in (one_message, partial, whole_object, mutate, async_node):
        graph.add_node(fn)
    graph.set_entry_point("one_message")
    graph.add_edge("one_message", "partial")
    graph.add_edge("partial", "whole_object")
    graph.add_edge("whole_object", "mutate")
    graph.add_edge("mutate", "async_node")
    result = graph.compile().invoke({"messages": [Message.text_message("q")]})
    state = result["state"]
    assert state.tags == ["a", "b"]
    assert state.note == "n3"
    assert [m.text() for m in result["messages"]] == ["m", "direct"]


def test_messages_appended_in_place_and_returned_are_all_kept() -> None:
    """A node that appends to state.context and also returns messages: both are added
    (streamed, in result['messages'], and saved), in the order they entered the context."""

    def both(state: AgentState) -> list[Message]:
        state.context.append(Message.text_message("direct", role="assistant"))
        return [Message.text_message("returned", role="assistant")]

    graph = StateGraph(AgentState)
    graph.add_node(both)
    graph.set_entry_point("both")
    checkpointer = InMemoryCheckpointer()
    config = {"configurable": {"thread_id": "t"}}
    result = graph.compile(checkpointer).invoke({"messages": [Message.text_message("q")]}, config)
    assert [m.text() for m in result["messages"]] == ["direct", "returned"]
    stored = graph.compile(checkpointer).get_state(config).context  # a cold read
    assert [m.text() for m in stored] == ["q", "direct", "returned"]


def test_routing_loop_with_conditional_edges() -> None:
    class Counter(AgentState):
        count: int = 0

    def step(state: Counter) -> dict[str, int]:
        return {"count": state.count + 1}

    def route(state: Counter) -> str:
        return "again" if state.count < 3 else "done"

    graph = StateGraph(Counter)
    graph.add_node("step", step)
    graph.add_node("finish", say("finished"))
    graph.set_entry_point("step")
    graph.add_conditional_edges("step", route, {"again": "step", "done": "finish"})
    result = graph.compile().invoke({})
    assert result["state"].count == 3
    assert result["state"].execution_meta.step == 4


def test_conditional_entry_and_command_routing() -> None:
    def pick(state: AgentState) -> Command:
        return Command(goto="b", update=[Message.text_message("from a", role="assistant")])

    graph = StateGraph(AgentState)
    graph.add_node("a", pick, ends=["b"])
    graph.add_node("b", say("b"))
    graph.add_conditional_edges(START, lambda s: "a", ["a"])
    graph.add_edge("b", END)
    result = graph.compile().invoke({})
    assert [m.text() for m in result["messages"]] == ["from a", "b"]


def test_router_returning_unknown_name_is_named() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("a", say("x"))
    graph.set_entry_point("a")

    def my_router(state: AgentState) -> str:
        return "nowhere"

    graph.add_conditional_edges("a", my_router, {"x": END})
    with pytest.raises(NodeError, match=r"my_router.*'nowhere'"):
        graph.compile().invoke({})


def test_recursion_limit_shows_path() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("ping", lambda s: None)
    graph.add_node("pong", lambda s: None)
    graph.set_entry_point("ping")
    graph.add_edge("ping", "pong")
    graph.add_edge("pong", "ping")
    app = graph.compile(recursion_limit=5)
    with pytest.raises(RecursionLimitError, match="ping -> pong -> ping -> pong -> ping -> pong"):
        app.invoke({})


def test_node_that_raises_emits_error_and_persists_status() -> None:
    checkpointer = InMemoryCheckpointer()

    def boom(state: AgentState) -> None:
        raise ValueError("kaput")

    graph = StateGraph(AgentState)
    graph.add_node("boom", boom)
    graph.set_entry_point("boom")
    app = graph.compile(checkpointer=checkpointer)
    config = {"thread_id": "err"}
    events: list[Any] = []
    with pytest.raises(NodeError, match="node 'boom': raised ValueError: kaput"):
        for event in app.stream({"messages": [Message.text_message("hi")]}, config):
            events.append(event)
    assert isinstance(events[-1], ErrorEvent)
    saved = app.get_state(config)
    assert saved is not None
    assert saved.execution_meta.status == "error"
    assert "kaput" in (saved.execution_meta.error or "")
    assert [m.text() for m in saved.context] == ["hi"]


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (42, "returned int 42"),
        ("text", "returned str 'text'"),
        ({"nope": 1}, "unknown state field"),
    ],
)
def test_bad_node_return_names_node_and_value(returned: Any, expected: str) -> None:
    graph = StateGraph(AgentState)
    graph.add_node("bad", lambda s: returned)
    graph.set_entry_point("bad")
    with pytest.raises(NodeError, match=f"node 'bad'.*{expected}"):
        graph.compile().invoke({})


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"state": {"context": []}}, "cannot set context"),
        ({"state": {"context_summary": "x"}}, "cannot set context_summary"),
        ({"state": {"execution_meta": {}}}, "cannot set execution_meta"),
        ({"state": {"nope": 1}}, "unknown state field"),
        ({"state": {"selected_city": 3}}, "invalid value for field 'selected_city'"),
        ({"messages": 42}, r"'messages': expected a Message, .* or a list of them; got int"),
        ({"mesages": []}, "unknown key"),
        ({"resume": 1}, "nothing to resume"),
    ],
)
def test_bad_input_is_refused_clearly(payload: dict[str, Any], expected: str) -> None:
    graph = StateGraph(MyState)
    graph.add_node("a", say("x"))
    graph.set_entry_point("a")
    with pytest.raises(StateError, match=expected):
        graph.compile().invoke(payload)


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda g: g.add_edge("a", "ghost"), "unknown node 'ghost'"),
        (lambda g: g.add_node("island", say("i")), "island cannot be reached"),
        (lambda g: g.add_conditional_edges("a", lambda s: "x", {"x": "ghost"}), "unknown node"),
    ],
)
def test_build_errors(build: Any, expected: str) -> None:
    graph = StateGraph(AgentState)
    graph.add_node("a", say("a"))
    graph.set_entry_point("a")
    build(graph)
    with pytest.raises(GraphBuildError, match=expected):
        graph.compile()


def test_build_requires_entry_point_and_valid_reducers() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("a", say("a"))
    with pytest.raises(GraphBuildError, match="no entry point"):
        graph.compile()

    class Bad(AgentState):
        items: Annotated[list[int], lambda a, b, c: a] = []

    bad = StateGraph(Bad)
    bad.add_node("a", say("a"))
    bad.set_entry_point("a")
    with pytest.raises(GraphBuildError, match="exactly two arguments"):
        bad.compile()


def test_interrupt_inside_node_and_resume() -> None:
    checkpointer = InMemoryCheckpointer()
    calls: list[Any] = []

    def ask(state: AgentState) -> list[Message]:
        first = interrupt({"question": "name?"})
        second = interrupt("age?")
        calls.append((first, second))
        return [Message.text_message(f"{first} is {second}", role="assistant")]

    graph = StateGraph(AgentState)
    graph.add_node("ask", ask)
    graph.set_entry_point("ask")
    app = graph.compile(checkpointer=checkpointer)
    config = {"thread_id": "hitl"}
    paused = app.invoke({"messages": [Message.text_message("start")]}, config)
    assert paused["interrupt"].value == {"question": "name?"}
    assert paused["state"].is_interrupted()
    with pytest.raises(StateError, match="paused at node 'ask'"):
        app.invoke({"messages": [Message.text_message("ignored")]}, config)
    paused = app.invoke({"resume": "Ada"}, config)
    assert paused["interrupt"].value == "age?"
    done = app.invoke({"resume": 36}, config)
    assert "interrupt" not in done
    assert [m.text() for m in done["messages"]] == ["Ada is 36"]
    assert calls == [("Ada", 36)]
    assert done["state"].execution_meta.status == "completed"


def test_interrupt_before_and_after() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("a", say("a"))
    graph.add_node("b", say("b"))
    graph.set_entry_point("a")
    graph.add_edge("a", "b")
    app = graph.compile(
        checkpointer=InMemoryCheckpointer(), interrupt_before=["b"], interrupt_after=["b"]
    )
    config = {"thread_id": "ba"}
    events = list(app.stream({}, config))
    interrupts = [e for e in events if isinstance(e, InterruptEvent)]
    assert [(i.node, i.when) for i in interrupts] == [("b", "before")]
    after = app.invoke({"resume": None}, config)
    assert after["interrupt"] is not None
    assert [m.text() for m in after["messages"]] == ["b"]
    done = app.invoke({"resume": None}, config)
    assert done["state"].execution_meta.status == "completed"
    assert [m.text() for m in done["state"].context] == ["a", "b"]


def test_interrupt_lists_need_a_checkpointer_to_run_at_the_top() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("a", say("a"))
    graph.set_entry_point("a")
    app = graph.compile(interrupt_before=["a"])  # may still be a subgraph: its parent saves it
    with pytest.raises(UsageError, match="need a checkpointer"):
        app.invoke({"messages": [("user", "hi")]})


def test_stream_yields_fresh_events_in_order() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("a", say("a"))
    graph.add_node("b", say("b"))
    graph.set_entry_point("a")
    graph.add_edge("a", "b")
    events = list(graph.compile().stream({"messages": [Message.text_message("q")]}))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["MessageEvent", "UpdateEvent", "MessageEvent", "UpdateEvent", "RunResult"]
    assert len({id(e) for e in events}) == len(events)
    assert [e.node for e in events if isinstance(e, UpdateEvent)] == ["a", "b"]
    result = events[-1]
    assert isinstance(result, RunResult)
    assert [m.text() for m in result.messages] == ["a", "b"]


async def test_astream_and_ainvoke_share_the_loop() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("a", say("a"))
    graph.set_entry_point("a")
    app = graph.compile()
    events = [e async for e in app.astream({})]
    assert isinstance(events[0], MessageEvent)
    result = await app.ainvoke({})
    assert [m.text() for m in result["messages"]] == ["a"]


async def test_stop_cancels_a_running_async_node() -> None:
    started = asyncio.Event()

    async def slow(state: AgentState) -> None:
        started.set()
        await asyncio.sleep(30)

    graph = StateGraph(AgentState)
    graph.add_node("slow", slow)
    graph.add_node("after", say("never"))
    graph.set_entry_point("slow")
    graph.add_edge("slow", "after")
    checkpointer = InMemoryCheckpointer()
    app = graph.compile(checkpointer=checkpointer)
    config = {"thread_id": "stop"}
    task = asyncio.create_task(app.ainvoke({}, config))
    await started.wait()
    assert app.stop(config)
    result = await asyncio.wait_for(task, 5)
    assert result["state"].execution_meta.status == "stopped"
    assert result["messages"] == []
    saved = await app.aget_state(config)
    assert saved is not None
    assert saved.execution_meta.status == "stopped"
    assert not app.stop(config)


def test_stop_from_another_thread_between_sync_nodes() -> None:
    gate = threading.Event()

    def first(state: AgentState) -> None:
        gate.set()
        time.sleep(0.2)

    graph = StateGraph(AgentState)
    graph.add_node("first", first)
    graph.add_node("second", say("never"))
    graph.set_entry_point("first")
    graph.add_edge("first", "second")
    app = graph.compile()
    config = {"thread_id": "sync-stop"}
    stopper = threading.Thread(target=lambda: gate.wait() and app.stop(config))
    stopper.start()
    result = app.invoke({}, config)
    stopper.join()
    assert result["state"].execution_meta.status == "stopped"
    assert [m.text() for m in result["state"].context] == []


def test_two_graphs_share_nothing_by_default() -> None:
    def build(**options: Any) -> Any:
        graph = StateGraph(AgentState, **options)
        graph.add_node("a", say("x"))
        graph.set_entry_point("a")
        return graph.compile()

    manager = object()
    one = build(context_manager=manager, id_generator=lambda: "fixed")
    two = build()
    assert one.context_manager is manager
    assert two.context_manager is None
    assert two.id_generator is not one.id_generator
    assert two.checkpointer is None


def test_initial_state_instance_seeds_each_thread() -> None:
    graph = StateGraph(MyState(selected_city="Rome"))
    graph.add_node("a", lambda s: {"selected_city": s.selected_city + "!"})
    graph.set_entry_point("a")
    app = graph.compile()
    assert app.invoke({})["state"].selected_city == "Rome!"
    assert app.invoke({})["state"].selected_city == "Rome!"


def test_sync_node_runs_in_worker_thread_under_ainvoke() -> None:
    seen: list[str] = []

    def where(state: AgentState) -> None:
        seen.append(threading.current_thread().name)

    graph = StateGraph(AgentState)
    graph.add_node("where", where)
    graph.set_entry_point("where")
    app = graph.compile()
    asyncio.run(app.ainvoke({}))
    assert seen[0] != threading.main_thread().name


def test_node_asking_for_config_receives_it() -> None:
    def with_config(state: AgentState, config: dict[str, Any]) -> list[Message]:
        return [Message.text_message(config["thread_id"], role="assistant")]

    graph = StateGraph(AgentState)
    graph.add_node("c", with_config)
    graph.set_entry_point("c")
    result = graph.compile().invoke({}, {"thread_id": "tid-7"})
    assert result["messages"][0].text() == "tid-7"


def test_warm_threads_never_miss_another_writer_or_a_mutated_result() -> None:
    checkpointer = InMemoryCheckpointer()

    def build() -> Any:
        graph = StateGraph(MyState)
        graph.add_node("a", say("reply"))
        graph.set_entry_point("a")
        return graph.compile(checkpointer)

    first, second = build(), build()
    config = {"thread_id": "shared"}
    result = first.invoke({"messages": [Message.text_message("1")]}, config)
    second.invoke({"messages": [Message.text_message("2")]}, config)
    third = first.invoke({"messages": [Message.text_message("3")]}, config)
    assert [m.text() for m in third["state"].context] == ["1", "reply", "2", "reply", "3", "reply"]

    third["state"].context.append(Message.text_message("not saved"))
    third["state"].selected_city = "Nowhere"
    fourth = first.invoke({"messages": [Message.text_message("4")]}, config)
    texts = [m.text() for m in fourth["state"].context]
    assert "not saved" not in texts
    assert texts[-2:] == ["4", "reply"]
    assert fourth["state"].selected_city == ""
    assert result["state"] is not fourth["state"]
