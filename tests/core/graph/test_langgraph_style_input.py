"""LangGraph-style input runs: message pairs and dicts, and ``configurable`` thread ids."""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph, interrupt
from tenxgraph.core.state import AgentState, Message, ThreadKey, run_config
from tenxgraph.errors import InvalidIdError, NodeError, StateError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import END, START


def echo(state: AgentState) -> dict[str, Any]:
    return {"context": [("ai", f"you said {state.context[-1].text()}")]}


def echo_app(checkpointer: Any = None) -> Any:
    graph = StateGraph(AgentState)
    graph.add_node("echo", echo)
    graph.add_edge(START, "echo")
    graph.add_edge("echo", END)
    return graph.compile(checkpointer)


def test_invoke_accepts_pairs_and_dicts_as_messages() -> None:
    result = echo_app().invoke(
        {"messages": [("system", "be brief"), {"role": "user", "content": "hi"}]}
    )
    context = result["state"].context
    assert [(m.role, m.text()) for m in context] == [
        ("system", "be brief"),
        ("user", "hi"),
        ("assistant", "you said hi"),
    ]
    assert all(isinstance(m, Message) for m in context)


def test_a_single_pair_or_text_is_one_message() -> None:
    assert echo_app().invoke({"messages": ("user", "hi")})["messages"][0].text() == "you said hi"
    assert echo_app().invoke({"messages": "yo"})["messages"][0].text() == "you said yo"


def test_a_bad_input_message_names_its_index_and_what_was_expected() -> None:
    with pytest.raises(StateError) as raised:
        echo_app().invoke({"messages": [("user", "ok"), ("robot", "beep")]})
    assert str(raised.value).startswith("invoke input 'messages'[1]: unknown role 'robot'")
    with pytest.raises(StateError, match=r"'messages'\[0\]: expected a Message, a text, a \(role"):
        echo_app().invoke({"messages": [3]})


def test_a_node_may_return_pairs_as_a_list_or_under_context() -> None:
    def node(state: AgentState) -> list[Any]:
        return [("ai", "one"), {"role": "assistant", "content": "two"}]

    graph = StateGraph(AgentState)
    graph.add_node("n", node)
    graph.set_entry_point("n")
    result = graph.compile().invoke({"messages": [("user", "go")]})
    assert [m.text() for m in result["messages"]] == ["one", "two"]


def test_a_node_returning_messages_under_messages_is_told_to_use_context() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("n", lambda state: {"messages": [("ai", "x")]})
    graph.set_entry_point("n")
    with pytest.raises(NodeError, match="messages go under 'context'"):
        graph.compile().invoke({})


def test_a_node_returning_a_bad_message_fails_naming_the_node_and_index() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("n", lambda state: {"context": [("ai", "fine"), ("tool", "no id")]})
    graph.set_entry_point("n")
    with pytest.raises(NodeError, match=r"node 'n', 'context'\[1\]: a tool message answers"):
        graph.compile().invoke({})


def test_configurable_thread_id_and_user_id_name_the_thread() -> None:
    checkpointer = InMemoryCheckpointer()
    app = echo_app(checkpointer)
    nested = {"configurable": {"thread_id": "t1", "user_id": "acme"}}
    app.invoke({"messages": [("user", "one")]}, nested)
    app.invoke({"messages": [("user", "two")]}, {"thread_id": "t1", "user_id": "acme"})
    state = app.get_state(nested)
    assert state is not None
    assert [m.text() for m in state.context] == ["one", "you said one", "two", "you said two"]
    assert app.get_state({"configurable": {"thread_id": "t1"}}) is None  # another tenant
    assert checkpointer.get_state(nested) is not None


def test_nodes_see_the_configurable_entries_at_the_top_of_config() -> None:
    seen: list[dict[str, Any]] = []

    def node(state: AgentState, config: dict[str, Any]) -> None:
        seen.append(config)

    graph = StateGraph(AgentState)
    graph.add_node("n", node)
    graph.set_entry_point("n")
    graph.compile().invoke({}, {"configurable": {"thread_id": "t", "model": "m"}})
    assert seen == [{"thread_id": "t", "model": "m"}]


def test_conflicting_thread_ids_are_refused() -> None:
    with pytest.raises(StateError, match="'thread_id' twice with different values"):
        echo_app(InMemoryCheckpointer()).invoke(
            {"messages": [("user", "hi")]}, {"thread_id": "a", "configurable": {"thread_id": "b"}}
        )
    with pytest.raises(StateError, match="'configurable' must be a dict"):
        run_config({"configurable": "t1"})
    assert run_config({"thread_id": "a", "configurable": {"thread_id": "a"}}) == {"thread_id": "a"}
    assert ThreadKey.from_config({"configurable": {"thread_id": 5}}) == ThreadKey("5")


def test_a_checkpoint_id_that_names_no_version_is_refused_before_anything_is_read() -> None:
    checkpointer = InMemoryCheckpointer()
    app = echo_app(checkpointer)
    config = {"configurable": {"thread_id": "t1", "checkpoint_id": "abc"}}
    with pytest.raises(StateError, match=r"checkpoint_id must name a checkpoint by its version"):
        app.invoke({"messages": [("user", "hi")]}, config)
    assert app.get_state({"thread_id": "t1"}) is None
    with pytest.raises(StateError, match=r"'checkpoint_ns' is not supported"):
        run_config({"configurable": {"thread_id": "t", "checkpoint_ns": "sub"}})
    assert run_config({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}) == {
        "thread_id": "t",
        "checkpoint_ns": "",
    }


def test_resume_and_fork_work_with_a_configurable_config() -> None:
    def ask(state: AgentState) -> Message:
        answer = interrupt("approve?")
        return Message.text_message(f"approved: {answer}", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("ask", ask)
    graph.set_entry_point("ask")
    app = graph.compile(InMemoryCheckpointer())
    config = {"configurable": {"thread_id": "t1"}}
    assert app.invoke({"messages": [("user", "deploy")]}, config)["interrupt"].value == "approve?"
    result = app.invoke({"resume": "yes"}, config)
    assert result["messages"][-1].text() == "approved: yes"
    forked = app.fork(config, "t2")
    assert forked == {"thread_id": "t2"}
    state = app.get_state(forked)
    assert state is not None and state.context[-1].text() == "approved: yes"


def test_a_non_dict_input_is_refused_with_the_expected_shape() -> None:
    with pytest.raises(StateError, match=r"invoke input must be a dict such as"):
        echo_app().invoke([("user", "hi")])  # type: ignore[arg-type]


def test_a_falsy_thread_id_is_checked_not_ignored() -> None:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("echo", lambda state: None)
    graph.set_entry_point("echo")
    app = graph.compile(InMemoryCheckpointer())
    with pytest.raises(InvalidIdError):
        app.invoke({"messages": [("user", "hi")]}, {"thread_id": ""})
    app.invoke({"messages": [("user", "hi")]}, {"thread_id": 0})
    assert app.get_state({"thread_id": "0"}) is not None
