"""Extracting a finished turn's facts: updates instead of duplicates, failures change nothing."""

from __future__ import annotations

import json

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.graph.memory import MemoryExtraction, aextract_memories, fact_key
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import Message
from tenxgraph.errors import ModelError
from tenxgraph.storage.longterm import InMemoryStore

NS = ("memories",)


def answer(*facts: dict[str, str]) -> str:
    return json.dumps({"facts": list(facts)})


def turn(text: str) -> list[Message]:
    return [Message.text_message(text), Message.text_message("Noted!", role="assistant")]


async def test_new_facts_are_saved_and_repeats_update() -> None:
    store = InMemoryStore()
    model = ScriptedModel(
        [
            answer({"text": "Lives in Oslo", "key": "city"}, {"text": "Drinks green tea daily"}),
            answer(
                {"text": "Lives in Bergen", "key": "city"}, {"text": "drinks green tea every day"}
            ),
        ]
    )
    first = await aextract_memories(
        model, store, turn("I live in Oslo and drink tea"), user_id="ana"
    )
    assert first.error is None and len(first.saved) == 2 and first.updated == 0
    second = await aextract_memories(
        model, store, turn("I moved to Bergen; still tea"), user_id="ana"
    )
    assert second.error is None and second.updated == 2
    items = {item.key: item.value["text"] for item in await store.asearch(NS, user_id="ana")}
    assert items == {
        "city": "Lives in Bergen",
        fact_key("Drinks green tea daily"): "drinks green tea every day",
    }
    shown = model.requests[1].messages[1].text()
    assert "Drinks green tea daily" in shown and "I moved to Bergen" in shown  # relevant ones sent


@pytest.mark.parametrize(
    "reply",
    [
        "not json at all",
        json.dumps({"facts": [{"text": "ok"}, {"text": ""}]}),
        json.dumps({"facts": [{"text": "ok", "key": ""}]}),
        json.dumps({"facts": [{"text": f"fact {n}"} for n in range(11)]}),
        ModelError("provider down", provider="test"),
    ],
)
async def test_a_failure_changes_nothing(reply: object) -> None:
    store = InMemoryStore()
    store.put(NS, "city", {"text": "Lives in Oslo"}, user_id="ana")
    result = await aextract_memories(ScriptedModel([reply]), store, turn("hi"), user_id="ana")  # type: ignore[list-item]
    assert result.error is not None and result.saved == []
    assert [item.value for item in store.search(NS, user_id="ana")] == [{"text": "Lives in Oslo"}]


def test_the_middleware_runs_after_each_invoke_for_the_run_user() -> None:
    store = InMemoryStore()

    def extract(request: ModelRequest) -> str:
        assert request.output_schema is not None
        return answer({"text": "Has a cat named Miso", "key": "pet"})

    app = create_agent(
        ScriptedModel(["Cute!"]), middleware=[MemoryExtraction(FunctionModel(extract), store)]
    )
    out = app.invoke({"messages": [("user", "My cat Miso is asleep")]}, {"user_id": "ana"})
    assert out["messages"][-1].text() == "Cute!"
    got = store.get(NS, "pet", user_id="ana")
    assert got is not None and got.value == {"text": "Has a cat named Miso"}
    assert store.get(NS, "pet") is None  # not the default tenant
