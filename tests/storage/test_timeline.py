"""A stored thread as a timeline: built by real graph runs on SQLite (and in memory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import Message, MessageContextManager, SummaryContextManager, ThreadKey
from tenxgraph.core.state.message_block import ToolCallBlock, ToolResultBlock
from tenxgraph.errors import ThreadNotFoundError
from tenxgraph.storage.checkpointer import (
    Checkpointer,
    InMemoryCheckpointer,
    SqliteCheckpointer,
    ThreadWrite,
)
from tenxgraph.storage.timeline import ThreadTimeline, thread_timeline


def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city} is sunny"


@pytest.fixture(params=["memory", "sqlite"])
def checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> Checkpointer:
    if request.param == "memory":
        return InMemoryCheckpointer()
    return SqliteCheckpointer(tmp_path / "timeline.sqlite")


def kinds(timeline: ThreadTimeline) -> list[tuple[str, int]]:
    return [(e.kind, e.seq) for e in timeline.events if e.kind != "checkpoint"]


async def test_turns_messages_tool_calls_and_the_window(checkpointer: Checkpointer) -> None:
    model = ScriptedModel(
        [ToolCallBlock(id="c1", name="lookup", args={"city": "Rome"}), "Sunny.", "Bye."]
    )
    app = create_agent(model, [lookup], checkpointer=checkpointer)
    config = {"thread_id": "t"}
    for text in ("Weather in Rome?", "Thanks"):
        await app.ainvoke({"messages": [Message.text_message(text)]}, config)
    timeline = await thread_timeline(checkpointer, ThreadKey("t"))
    assert kinds(timeline) == [
        ("window_start", 0),
        ("turn", 0),
        ("message", 0),
        ("message", 1),
        ("tool_call", 1),
        ("message", 2),
        ("message", 3),
        ("turn", 4),
        ("message", 4),
        ("message", 5),
    ]
    log = await checkpointer.alist_messages(ThreadKey("t"))
    call = next(e for e in timeline.events if e.kind == "tool_call")
    assert call.text == 'tool lookup("city": "Rome"): answered at seq 2'
    assert call.data == {"call_id": "c1", "name": "lookup", "result_seq": 2, "is_error": False}
    asked, answered = log[1].message.timestamp, log[2].message.timestamp
    assert asked is not None and answered is not None
    assert call.duration == pytest.approx(answered - asked)
    assert [e.text for e in timeline.events if e.kind == "turn"] == ["turn 1", "turn 2"]
    checkpoints = await checkpointer.alist_checkpoints(ThreadKey("t"))
    assert [e.data["version"] for e in timeline.events if e.kind == "checkpoint"] == sorted(
        c.version for c in checkpoints
    )
    assert timeline.count("checkpoint") == len(checkpoints) == timeline.version
    json.dumps(timeline.to_json())  # what a web page gets is plain JSON


async def test_a_call_without_timestamps_or_result_has_no_duration(
    checkpointer: Checkpointer,
) -> None:
    ask = Message(
        role="assistant",
        content=[
            ToolCallBlock(id="a", name="lookup", args={"city": "Oslo"}),
            ToolCallBlock(id="b", name="lookup", args={"city": "Bergen"}),
        ],
        timestamp=None,
    )
    answer = Message(
        role="tool", content=[ToolResultBlock(call_id="a", output="boom", is_error=True)]
    )
    write = ThreadWrite(0, [ask, answer], {}, [(0, 2)], node="manual", step=0)
    await checkpointer.asave(ThreadKey("manual"), write)
    timeline = await thread_timeline(checkpointer, ThreadKey("manual"))
    calls = [e for e in timeline.events if e.kind == "tool_call"]
    assert [(c.text, c.duration) for c in calls] == [
        ('tool lookup("city": "Oslo"): failed at seq 1', None),
        ('tool lookup("city": "Bergen"): no result yet', None),
    ]
    assert timeline.count("turn") == 0


async def test_summaries_and_trims_show_which_seqs_left_the_window(
    checkpointer: Checkpointer,
) -> None:
    def summarize(request: ModelRequest) -> str:
        return "SUMMARY"

    summarizing = SummaryContextManager(FunctionModel(summarize), max_messages=4, keep_recent=2)
    app = create_agent(
        ScriptedModel(["a1", "a2", "a3"]), checkpointer=checkpointer, context_manager=summarizing
    )
    trimming = create_agent(
        ScriptedModel(["b1", "b2", "b3"]),
        checkpointer=checkpointer,
        context_manager=MessageContextManager(max_messages=2),
    )
    for graph, thread in ((app, "summed"), (trimming, "trimmed")):
        for text in ("one", "two", "three"):
            await graph.ainvoke({"messages": [Message.text_message(text)]}, {"thread_id": thread})
    summed = await thread_timeline(checkpointer, ThreadKey("summed"))
    summaries = [e for e in summed.events if e.kind == "summary"]
    assert summaries, kinds(summed)
    for event in summaries:
        assert event.data["summary"].startswith("SUMMARY")
        assert (
            event.text
            == f"summary replaced seqs {event.data['from_seq']}-{event.data['to_seq'] - 1}"
        )
    stored = await checkpointer.aload(ThreadKey("summed"))
    assert stored is not None
    assert summaries[-1].data["to_seq"] == stored.window[0][0]
    assert [e.seq for e in summed.events if e.kind == "window_start"] == [stored.window[0][0]]
    trimmed = await thread_timeline(checkpointer, ThreadKey("trimmed"))
    trims = [e for e in trimmed.events if e.kind == "trim"]
    assert trims and not [e for e in trimmed.events if e.kind == "summary"]
    assert trims[0].text == f"trimmed: seqs 0-{trims[0].data['to_seq'] - 1} left the window"


async def test_forks_show_on_both_threads(checkpointer: Checkpointer) -> None:
    app = create_agent(ScriptedModel(["a1", "a2", "alt"]), checkpointer=checkpointer)
    config: dict[str, Any] = {"thread_id": "main"}
    for text in ("one", "two"):
        await app.ainvoke({"messages": [Message.text_message(text)]}, config)
    first_turn_end = next(
        c for c in await checkpointer.alist_checkpoints(ThreadKey("main")) if c.log_length == 2
    )
    alt = await app.afork(config, "alt", version=first_turn_end.version)
    await app.ainvoke({"messages": [Message.text_message("other")]}, alt)
    main_timeline = await thread_timeline(checkpointer, ThreadKey("main"))
    forks = [e for e in main_timeline.events if e.kind == "fork"]
    assert [(e.seq, e.text) for e in forks] == [
        (1, f"forked into thread alt from version {first_turn_end.version}")
    ]
    alt_timeline = await thread_timeline(checkpointer, ThreadKey("alt"))
    assert alt_timeline.events[0].kind == "forked_from"
    assert alt_timeline.events[0].text == (
        f"forked from thread main at version {first_turn_end.version}"
    )


async def test_a_missing_thread_is_an_error(checkpointer: Checkpointer) -> None:
    with pytest.raises(ThreadNotFoundError, match="no thread 'nope' for user 'default'"):
        await thread_timeline(checkpointer, ThreadKey("nope"))


async def test_checkpoints_say_what_they_recorded_and_direct_calls_are_told_apart(
    checkpointer: Checkpointer,
) -> None:
    from tenxgraph.core.graph._direct import DIRECT_CALL_KEY
    from tenxgraph.storage.timeline._build import DIRECT_CALL_KEY as READ_KEY

    assert READ_KEY == DIRECT_CALL_KEY  # the key the runtime writes is the one read here
    model = ScriptedModel([ToolCallBlock(id="c1", name="lookup", args={"city": "Rome"}), "Sunny."])
    app = create_agent(model, [lookup], checkpointer=checkpointer)
    config = {"thread_id": "t"}
    await app.ainvoke({"messages": [Message.text_message("Weather in Rome?")]}, config)
    await app.acall_tool("lookup", {"city": "Oslo"}, config)
    timeline = await thread_timeline(checkpointer, ThreadKey("t"))
    said = [e.text for e in timeline.events if e.kind == "checkpoint"]
    assert said == [
        "checkpoint v1 after __start__ (step 0): the turn's input, +1 message",
        "checkpoint v2 after agent (step 1): +1 message",
        "checkpoint v3 after tools (step 2): 1 tool call started",
        "checkpoint v4 after tools (step 2): 1 tool result kept",
        "checkpoint v5 after tools (step 2): +1 message",
        "checkpoint v6 after agent (step 3): +1 message, turn completed",
        "checkpoint v7 after direct_tool_call (step 1): +2 messages",
    ]
    messages = [e.text for e in timeline.events if e.kind == "message"]
    assert messages[1] == "assistant: asks for lookup"  # the model asked
    assert messages[-2:] == [
        "assistant (direct call): call_tool lookup",  # the application did
        "tool (direct call): Oslo is sunny",
    ]
