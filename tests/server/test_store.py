"""The /store routes over real HTTP: httpx for the edges, langgraph-sdk as a real client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tenxgraph.server.auth import api_keys
from tests.server.conftest import BACKENDS, Serve


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, serve: Serve) -> str:
    keys = api_keys({"ka": "alice", "kb": "bob"})
    return serve(backend=request.param, memory=True, authenticate=keys)


@pytest.fixture
def alice(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, headers={"x-api-key": "ka"}) as client:
        yield client


@pytest.fixture
def sdk(url: str) -> Iterator[Callable[[str], Any]]:
    """``sdk(api_key)``: a langgraph-sdk sync client's store, closed after the test."""
    with ExitStack() as stack:
        yield lambda key: stack.enter_context(get_sync_client(url=url, api_key=key)).store


def test_sdk_put_get_search_namespaces_delete(sdk: Callable[[str], Any]) -> None:
    store = sdk("ka")
    store.put_item(["users", "prefs"], "color", {"text": "likes green tea"})
    store.put_item(["users", "notes"], "n1", {"text": "meeting on friday", "kind": "note"})
    store.put_item(["other"], "x", {"text": "green"})

    item = store.get_item(["users", "prefs"], "color")
    assert (item["namespace"], item["key"], item["value"]) == (
        ["users", "prefs"],
        "color",
        {"text": "likes green tea"},
    )
    assert item["created_at"] == item["updated_at"]

    found = store.search_items(["users"], query="green")["items"]
    assert [i["key"] for i in found] == ["color"] and found[0]["score"] is not None
    assert [i["key"] for i in store.search_items(["users"], filter={"kind": "note"})["items"]] == [
        "n1"
    ]
    assert {i["key"] for i in store.search_items([])["items"]} == {"color", "n1", "x"}

    assert store.list_namespaces(prefix=["users"])["namespaces"] == [
        ["users", "notes"],
        ["users", "prefs"],
    ]
    assert store.list_namespaces(max_depth=1)["namespaces"] == [["other"], ["users"]]
    assert store.list_namespaces(suffix=["prefs"])["namespaces"] == [["users", "prefs"]]

    store.delete_item(["users", "prefs"], "color")
    assert store.get_item(["users", "prefs"], "color") is None  # LangGraph's answer: null
    store.delete_item(["users", "prefs"], "color")  # idempotent


def test_sdk_wildcards_filters_and_index(sdk: Callable[[str], Any]) -> None:
    """LangGraph's "*" parts, suffix paging, filter operators and a put's index pass through."""
    store = sdk("ka")
    store.put_item(["users", "ana", "prefs"], "a", {"text": "green tea", "meta": {"stars": 4}})
    store.put_item(
        ["users", "bob", "prefs"], "b", {"text": "green", "meta": {"stars": 2}}, index=False
    )
    store.put_item(
        ["users", "bob", "notes"], "c", {"title": "lisbon", "text": "green"}, index=["title"]
    )

    def keys(**search: Any) -> list[str]:
        return sorted(item["key"] for item in store.search_items(["users"], **search)["items"])

    prefs = [["users", "ana", "prefs"], ["users", "bob", "prefs"]]
    assert store.list_namespaces(prefix=["users", "*", "prefs"])["namespaces"] == prefs
    assert store.list_namespaces(suffix=["prefs"], limit=1, offset=1)["namespaces"] == prefs[1:]
    assert keys(filter={"meta.stars": {"$gte": 3}}) == ["a"]
    assert keys(filter={"meta.stars": {"$ne": 4}}) == ["b", "c"]
    assert keys(query="green") == ["a"]  # b is not indexed, c only by its title
    assert keys(query="lisbon") == ["c"]


def test_items_are_per_user(sdk: Callable[[str], Any]) -> None:
    alice, bob = sdk("ka"), sdk("kb")
    alice.put_item(["prefs"], "k", {"text": "alice's"})
    assert bob.get_item(["prefs"], "k") is None
    assert bob.search_items(["prefs"])["items"] == []
    assert bob.list_namespaces()["namespaces"] == []
    bob.put_item(["prefs"], "k", {"text": "bob's"})
    assert alice.get_item(["prefs"], "k")["value"] == {"text": "alice's"}


def test_bad_store_input_is_a_clear_4xx(alice: httpx.Client) -> None:
    cases = [
        (
            alice.put("/store/items", json={"namespace": ["a"], "key": "k", "value": 3}),
            422,
            "value",
        ),
        (
            alice.put("/store/items", json={"namespace": [], "key": "k", "value": {}}),
            None,
            "namespace",
        ),
        (
            alice.put(
                "/store/items", json={"namespace": ["a"], "key": "k", "value": {}, "ttl": -1}
            ),
            422,
            "ttl",
        ),
        (alice.get("/store/items", params={"key": "k"}), 422, "namespace"),
        (alice.post("/store/items/search", json={"limit": 100000}), 422, "limit"),
        (alice.post("/store/items/search", json={"filter": {"a": [1]}}), None, "filter"),
        (
            alice.post("/store/items/search", json={"filter": {"a": {"$in": [1]}}}),
            None,
            "unknown operator '$in'",
        ),
        (
            alice.put(
                "/store/items", json={"namespace": ["a"], "key": "k", "value": {}, "index": ["."]}
            ),
            None,
            "index path",
        ),
    ]
    for response, status, words in cases:
        assert 400 <= response.status_code < 500, (response.request.url, response.text)
        if status is not None:
            assert response.status_code == status, response.text
        assert words in response.json()["detail"], response.text


def test_ttl_is_in_minutes(alice: httpx.Client) -> None:
    alice.put("/store/items", json={"namespace": ["a"], "key": "k", "value": {}, "ttl": 1})
    item = alice.get("/store/items", params={"namespace": "a", "key": "k"}).json()
    assert item["key"] == "k"  # alive: one minute, not one second


def test_no_memory_store_is_404(serve: Serve) -> None:
    with httpx.Client(base_url=serve()) as client:
        response = client.post("/store/items/search", json={})
        assert response.status_code == 404 and "no memory store" in response.json()["detail"]
