from __future__ import annotations

from tenxgraph.core.state import Message, ToolCallBlock, ToolResultBlock
from tenxgraph.core.state.pairing import (
    SYNTHETIC_RESULT_TEXT,
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
