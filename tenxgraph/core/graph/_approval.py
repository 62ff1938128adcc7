"""``HumanApproval``: a person approves, edits or rejects chosen tool calls before they run.

The middleware reviews the model's answer (``after_model``) and the calls an
input may end in (``before_agent``, the path ``create_agent`` runs first).
When calls of the chosen tools are pending, it calls ``interrupt`` once with
all of them::

    {"type": "tool_approval",
     "calls": [{"id": "c1", "name": "delete_file", "args": {...}}],
     "allowed": ["approve", "edit", "reject"],
     "description": "..."}                        # when one was given

and the resume answers each listed call, in order::

    {"decisions": [{"type": "approve"},
                   {"type": "edit", "args": {...}},
                   {"type": "reject", "message": "not that file"}]}

(a plain ``"approve"`` or ``"reject"`` answers every call alike). An answer
that does not fit is not an error of the run: the same calls are asked for
again, with ``"error"`` saying what was wrong.

An edit replaces the assistant message in the context (``ReplaceMessage``,
the log keeps the original), so the model reads the arguments that ran; the
message's ``metadata["tool_approval"]`` keeps each edited call's original
arguments. A rejection settles the call without running it: its result is
put in the tool ledger (the runtime's record of settled calls), so the
``ToolNode`` answers it in its place, in call order, and the stored log
stays paired; the model reads the person's message as a failed result.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Literal

from tenxgraph.core.graph._interrupt import interrupt
from tenxgraph.core.graph._middleware import AgentMiddleware
from tenxgraph.core.graph._tool_node import ToolOutcome
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.edits import ReplaceMessage
from tenxgraph.core.state.json_policy import check_json_data
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ContentBlock, ToolCallBlock
from tenxgraph.core.state.pairing import last_tool_request, unanswered_calls
from tenxgraph.core.state.tool_arguments import invalid_tool_args
from tenxgraph.errors import ConfigError

__all__ = ["APPROVAL_TYPE", "Decision", "HumanApproval", "rejection_text"]

APPROVAL_TYPE = "tool_approval"
"""The ``type`` of the interrupt value ``HumanApproval`` pauses with."""

Decision = Literal["approve", "edit", "reject"]
DECISIONS: tuple[Decision, ...] = ("approve", "edit", "reject")
DEFAULT_REJECTION = "the user rejected this call"


def rejection_text(name: str, message: str) -> str:
    """What the model reads for a rejected call of tool ``name``."""
    return f"tool {name!r} was not run: {message}"


class HumanApproval(AgentMiddleware):
    """Pause before calls of the chosen tools until a person approves, edits or rejects them."""

    def __init__(
        self,
        tools: Iterable[str] | Callable[[ToolCallBlock], bool],
        *,
        allowed: Collection[Decision] = DECISIONS,
        description: str | None = None,
        name: str = "HumanApproval",
    ) -> None:
        """``tools`` are tool names, or a predicate of a call (``call.name``, ``call.args``).

        ``allowed`` limits what the person may answer (``approve`` always is);
        ``description`` goes into the interrupt value, for the person.
        """
        if callable(tools):
            self._wants: Callable[[ToolCallBlock], bool] = tools
        else:
            names = frozenset(tools)
            if not names or not all(isinstance(n, str) for n in names):
                raise ConfigError("HumanApproval(tools=...) needs tool names or a predicate")
            self._wants = lambda call: call.name in names
        unknown = set(allowed) - set(DECISIONS)
        if unknown or "approve" not in allowed:
            raise ConfigError(
                f"HumanApproval(allowed=...) takes {list(DECISIONS)} and needs 'approve', "
                f"got {sorted(allowed)}"
            )
        self.allowed = [d for d in DECISIONS if d in allowed]
        self.description = description
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def before_agent(self, state: AgentState) -> list[ReplaceMessage] | None:
        """Review the calls an input ends in: ``create_agent`` runs them before the model."""
        return self._review(state)

    def after_model(self, state: AgentState) -> list[ReplaceMessage] | None:
        """Review the calls of the model's answer."""
        return self._review(state)

    def _review(self, state: AgentState) -> list[ReplaceMessage] | None:
        asked = last_tool_request(state.context)
        if asked is None:
            return None
        ledger = state.execution_meta.tool_ledger
        refused = invalid_tool_args(asked)
        calls = [
            call
            for call in unanswered_calls(state.context)
            if call.id not in ledger and call.id not in refused and self._wants(call)
        ]
        if not calls:
            return None
        decisions = self._ask(calls)
        edited: dict[str, dict[str, Any]] = {}
        for call, decision in zip(calls, decisions, strict=True):
            if decision["type"] == "edit":
                edited[call.id] = decision["args"]
            elif decision["type"] == "reject":
                text = rejection_text(call.name, decision.get("message") or DEFAULT_REJECTION)
                ledger[call.id] = ToolOutcome(text, is_error=True).storable(call.name).entry()
        return [ReplaceMessage(_with_args(asked, edited))] if edited else None

    def _ask(self, calls: list[ToolCallBlock]) -> list[dict[str, Any]]:
        """Interrupt until the answer fits the calls; the decisions, one per call."""
        value: dict[str, Any] = {
            "type": APPROVAL_TYPE,
            "calls": [{"id": c.id, "name": c.name, "args": c.args} for c in calls],
            "allowed": list(self.allowed),
        }
        if self.description:
            value["description"] = self.description
        while True:
            answer = interrupt(value)
            decisions, problem = self._read(answer, calls)
            if problem is None:
                return decisions
            value = {**value, "error": problem}

    def _read(
        self, answer: Any, calls: Sequence[ToolCallBlock]
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The decisions of ``answer``, or the problem to show the person."""
        if answer in DECISIONS:
            answer = {"decisions": [{"type": answer}] * len(calls)}
        listed = answer.get("decisions") if isinstance(answer, dict) else None
        if not isinstance(listed, list) or len(listed) != len(calls):
            return [], (
                f"answer with {{'decisions': [...]}}, one decision per call ({len(calls)}), "
                "or 'approve' / 'reject' for all"
            )
        for index, (call, decision) in enumerate(zip(calls, listed, strict=True)):
            problem = self._check(call, decision)
            if problem is not None:
                return [], f"decisions[{index}] (call {call.id!r}): {problem}"
        return listed, None

    def _check(self, call: ToolCallBlock, decision: Any) -> str | None:
        kind = decision.get("type") if isinstance(decision, dict) else None
        if kind not in self.allowed:
            return f"'type' must be one of {self.allowed}, got {kind!r}"
        if decision.get("call_id", call.id) != call.id:
            return f"call_id {decision['call_id']!r} is not this call"
        if kind == "edit":
            args = decision.get("args")
            if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
                return "an edit needs 'args', a JSON object"
            try:
                check_json_data(args, "args")
            except ValueError as exc:
                return str(exc)
        message = decision.get("message")
        if kind == "reject" and message is not None and not isinstance(message, str):
            return "a rejection's 'message' must be text"
        return None


def _with_args(asked: Message, edited: dict[str, dict[str, Any]]) -> Message:
    """``asked`` with the edited calls' arguments; the originals go in its metadata."""
    content: list[ContentBlock] = []
    originals: dict[str, Any] = {}
    for block in asked.content:
        if isinstance(block, ToolCallBlock) and block.id in edited:
            originals[block.id] = {"decision": "edit", "original_args": block.args}
            block = block.model_copy(update={"args": edited[block.id]})
        content.append(block)
    review = {**asked.metadata.get("tool_approval", {}), **originals}
    return asked.model_copy(
        update={"content": content, "metadata": {**asked.metadata, "tool_approval": review}}
    )
