"""The official Python ``langgraph-sdk`` (pinned in pyproject's dev extra): one check per method.

The same coverage as the JS checks (test_js_sdk.py): every method of the
sync client's assistants, threads, runs (each stream mode), store and crons,
against a live server of ``graph.build`` on SQLite and on Postgres + Redis.
Each answer is checked against its ``langgraph_sdk.schema`` TypedDict
(typed_dicts.py). A check that fails today is a strict xfail naming what
fails (issue #33).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.schema import (
    Assistant,
    AssistantVersion,
    Cron,
    GraphSchema,
    Interrupt,
    Item,
    ListNamespaceResponse,
    Run,
    SearchItemsResponse,
    Thread,
    ThreadState,
    ThreadUpdateStateResponse,
)

from tests.clients.langgraph.graph import GRAPH_ID
from tests.clients.langgraph.typed_dicts import check

Check = Callable[[Any], None]
CHECKS: dict[str, tuple[Check, str | None]] = {}
"""Every check by name, with the reason it fails today (None: it passes)."""


def sdk_check(name: str, xfail: str | None = None) -> Callable[[Check], Check]:
    def register(function: Check) -> Check:
        CHECKS[name] = (function, xfail)
        return function

    return register


# ---- helpers ----


def user(text: str) -> dict[str, Any]:
    """Input as OpenAI-style dicts, which LangGraph takes beside LangChain's own."""
    return {"messages": [{"role": "user", "content": text}]}


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [])


def talked(client: Any, text: str = "hi") -> str:
    """A thread with one finished turn; its id."""
    thread_id: str = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, GRAPH_ID, input=user(text))
    return thread_id


def wait_status(client: Any, thread_id: str, run_id: str, *statuses: str) -> None:
    for _ in range(400):
        if client.runs.get(thread_id, run_id)["status"] in statuses:
            return
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never reached {statuses}")


def langchain_message(message: Any, where: str) -> None:
    """A LangChain message dict, as the SDKs and LangGraph's server carry it."""
    assert isinstance(message, dict), f"{where}: {message!r} is not an object"
    kind = message.get("type")
    assert kind in ("human", "ai", "tool", "system", "AIMessageChunk"), f"{where}: type {kind!r}"
    assert isinstance(message.get("content"), str | list), f"{where}: content"


# ---- assistants ----


@sdk_check("assistants.get")
def _(client: Any) -> None:
    assert check(client.assistants.get(GRAPH_ID), Assistant)["graph_id"] == GRAPH_ID


@sdk_check("assistants.get_graph")
def _(client: Any) -> None:
    graph = client.assistants.get_graph(GRAPH_ID)
    assert {"nodes", "edges"} <= set(graph), graph


@sdk_check("assistants.get_schemas")
def _(client: Any) -> None:
    check(client.assistants.get_schemas(GRAPH_ID), GraphSchema)


@sdk_check("assistants.get_subgraphs")
def _(client: Any) -> None:
    for schema in client.assistants.get_subgraphs(GRAPH_ID).values():
        check(schema, GraphSchema)


@sdk_check("assistants.search")
def _(client: Any) -> None:
    found = client.assistants.search(graph_id=GRAPH_ID)
    assert found, found
    check(found, list[Assistant])


@sdk_check("assistants.count")
def _(client: Any) -> None:
    assert client.assistants.count(graph_id=GRAPH_ID) >= 1


@sdk_check("assistants.create")
def _(client: Any) -> None:
    check(client.assistants.create(GRAPH_ID, name="made"), Assistant)


@sdk_check("assistants.update")
def _(client: Any) -> None:  # the served graph's own assistant never changes: a made one
    made = client.assistants.create(GRAPH_ID, name="changed")
    check(client.assistants.update(made["assistant_id"], metadata={"k": "v"}), Assistant)


@sdk_check("assistants.delete")
def _(client: Any) -> None:
    made = client.assistants.create(GRAPH_ID, name="gone")
    client.assistants.delete(made["assistant_id"])


@sdk_check("assistants.get_versions")
def _(client: Any) -> None:
    check(client.assistants.get_versions(GRAPH_ID), list[AssistantVersion])


@sdk_check("assistants.set_latest")
def _(client: Any) -> None:
    check(client.assistants.set_latest(GRAPH_ID, 1), Assistant)


# ---- threads ----


@sdk_check("threads.create")
def _(client: Any) -> None:
    thread = check(client.threads.create(metadata={"owner": "py"}), Thread)
    assert thread["metadata"] == {"owner": "py"}


@sdk_check("threads.create(thread_id+if_exists)")
def _(client: Any) -> None:
    thread_id = str(uuid.uuid4())
    client.threads.create(thread_id=thread_id)
    again = check(client.threads.create(thread_id=thread_id, if_exists="do_nothing"), Thread)
    assert again["thread_id"] == thread_id


