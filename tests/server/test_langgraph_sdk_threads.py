"""The official langgraph-sdk client (sync and async) on threads, state, history, assistants."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk._sync.client import SyncLangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from tests.server.conftest import Serve, message_text


@pytest.fixture
def url(serve: Serve) -> str:
    return serve()


@pytest.fixture
def client(url: str) -> Iterator[SyncLangGraphClient]:
    with get_sync_client(url=url, api_key=None) as client:
        yield client


def texts(values: dict[str, object]) -> list[str]:
    """The texts of the messages the SDK read, each checked as a LangChain message."""
    messages = values["messages"]
    assert isinstance(messages, list)
    return [message_text(m) for m in messages]


def test_threads_lifecycle(client: SyncLangGraphClient) -> None:
    thread = client.threads.create(metadata={"owner": "me"}, thread_id="t-sdk")
    assert (thread["thread_id"], thread["metadata"], thread["status"]) == (
        "t-sdk",
        {"owner": "me"},
        "idle",
    )
    with pytest.raises(ConflictError):
        client.threads.create(thread_id="t-sdk")
    assert client.threads.create(thread_id="t-sdk", if_exists="do_nothing")["metadata"] == {
        "owner": "me"
    }
    assert client.threads.get("t-sdk")["thread_id"] == "t-sdk"

    updated = client.threads.update("t-sdk", metadata={"stage": 2})
    assert updated["metadata"] == {"owner": "me", "stage": 2}

    other = client.threads.create(graph_id="agent")
    assert other["metadata"] == {"graph_id": "agent"}
    found = client.threads.search(metadata={"owner": "me"})
    assert [t["thread_id"] for t in found] == ["t-sdk"]
    assert client.threads.count(metadata={"graph_id": "agent"}) == 1

    client.threads.delete("t-sdk")
    with pytest.raises(NotFoundError):
        client.threads.get("t-sdk")
    assert [t["thread_id"] for t in client.threads.search()] == [other["thread_id"]]


def test_state_update_and_history(client: SyncLangGraphClient) -> None:
    thread_id = client.threads.create()["thread_id"]
    response = client.threads.update_state(
        thread_id, {"messages": [{"role": "user", "content": "first"}]}
    )
    assert response["checkpoint"]["checkpoint_id"] == "2"
    client.threads.update_state(thread_id, {"messages": [{"role": "user", "content": "second"}]})

    state = client.threads.get_state(thread_id)
    assert texts(state["values"]) == ["first", "second"]
    assert state["checkpoint"]["checkpoint_id"] == "3"
    assert state["next"] == [] and state["interrupts"] == []

    older = client.threads.get_state(thread_id, checkpoint_id="2")
    assert texts(older["values"]) == ["first"]
    by_checkpoint = client.threads.get_state(
        thread_id, checkpoint={"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": "1"}
    )
    assert texts(by_checkpoint["values"]) == []

    history = client.threads.get_history(thread_id, limit=2)
    assert [h["checkpoint"]["checkpoint_id"] for h in history] == ["3", "2"]
    before = client.threads.get_history(thread_id, before="2")
    assert [h["checkpoint"]["checkpoint_id"] for h in before] == ["1"]

    with pytest.raises(UnprocessableEntityError):
        client.threads.update_state(thread_id, {"not_a_field": 1})
    with pytest.raises(NotFoundError):
        client.threads.get_state("no-such-thread")


def test_copy(client: SyncLangGraphClient) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.threads.update_state(thread_id, {"messages": [{"role": "user", "content": "hi"}]})
    copy = client.threads.copy(thread_id)
    assert texts(client.threads.get_state(copy["thread_id"])["values"]) == ["hi"]


def test_assistants(client: SyncLangGraphClient) -> None:
    assistant = client.assistants.get("agent")
    assert (assistant["assistant_id"], assistant["graph_id"]) == ("agent", "agent")
    assert [a["assistant_id"] for a in client.assistants.search()] == ["agent"]
    assert client.assistants.search(graph_id="other") == []
    graph = client.assistants.get_graph("agent")
    assert {"agent", "tools"} <= {node["id"] for node in graph["nodes"]}
    schemas = client.assistants.get_schemas("agent")
    assert "context" in schemas["state_schema"]["properties"]
    with pytest.raises(NotFoundError):
        client.assistants.get("nope")


async def test_async_client(url: str) -> None:
    async with get_client(url=url, api_key=None) as client:
        thread = await client.threads.create(metadata={"async": True})
        await client.threads.update_state(
            thread["thread_id"], {"messages": [{"role": "user", "content": "async hi"}]}
        )
        state = await client.threads.get_state(thread["thread_id"])
        assert texts(state["values"]) == ["async hi"]
        assert [t["thread_id"] for t in await client.threads.search(metadata={"async": True})] == [
            thread["thread_id"]
        ]
