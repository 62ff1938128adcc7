"""A session loaded from storage: its size estimate and its map of seqs.

Loading takes the warm cache's size estimate from the stored JSON lengths
(no walk over the messages) and maps the loaded messages to their seqs only
when a save needs it (after a removal, say): a turn that only appends never does.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.graph._session import ThreadSession, approx_bytes
from tenxgraph.core.state import AgentState, Message, RemoveMessage, ThreadKey
from tenxgraph.core.state.message_block import TextBlock, ToolCallBlock
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadWrite

KEY = ThreadKey("t")


def history() -> list[Message]:
    messages = [Message.text_message(f"question {i} " * (i % 7)) for i in range(50)]
    messages.append(Message.text_message("z" * 20_000, role="assistant"))
    messages.append(
        Message.tool_message(
            [TextBlock(text="calling"), ToolCallBlock(id="c1", name="f", args={"q": "x" * 500})]
        )
    )
    return messages


async def test_the_size_estimate_of_a_loaded_thread_comes_from_its_stored_json(
    tmp_path: Path,
) -> None:
    checkpointer = SqliteCheckpointer(tmp_path / "db.sqlite")
    messages = history()
    values = AgentState().model_dump(mode="json", exclude={"context"})
    await checkpointer.asave(
        KEY, ThreadWrite(0, messages, values, [(0, len(messages))], node="seed", step=0)
    )
    session = ThreadSession(checkpointer, KEY)
    state = await session.load(AgentState)
    assert state is not None and len(state.context) == len(messages)
    walked = sum(map(approx_bytes, state.context))
    assert abs(session.approx_bytes - walked) < 0.05 * walked
    await checkpointer.aclose()


def drop_first(state: AgentState) -> list[object]:
    return [RemoveMessage(state.context[0].message_id), Message.text_message("ok", "assistant")]


def test_a_removal_after_a_cold_load_keeps_the_loaded_messages_seqs(tmp_path: Path) -> None:
    graph = StateGraph(AgentState)
    graph.add_node("drop", drop_first)
    graph.set_entry_point("drop")
    path = tmp_path / "db.sqlite"
    config = {"thread_id": "t"}
    for turn in range(3):  # a new graph each turn, without a warm copy: every turn loads
        app = graph.compile(SqliteCheckpointer(path), warm_threads=0)
        app.invoke({"messages": [Message.text_message(f"turn {turn}")]}, config)
    state = app.get_state(config)
    assert [m.text() for m in state.context] == ["ok", "turn 2", "ok"]
    stored = asyncio.run(SqliteCheckpointer(path).aload(KEY))
    # each turn logged its question and answer once; the kept "ok" (seq 3) was not logged again
    assert stored is not None and stored.log_length == 6
    assert stored.window == [(3, 6)]