@sdk_check("threads.create(graph_id)")
def _(client: Any) -> None:
    thread = check(client.threads.create(graph_id=GRAPH_ID), Thread)
    assert (thread["metadata"] or {}).get("graph_id") == GRAPH_ID, thread["metadata"]


@sdk_check("threads.create(supersteps)")
def _(client: Any) -> None:
    seeded = [{"updates": [{"values": user("seeded"), "as_node": "agent"}]}]
    thread = check(client.threads.create(supersteps=seeded), Thread)
    state = client.threads.get_state(thread["thread_id"])
    assert len(state["values"]["messages"]) == 1, state["values"]


@sdk_check("threads.get")
def _(client: Any) -> None:
    thread_id = talked(client)
    thread = check(client.threads.get(thread_id), Thread)
    assert len((thread["values"] or {}).get("messages", [])) == 2, thread["values"]


@sdk_check("threads.update")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    updated = check(client.threads.update(thread_id, metadata={"tag": "x"}), Thread)
    assert (updated["metadata"] or {}).get("tag") == "x"


@sdk_check("threads.delete")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.threads.delete(thread_id)
    assert client.threads.search(ids=[thread_id]) == []


@sdk_check("threads.search")
def _(client: Any) -> None:
    marker = str(uuid.uuid4())
    thread_id = client.threads.create(metadata={"marker": marker})["thread_id"]
    found = check(client.threads.search(metadata={"marker": marker}), list[Thread])
    assert [t["thread_id"] for t in found] == [thread_id]


@sdk_check("threads.search(metadata.graph_id after a run)")
def _(client: Any) -> None:
    thread_id = talked(client)
    found = client.threads.search(metadata={"graph_id": GRAPH_ID}, limit=1000)
    assert thread_id in [t["thread_id"] for t in found]


@sdk_check("threads.count")
def _(client: Any) -> None:
    marker = str(uuid.uuid4())
    client.threads.create(metadata={"marker": marker})
    assert client.threads.count(metadata={"marker": marker}) == 1


@sdk_check("threads.copy")
def _(client: Any) -> None:
    thread_id = talked(client)
    copy = check(client.threads.copy(thread_id), Thread)
    assert copy["thread_id"] != thread_id
    assert len(client.threads.get_state(copy["thread_id"])["values"]["messages"]) == 2


@sdk_check("threads.prune")
def _(client: Any) -> None:
    result = client.threads.prune([talked(client)], strategy="delete")
    assert result.get("pruned_count") == 1, result


@sdk_check("threads.get_state")
def _(client: Any) -> None:
    state = check(client.threads.get_state(talked(client)), ThreadState)
    assert len(state["values"]["messages"]) == 2


@sdk_check("threads.get_state(checkpoint_id)")
def _(client: Any) -> None:
    thread_id = talked(client)
    older = client.threads.get_history(thread_id, limit=2)[-1]["checkpoint"]["checkpoint_id"]
    state = check(client.threads.get_state(thread_id, checkpoint_id=older), ThreadState)
    assert state["checkpoint"]["checkpoint_id"] == older


@sdk_check("threads.update_state")
def _(client: Any) -> None:
    thread_id = talked(client)
    answer = client.threads.update_state(thread_id, user("added"), as_node="agent")
    check(answer, ThreadUpdateStateResponse)
    assert len(client.threads.get_state(thread_id)["values"]["messages"]) == 3


@sdk_check("threads.get_history")
def _(client: Any) -> None:
    history = check(client.threads.get_history(talked(client)), list[ThreadState])
    assert len(history) >= 2


@sdk_check("threads.get_history(before+limit)")
def _(client: Any) -> None:
    thread_id = talked(client)
    latest = client.threads.get_history(thread_id, limit=1)[0]["checkpoint"]
    before = client.threads.get_history(thread_id, limit=1, before=latest)
    assert before[0]["checkpoint"]["checkpoint_id"] != latest["checkpoint_id"]


@sdk_check("threads.join_stream")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.runs.create(thread_id, GRAPH_ID, input=user("sleep 0.5"))
    for part in client.threads.join_stream(thread_id):
        assert part.event
        return
    raise AssertionError("no event on the thread's stream")


@sdk_check("threads.stream(commands protocol)")
def _(client: Any) -> None:
    with client.threads.stream(assistant_id=GRAPH_ID) as stream:
        stream.run.start(input=user("hi"))
        assert len(stream.output["messages"]) == 2


@sdk_check("threads.stream(interrupt then run.respond)")
def _(client: Any) -> None:
    with client.threads.stream(assistant_id=GRAPH_ID) as stream:
        stream.run.start(input=user("ask"))
        for _ in range(400):
            if stream.interrupted:
                break
            time.sleep(0.05)
        (asked,) = stream.interrupts
        assert asked["value"] == {"question": "your name?"}, asked
        stream.run.respond("Ada")
        assert stream.output["messages"][-1]["content"] == "you answered: Ada"


