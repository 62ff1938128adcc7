"""The one check that a tool call and its result stay together.

A *tool group* is an assistant message holding ``ToolCallBlock``s followed by
the tool messages that answer them. A conversation is well paired when every
call of a group is answered inside that group and every tool result answers a
call of its group. Context managers cut only between groups; model adapters
call ``repair_pairing`` before a request so a provider never sees an orphan.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass

from tenxgraph.core.state.message import Message, new_message_id
from tenxgraph.core.state.message_block import ContentBlock, ToolCallBlock, ToolResultBlock

__all__ = [
    "NOT_RUN_TEXT",
    "SYNTHETIC_RESULT_TEXT",
    "PairingViolation",
    "answer_skipped_calls",
    "group_starts",
    "is_paired",
    "last_tool_request",
    "pairing_violations",
    "repair_pairing",
    "unanswered_calls",
]

SYNTHETIC_RESULT_TEXT = "[tenxgraph: no result was recorded for this tool call]"
"""Output of the result ``repair_pairing`` adds for a call that has none."""

NOT_RUN_TEXT = "[tenxgraph: not run: the conversation went on before this call was answered]"
"""Output of the failed result ``answer_skipped_calls`` stores for a call a later message
skipped past (a client resending history with a call it never answered)."""


@dataclass(frozen=True, slots=True)
class PairingViolation:
    """One broken pair: ``index`` is the message where it shows."""

    index: int
    call_id: str
    problem: str

    def __str__(self) -> str:
        return f"message {self.index}: {self.problem} (call id {self.call_id!r})"


def pairing_violations(
    messages: Sequence[Message], *, allow_pending_tail: bool = False
) -> list[PairingViolation]:
    """List every call without a result and every result without a call.

    With ``allow_pending_tail``, calls of the last group that are not answered
    yet are accepted: that is the state between a model turn and its tools.
    """
    violations: list[PairingViolation] = []
    pending: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.role == "tool":
            for block in message.content:
                if isinstance(block, ToolResultBlock) and pending.pop(block.call_id, None) is None:
                    violations.append(
                        PairingViolation(index, block.call_id, "tool result without its call")
                    )
            continue
        _report_unanswered(pending, violations)
        if message.role == "assistant":
            pending = {call.id: index for call in message.tool_calls()}
    if not allow_pending_tail:
        _report_unanswered(pending, violations)
    return violations


def is_paired(messages: Sequence[Message], *, allow_pending_tail: bool = False) -> bool:
    """True when ``pairing_violations`` finds nothing."""
    return not pairing_violations(messages, allow_pending_tail=allow_pending_tail)


def group_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes where a cut may fall: every message that is not a tool message."""
    return [index for index, message in enumerate(messages) if message.role != "tool"]


def last_tool_request(messages: Sequence[Message]) -> Message | None:
    """The assistant message the last tool group answers, or None if the messages end otherwise.

    The group is that message and the tool messages after it, up to the end:
    a conversation ending in a user message has no group left open.
    """
    for message in reversed(messages):
        if message.role == "assistant":
            return message
        if message.role != "tool":
            break  # pragma: no mutate (a "return" here returns the same None)
    return None


def unanswered_calls(messages: Sequence[Message]) -> list[ToolCallBlock]:
    """The calls of the last tool group that have no result yet, in call order.

    The runtime runs these when a thread continues, closes them as
    interrupted when it moves on, and recognises a pause for remote calls by them.
    """
    asked = last_tool_request(messages)
    calls = [] if asked is None else asked.tool_calls()
    if not calls:
        return []
    answered: set[str] = set()
    for message in reversed(messages):  # the group's results follow its call
        if message.role != "tool":
            break
        answered.update(b.call_id for b in message.content if isinstance(b, ToolResultBlock))
    return [call for call in calls if call.id not in answered]


def repair_pairing(messages: Sequence[Message]) -> list[Message]:
    """Return ``messages`` with orphan results dropped and missing results added.

    A missing result becomes a failed ``ToolResultBlock`` whose output is
    ``SYNTHETIC_RESULT_TEXT`` and whose message carries
    ``metadata={"synthetic": True}``. Well-paired input is returned unchanged.
    """
    if is_paired(messages):
        return list(messages)
    repaired: list[Message] = []
    pending: dict[str, None] = {}
    for message in messages:
        if message.role == "tool":
            kept: list[ContentBlock] = []
            for block in message.content:
                if not isinstance(block, ToolResultBlock):
                    kept.append(block)
                elif block.call_id in pending:
                    del pending[block.call_id]
                    kept.append(block)
            if any(isinstance(block, ToolResultBlock) for block in kept):
                repaired.append(message.model_copy(update={"content": kept}))
            continue
        repaired.extend(_synthetic_results(pending))
        pending = dict.fromkeys(call.id for call in message.tool_calls())
        repaired.append(message)
    repaired.extend(_synthetic_results(pending))
    return repaired


def answer_skipped_calls(
    messages: list[Message],
    *,
    settled: Container[object] = (),
    new_id: Callable[[], str | int] = new_message_id,
) -> list[Message]:
    """``messages`` with a failed result for every call that a later message skips past.

    A call of an assistant message whose group (the tool messages right
    after it) holds no result for it, while a message that is not a tool
    message follows, gets a tool message with a failed ``ToolResultBlock``
    saying ``NOT_RUN_TEXT`` (metadata ``{"not_run": True}``) at the end of
    its group, so the log stays paired where it is stored, not only in the
    requests built from it. The last group's calls are left alone (they may
    still run), and so are the calls of messages whose id is in ``settled``
    (already stored: they were answered then). Returns ``messages`` itself
    when nothing is missing.
    """
    fixed: list[Message] | None = None
    pending: list[str] = []
    for index, message in enumerate(messages):
        if message.role == "tool":
            answered = {b.call_id for b in message.content if isinstance(b, ToolResultBlock)}
            pending = [call_id for call_id in pending if call_id not in answered]
        else:
            if pending:
                fixed = list(messages[:index]) if fixed is None else fixed
                fixed.extend(_not_run(call_id, new_id) for call_id in pending)
            pending = []
            if message.role == "assistant" and message.message_id not in settled:
                pending = [call.id for call in message.tool_calls()]
        if fixed is not None:
            fixed.append(message)
    return messages if fixed is None else fixed


def _not_run(call_id: str, new_id: Callable[[], str | int]) -> Message:
    result = ToolResultBlock(call_id=call_id, output=NOT_RUN_TEXT, is_error=True, status="failed")
    return Message.tool_message([result], new_id(), metadata={"not_run": True})


def _report_unanswered(pending: dict[str, int], violations: list[PairingViolation]) -> None:
    for call_id, index in pending.items():
        violations.append(PairingViolation(index, call_id, "tool call without its result"))
    pending.clear()


def _synthetic_results(pending: dict[str, None]) -> list[Message]:
    results = [
        Message.tool_message(
            [
                ToolResultBlock(
                    call_id=call_id, output=SYNTHETIC_RESULT_TEXT, is_error=True, status="failed"
                )
            ],
            metadata={"synthetic": True},
        )
        for call_id in pending
    ]
    pending.clear()
    return results
