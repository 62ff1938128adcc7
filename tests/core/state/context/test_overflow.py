from __future__ import annotations

import json

import pytest

from tenxgraph.core.state import (
    MessageContextManager,
    ToolResultBlock,
    areduce_on_overflow,
    is_paired,
    truncate_largest_tool_results,
)

from .convo import assistant, calls, ids, results, state_of, system, tool_turn, user


def outputs(messages: list) -> list[object]:  # type: ignore[type-arg]
    return [b.output for m in messages for b in m.content if isinstance(b, ToolResultBlock)]


def test_the_largest_outputs_are_shortened_first() -> None:
    history = [
        user("q"),
        calls("big", "mid", "small"),
        results("big", output="B" * 10_000),
        results("mid", output="M" * 3_000),
        results("small", output="S" * 100),
    ]
    before = [m.model_dump() for m in history]
    shortened = truncate_largest_tool_results(history)
    big, mid, small = outputs(shortened)
    assert isinstance(big, str) and isinstance(mid, str)
    assert big.startswith("B" * 375) and big.endswith("B" * 125)  # the start and the end stay
    assert "[tenxgraph: tool output truncated from 10000 characters" in big
    assert mid == "M" * 3_000  # the cap chosen still fits it
    assert small == "S" * 100
    assert len(big) + len(mid) + len(small) <= (10_000 + 3_000 + 100) // 2 + 100
    assert shortened[2].metadata["truncated"] is True
    assert "truncated" not in shortened[3].metadata
    assert shortened[3] is history[3] and shortened[0] is history[0]
    assert [m.model_dump() for m in history] == before  # nothing edited in place
    assert is_paired(shortened)


def test_several_large_outputs_share_one_cap() -> None:
    history = [calls("a", "b"), results("a", output="A" * 8_000), results("b", output="B" * 6_000)]
    a, b = outputs(truncate_largest_tool_results(history, keep_ratio=0.5))
    assert isinstance(a, str) and isinstance(b, str)
    assert a.startswith("A" * 2_600) and b.startswith("B" * 2_600)
    assert "[tenxgraph: tool output truncated from 8000 characters;" in a


def test_json_outputs_are_shortened_as_text() -> None:
    data = {"rows": list(range(3_000))}
    (short,) = outputs(truncate_largest_tool_results([calls("j"), _json_result("j", data)]))
    assert isinstance(short, str)
    assert short.startswith(json.dumps(data)[:500]) and "truncated from" in short


def test_small_outputs_are_left_alone() -> None:
    history = [calls("a"), results("a", output="x" * 400)]
    assert all(a is b for a, b in zip(truncate_largest_tool_results(history), history, strict=True))
    with pytest.raises(ValueError, match="keep_ratio"):
        truncate_largest_tool_results(history, keep_ratio=1.5)


async def test_without_a_manager_overflow_recovery_only_shortens_tool_outputs() -> None:
    history = [*tool_turn(0), user("read it"), calls("f"), results("f", output="z" * 20_000)]
    state = state_of(history)
    assert await areduce_on_overflow(state, None)
    assert ids(state.context) == ids(history)  # no turn dropped
    assert len(str(outputs(state.context)[-1])) < 11_000
    assert is_paired(state.context)


async def test_with_a_manager_its_reduction_runs() -> None:
    history = [m for n in range(4) for m in tool_turn(n)]
    state = state_of(history)
    manager = MessageContextManager(max_messages=10)
    assert await areduce_on_overflow(state, manager)
    assert ids(state.context) == ids(history[8:])  # half of the 4 turns
    assert manager.reduce_context(state)
    assert ids(state.context) == ids(history[12:])
    # one turn left: its older exchanges go, the question and the last answer stay
    assert await areduce_on_overflow(state, manager)
    assert ids(state.context) == ids([history[12], history[15]])
    assert not await areduce_on_overflow(state, manager)  # nothing more to remove


async def test_tool_outputs_are_shortened_before_any_turn_is_dropped() -> None:
    turn = [*tool_turn(0), user("read"), calls("f"), results("f", output="z" * 20_000)]
    state = state_of(turn)
    assert await areduce_on_overflow(state, MessageContextManager())
    assert ids(state.context) == ids(turn)
    assert state.context[-1].metadata["truncated"] is True


def _json_result(call_id: str, data: object):  # type: ignore[no-untyped-def]
    from tenxgraph.core.state import Message

    return Message.tool_message([ToolResultBlock(call_id=call_id, output=data)])  # type: ignore[arg-type]


def test_shortening_again_keeps_the_original_size_in_the_marker() -> None:
    history = [user("q"), calls("a", "b"), results("a", output="A" * 20_000), results("b")]
    once = truncate_largest_tool_results(history)
    twice = truncate_largest_tool_results(once)
    first, second = outputs(once)[0], outputs(twice)[0]
    assert isinstance(first, str) and isinstance(second, str)
    assert len(second) < len(first) < 20_000
    for text in (first, second):
        assert text.count("[tenxgraph: tool output truncated from 20000 characters;") == 1
        assert text.startswith("A" * 100) and text.endswith("A" * 100)
    kept = second.count("A")
    assert f"; {20_000 - kept} omitted]" in second  # the omitted count is against the original


def test_old_media_in_tool_results_becomes_a_placeholder() -> None:
    from tenxgraph.core.state import ImageBlock, MediaRef, Message, TextBlock
    from tenxgraph.core.state.context.overflow import replace_old_media

    picture = MediaRef(kind="url", url="https://example.com/chart.png", mime_type="image/png")
    old = Message.tool_message(
        [ToolResultBlock(call_id="p", output=[TextBlock(text="see"), ImageBlock(media=picture)])]
    )
    last = Message.tool_message([ToolResultBlock(call_id="s", output=picture)])
    history = [user("q"), calls("p"), old, calls("s"), last]
    state = state_of(history)
    assert replace_old_media(state)
    replaced = state.context[2].tool_results()[0].output
    assert isinstance(replaced, list) and replaced[0].text == "see"  # type: ignore[union-attr]
    assert "image 'https://example.com/chart.png' removed" in replaced[1].text  # type: ignore[union-attr]
    assert state.context[2].metadata["media_removed"] is True
    assert state.context[4] is last  # the last exchange keeps its media
    assert not replace_old_media(state)  # nothing left to replace


def test_overflow_in_one_long_turn_drops_the_older_half_of_its_exchanges() -> None:
    """Three tool exchanges and an answer: the two newer exchanges stay whole (issue 37)."""
    exchanges = [
        [calls("a"), results("a")],
        [calls("b", "c"), results("c", "b")],
        [calls("d", text="one more"), results("d")],
        [assistant("done")],
    ]
    history = [system(), user("long job"), *[m for group in exchanges for m in group]]
    state = state_of(history)
    assert MessageContextManager().reduce_context(state)
    assert ids(state.context) == ids(history[:2] + exchanges[2] + exchanges[3])
    assert is_paired(state.context)
    assert MessageContextManager().reduce_context(state)  # two left: the answer stays
    assert ids(state.context) == ids(history[:2] + exchanges[3])
    assert not MessageContextManager().reduce_context(state)