# ---- runs ----


@sdk_check("runs.create")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    run = check(client.runs.create(thread_id, GRAPH_ID, input=user("hi")), Run)
    client.runs.join(thread_id, run["run_id"])


@sdk_check("runs.create(stateless)")
def _(client: Any) -> None:
    check(client.runs.create(None, GRAPH_ID, input=user("hi")), Run)


@sdk_check("runs.create_batch")
def _(client: Any) -> None:
    payloads = [{"assistant_id": GRAPH_ID, "input": user(t)} for t in ("one", "two")]
    check(client.runs.create_batch(payloads), list[Run])


MODES = {
    "values": None,
    "updates": None,
    "messages": None,
    "messages-tuple": None,
    "custom": None,
    "events": None,
    "debug": None,
    "tasks": None,
    "checkpoints": None,
    "tools": None,
    "lifecycle": None,
}


def _stream_mode(mode: str) -> Check:
    def run(client: Any) -> None:
        thread_id = client.threads.create()["thread_id"]
        text = "tool" if mode == "tools" else "hi"  # a run that calls no tool has no tools event
        parts = list(client.runs.stream(thread_id, GRAPH_ID, input=user(text), stream_mode=mode))
        events = [part.event for part in parts]
        assert events[0] == "metadata", events
        assert "error" not in events, [p.data for p in parts if p.event == "error"]
        if mode != "custom":
            assert any(e.startswith(mode.split("-")[0]) for e in events), events

    return run


for _mode, _reason in MODES.items():
    sdk_check(f"runs.stream(stream_mode={_mode})", _reason)(_stream_mode(_mode))


@sdk_check("runs.stream(values: LangChain messages)")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(thread_id, GRAPH_ID, input=user("tool")))
    messages = [p.data for p in parts if p.event == "values"][-1]["messages"]
    for i, message in enumerate(messages):
        langchain_message(message, f"messages[{i}]")
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"]


@sdk_check("runs.stream(messages-tuple: LangChain chunks)")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    parts = client.runs.stream(thread_id, GRAPH_ID, input=user("hi"), stream_mode="messages-tuple")
    chunks = [p.data for p in parts if p.event == "messages"]
    assert len(chunks) > 1
    for chunk, metadata in chunks:
        langchain_message(chunk, "chunk")
        assert isinstance(metadata, dict)


@sdk_check("runs.stream(stateless)")
def _(client: Any) -> None:
    parts = list(client.runs.stream(None, GRAPH_ID, input=user("hi")))
    assert any(p.event == "values" for p in parts)


@sdk_check("runs.stream(interrupt then command.resume)")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    parts = client.runs.stream(thread_id, GRAPH_ID, input=user("ask"), stream_mode="updates")
    paused = [p.data for p in parts if p.event == "updates" and "__interrupt__" in p.data]
    assert len(paused) == 1
    check(paused[0]["__interrupt__"][0], Interrupt)
    state = check(client.threads.get_state(thread_id), ThreadState)
    assert len(state["interrupts"]) == 1, state["interrupts"]
    values = client.runs.wait(thread_id, GRAPH_ID, command={"resume": "Ada"})
    assert text_of(values["messages"][-1]) == "you answered: Ada"


@sdk_check("runs.wait(command.resume with input {})")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, GRAPH_ID, input=user("ask"))
    values = client.runs.wait(thread_id, GRAPH_ID, input={}, command={"resume": "Ada"})
    assert text_of(values["messages"][-1]) == "you answered: Ada"


@sdk_check("runs.wait(command.goto)")
def _(client: Any) -> None:
    client.runs.wait(talked(client), GRAPH_ID, command={"goto": "agent"})


@sdk_check("runs.stream(checkpoint: regenerate)")
def _(client: Any) -> None:
    thread_id = talked(client, "first")
    history = client.threads.get_history(thread_id)
    question = next(s for s in history if len(s["values"]["messages"]) == 1)
    parts = list(
        client.runs.stream(thread_id, GRAPH_ID, input=None, checkpoint=question["checkpoint"])
    )
    assert "error" not in [p.event for p in parts], parts
    assert len(client.threads.get_history(thread_id)) > len(history)


@sdk_check("runs.wait")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    assert len(client.runs.wait(thread_id, GRAPH_ID, input=user("hi"))["messages"]) == 2


@sdk_check("runs.wait(stateless)")
def _(client: Any) -> None:
    assert len(client.runs.wait(None, GRAPH_ID, input=user("hi"))["messages"]) == 2


@sdk_check("runs.list")
def _(client: Any) -> None:
    assert len(check(client.runs.list(talked(client)), list[Run])) == 1


