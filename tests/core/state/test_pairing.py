from __future__ import annotations

from tenxgraph.core.state import Message, ToolCallBlock, ToolResultBlock
from tenxgraph.core.state.pairing import (
    NOT_RUN_TEXT,
    SYNTHETIC_RESULT_TEXT,
    answer_skipped_calls,
    is_paired,
    pairing_violations,
    repair_pairing,
)


def call(*ids: str) -> Message:
    return Message(role="assistant", content=[ToolCallBlock(id=i, name="t") for i in ids])


def result(i: str) -> Message:
    return Message.tool_message([ToolResultBlock(call_id=i, output="ok")])


def test_paired_conversation() -> None:
    conv = [Message.text_message("q"), call("a", "b"), result("a"), result("b")]
    assert is_paired(conv)


def test_orphans_are_reported() -> None:
    assert [str(v) for v in pairing_violations([Message.text_message("q"), result("a")])] == [
        "message 1: tool result without its call (call id 'a')"
    ]
    missing = [call("a", "b"), result("a"), Message.text_message("next")]
    assert [v.call_id for v in pairing_violations(missing)] == ["b"]


def test_pending_tail_allowed_only_on_request() -> None:
    conv = [Message.text_message("q"), call("a")]
    assert not is_paired(conv)
    assert is_paired(conv, allow_pending_tail=True)


def test_repair_adds_marked_results_and_drops_orphans() -> None:
    conv = [result("x"), Message.text_message("q"), call("a", "b"), result("b")]
    repaired = repair_pairing(conv)
    assert is_paired(repaired)
    synthetic = [m for m in repaired if m.metadata.get("synthetic")]
    assert len(synthetic) == 1
    block = synthetic[0].content[0]
    assert isinstance(block, ToolResultBlock)
    assert block.call_id == "a" and block.is_error and block.output == SYNTHETIC_RESULT_TEXT
    assert repair_pairing(repaired) == repaired


def test_skipped_calls_get_a_not_run_result_at_the_end_of_their_group() -> None:
    first, second = call("a", "b"), call("c")
    conv = [result("x"), first, result("b"), Message.text_message("next"), second]
    fixed = answer_skipped_calls(conv, new_id=lambda: "r1")
    assert [m.role for m in fixed] == ["tool", "assistant", "tool", "tool", "user", "assistant"]
    [added] = fixed[3].tool_results()
    assert (added.call_id, added.output, added.is_error) == ("a", NOT_RUN_TEXT, True)
    assert fixed[3].message_id == "r1" and fixed[3].metadata == {"not_run": True}
    assert fixed[-1] is second  # the last group's calls may still run
    assert answer_skipped_calls(conv, settled={first.message_id}) is conv
    paired = [first, result("a"), result("b"), Message.text_message("next")]
    assert answer_skipped_calls(paired) is paired
