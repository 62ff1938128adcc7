"""The pairing promises at their edges: mixed tool messages, duplicate results, group boundaries.

Each test states what a caller relies on (an adapter sending the repaired list, a
context manager cutting at group starts); they were written against the
mutants ``make mutation`` found surviving (tests/README.md).
"""

from __future__ import annotations

from tenxgraph.core.state import Message, TextBlock, ToolCallBlock, ToolResultBlock
from tenxgraph.core.state.pairing import (
    NOT_RUN_TEXT,
    SYNTHETIC_RESULT_TEXT,
    answer_skipped_calls,
    group_starts,
    is_paired,
    last_tool_request,
    pairing_violations,
    repair_pairing,
    unanswered_calls,
)


def user(text: str = "q") -> Message:
    return Message.text_message(text)


def system(text: str = "be brief") -> Message:
    return Message.text_message(text, role="system")


def answer(text: str = "a") -> Message:
    return Message.text_message(text, role="assistant")


def call(*ids: str) -> Message:
    return Message(role="assistant", content=[ToolCallBlock(id=i, name="t") for i in ids])


def results(*ids: str) -> Message:
    return Message.tool_message([ToolResultBlock(call_id=i, output=f"out {i}") for i in ids])


def result_ids(message: Message) -> list[str]:
    return [block.call_id for block in message.tool_results()]


def test_violations_name_the_message_where_each_shows() -> None:
    conv = [user(), call("a", "b"), results("a"), user("next"), results("x")]
    assert [str(v) for v in pairing_violations(conv)] == [
        "message 1: tool call without its result (call id 'b')",
        "message 4: tool result without its call (call id 'x')",
    ]


def test_a_result_after_a_system_message_no_longer_answers_the_call() -> None:
    conv = [user(), call("a"), system(), results("a")]
    assert [(v.index, v.call_id) for v in pairing_violations(conv)] == [(1, "a"), (3, "a")]
    assert not is_paired(conv, allow_pending_tail=True)


def test_a_second_result_for_one_call_is_an_orphan() -> None:
    conv = [user(), call("a"), results("a"), results("a")]
    assert [(v.index, v.problem) for v in pairing_violations(conv)] == [
        (3, "tool result without its call")
    ]


def test_group_starts_are_every_message_but_tool_messages() -> None:
    conv = [system(), user(), call("a", "b"), results("a"), results("b"), answer(), user()]
    assert group_starts(conv) == [0, 1, 2, 5, 6]
    assert group_starts([]) == []


def test_last_tool_request_is_the_open_group_only() -> None:
    asked = call("a")
    assert last_tool_request([user(), asked]) is asked
    assert last_tool_request([user(), asked, results("a")]) is asked
    assert last_tool_request([asked, results("a"), user("next")]) is None
    assert last_tool_request([user()]) is None
    assert last_tool_request([]) is None


def test_unanswered_calls_read_only_the_last_group() -> None:
    asked = call("a", "b", "c")
    assert [c.id for c in unanswered_calls([user(), asked, results("b")])] == ["a", "c"]
    # an earlier group's result for the same id does not answer this group's call
    again = [user(), call("a"), results("a"), user("again"), call("a", "b")]
    assert [c.id for c in unanswered_calls(again)] == ["a", "b"]
    assert unanswered_calls([user(), asked, results("a", "b", "c")]) == []
    assert unanswered_calls([user(), answer()]) == []
    assert unanswered_calls([user()]) == []


def test_repair_drops_an_orphan_result_sharing_a_message_with_a_real_one() -> None:
    """The adapter's guarantee: no orphan reaches a provider, even inside a mixed message."""
    note = TextBlock(text="both tools ran")
    mixed = Message.tool_message(
        [
            ToolResultBlock(call_id="a", output="real"),
            ToolResultBlock(call_id="ghost", output="orphan"),
            note,
        ]
    )
    repaired = repair_pairing([user(), call("a"), mixed])
    assert is_paired(repaired)
    assert [m.role for m in repaired] == ["user", "assistant", "tool"]
    assert result_ids(repaired[2]) == ["a"]
    assert note in repaired[2].content  # what is not a result stays
    assert repaired[2].message_id == mixed.message_id
    assert result_ids(mixed) == ["a", "ghost"]  # the input is not modified


def test_repair_keeps_one_result_per_call_and_drops_messages_left_empty() -> None:
    conv = [user(), call("a"), results("a"), results("a"), answer()]
    repaired = repair_pairing(conv)
    assert [m.role for m in repaired] == ["user", "assistant", "tool", "assistant"]
    assert repaired[2] == conv[2]
    assert is_paired(repaired)


def test_repair_answers_a_call_skipped_by_the_next_turn_where_it_was_asked() -> None:
    conv = [user(), call("a", "b"), results("b"), user("next"), answer()]
    repaired = repair_pairing(conv)
    assert [m.role for m in repaired] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    [synthetic] = repaired[3].tool_results()
    assert (synthetic.call_id, synthetic.output, synthetic.is_error, synthetic.status) == (
        "a",
        SYNTHETIC_RESULT_TEXT,
        True,
        "failed",
    )
    assert repaired[3].metadata == {"synthetic": True}


def test_repair_of_a_paired_list_is_an_equal_new_list() -> None:
    conv = [user(), call("a"), results("a"), answer()]
    repaired = repair_pairing(conv)
    assert repaired == conv and repaired is not conv


def test_answer_skipped_calls_returns_the_list_itself_when_nothing_is_missing() -> None:
    conv = [user(), call("a"), results("a"), user("next"), call("b")]
    assert answer_skipped_calls(conv) is conv


def test_answer_skipped_calls_leaves_settled_messages_alone() -> None:
    asked = call("a")
    conv = [user(), asked, user("next")]
    assert answer_skipped_calls(conv, settled={asked.message_id}) is conv
    fixed = answer_skipped_calls(conv, new_id=lambda: "n1")
    assert [m.role for m in fixed] == ["user", "assistant", "tool", "user"]
    [added] = fixed[2].tool_results()
    assert (added.call_id, added.output, added.status) == ("a", NOT_RUN_TEXT, "failed")


def test_answer_skipped_calls_counts_results_across_the_whole_group() -> None:
    conv = [user(), call("a", "b"), results("a"), results("b"), user("next"), call("c")]
    assert answer_skipped_calls(conv) is conv
    skipped = [user(), call("a", "b", "c"), results("b"), answer()]
    fixed = answer_skipped_calls(skipped, new_id=lambda: "n")
    assert [result_ids(m) for m in fixed if m.role == "tool"] == [["b"], ["a"], ["c"]]
    assert fixed[-1] is skipped[-1]


def test_a_pending_tail_is_a_violation_unless_allowed() -> None:
    conv = [user(), call("a")]
    assert [str(v) for v in pairing_violations(conv)] == [
        "message 1: tool call without its result (call id 'a')"
    ]
    assert pairing_violations(conv, allow_pending_tail=True) == []


def test_every_skipped_group_is_answered_not_only_the_last() -> None:
    conv = [user(), call("a"), user("next"), call("b"), answer(), call("c")]
    fixed = answer_skipped_calls(conv, new_id=lambda: "n")
    assert [m.role for m in fixed] == [
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
        "assistant",
    ]
    assert [result_ids(m) for m in fixed if m.role == "tool"] == [["a"], ["b"]]
    assert is_paired(fixed, allow_pending_tail=True)