@sdk_check("runs.get")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, GRAPH_ID, input=user("hi"))
    client.runs.join(thread_id, run["run_id"])
    assert check(client.runs.get(thread_id, run["run_id"]), Run)["status"] == "success"


@sdk_check("runs.cancel")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, GRAPH_ID, input=user("sleep 30"))
    wait_status(client, thread_id, run["run_id"], "running")
    client.runs.cancel(thread_id, run["run_id"], wait=True)
    assert client.runs.get(thread_id, run["run_id"])["status"] == "interrupted"


@sdk_check("runs.cancel(action=rollback)")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, GRAPH_ID, input=user("sleep 30"))
    wait_status(client, thread_id, run["run_id"], "running")
    client.runs.cancel(thread_id, run["run_id"], wait=True, action="rollback")
    assert client.runs.list(thread_id) == []


@sdk_check("runs.cancel_many")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, GRAPH_ID, input=user("sleep 30"))
    wait_status(client, thread_id, run["run_id"], "running")
    client.runs.cancel_many(thread_id=thread_id, run_ids=[run["run_id"]])
    wait_status(client, thread_id, run["run_id"], "interrupted")


@sdk_check("runs.join")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, GRAPH_ID, input=user("hi"))
    assert len(client.runs.join(thread_id, run["run_id"])["messages"]) == 2


@sdk_check("runs.join_stream")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, GRAPH_ID, input=user("sleep 0.5"))
    parts = list(client.runs.join_stream(thread_id, run["run_id"]))
    assert any(p.event == "values" for p in parts), [p.event for p in parts]


@sdk_check("runs.delete")
def _(client: Any) -> None:
    thread_id = talked(client)
    client.runs.delete(thread_id, client.runs.list(thread_id)[0]["run_id"])
    assert client.runs.list(thread_id) == []


# ---- store ----

NAMESPACE = ["py", str(uuid.uuid4())]


@sdk_check("store.put_item")
def _(client: Any) -> None:
    client.store.put_item(NAMESPACE, "put", {"a": 1})


@sdk_check("store.get_item")
def _(client: Any) -> None:
    client.store.put_item(NAMESPACE, "got", {"a": 2})
    assert check(client.store.get_item(NAMESPACE, "got"), Item)["value"] == {"a": 2}


@sdk_check("store.get_item(missing)")
def _(client: Any) -> None:
    assert client.store.get_item(NAMESPACE, "never-put") is None


@sdk_check("store.delete_item")
def _(client: Any) -> None:
    client.store.put_item(NAMESPACE, "deleted", {"a": 3})
    client.store.delete_item(NAMESPACE, "deleted")
    assert client.store.search_items(NAMESPACE, filter={"a": 3})["items"] == []


@sdk_check("store.search_items")
def _(client: Any) -> None:
    client.store.put_item(NAMESPACE, "searched", {"a": 4})
    found = check(client.store.search_items(NAMESPACE, filter={"a": 4}), SearchItemsResponse)
    assert len(found["items"]) == 1


@sdk_check("store.list_namespaces")
def _(client: Any) -> None:
    client.store.put_item(NAMESPACE, "listed", {"a": 5})
    listed = check(client.store.list_namespaces(prefix=["py"]), ListNamespaceResponse)
    assert NAMESPACE in listed["namespaces"]


# ---- crons ----


@sdk_check("crons.create")
def _(client: Any) -> None:
    assert client.crons.create(GRAPH_ID, schedule="0 0 1 1 *")["cron_id"]


@sdk_check("crons.create_for_thread")
def _(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    assert client.crons.create_for_thread(thread_id, GRAPH_ID, schedule="0 0 1 1 *")["cron_id"]


@sdk_check("crons.update")
def _(client: Any) -> None:
    cron = client.crons.create(GRAPH_ID, schedule="0 0 1 1 *")
    check(client.crons.update(cron["cron_id"], schedule="0 0 2 1 *"), Cron)


@sdk_check("crons.delete")
def _(client: Any) -> None:
    client.crons.delete(client.crons.create(GRAPH_ID, schedule="0 0 1 1 *")["cron_id"])


@sdk_check("crons.search")
def _(client: Any) -> None:
    check(client.crons.search(assistant_id=GRAPH_ID), list[Cron])


@sdk_check("crons.count")
def _(client: Any) -> None:
    assert isinstance(client.crons.count(assistant_id=GRAPH_ID), int)


# ---- the test cases: one per check above ----


@pytest.fixture(scope="module")
def client(langgraph_server: str) -> Iterator[Any]:
    sync = get_sync_client(url=langgraph_server, api_key=None)
    yield sync
    sync.close()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason)) if reason else name
        for name, (_, reason) in CHECKS.items()
    ],
)
def test_python_sdk(client: Any, name: str) -> None:
    CHECKS[name][0](client)
