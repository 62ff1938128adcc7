"""Remote tools: declared here (schema only), run by the client (a browser), answered by a resume.

When the model's message calls remote tools, the ``ToolNode`` runs the local
calls of that message as usual, then pauses the run (an interrupt inside the
node, saved like any other) with a JSON value listing the calls the client
must run, each with its deadline:

.. code-block:: json

    {"type": "remote_tool_calls",
     "calls": [{"call": {"type": "remote_tool_call", "id": "c1", "name": "pick_file",
                         "args": {}, "tool_type": "remote"},
                "deadline": "2026-12-01T10:00:00.000000Z", "timeout": 300.0,
                "idempotency_key": "3f1c..."}]}

The client answers with ``invoke({"resume": {"tool_results": [{"call_id": "c1",
"output": ..., "is_error": false}]}}, config)``. Decisions:

- The pause is raised as a ``RemoteToolsPause`` and saved with
  ``interrupt_kind == "remote_tool_calls"``; only that marks a thread as
  waiting for remote results. A user's ``interrupt(value)`` is ``inside``
  whatever ``value`` holds, even a copy of the value above. A pause saved
  before that kind existed (``inside``, with the value above) is still
  recognised, from the state: only when every call it lists is one the
  thread's last tool group left unanswered (``_legacy_pause``). The words of
  the exchange (the type, the kind, the result entries) are shared with the
  server and the client in ``tenxgraph.core.state.remote_calls``.
- The answers are checked before anything changes: an unknown or repeated
  ``call_id``, output that is not JSON data or a malformed entry raise
  ``StateError``, and the stored thread stays as it was.
- Partial answers are allowed: the answered calls are kept (in the tool
  ledger) and the run pauses again at once for the others, with their
  deadlines unchanged.
- A call still unanswered after its deadline is answered by the next
  continuation (a resume without it, ``invoke(None)``) with a failed result
  "timed out after N s"; ``invoke(None)`` before every deadline passed pauses
  again with what is still pending. New messages instead move the thread on:
  unanswered calls get the usual failed "interrupted" result (timed out if
  past their deadline), so the stored log stays paired.
- The stored assistant message keeps the model's ``ToolCallBlock``s; the
  ``RemoteToolCallBlock``s exist only in the interrupt value sent to the
  client (the spec: "sent by the server to the client").
- Remote calls are not passed through ``wrap_tool_call`` middleware and are
  never started by the runtime, so ``max_starts`` does not count them.
- Each entry carries the call's idempotency key, the one a local tool would
  get for that call: the same in every pause that lists the call, so a
  client that passes it on is safe when the call reaches it twice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from tenxgraph.core.graph._interrupt import GraphInterrupt
from tenxgraph.core.graph._json_schema import SchemaProblem, check_schema, validate
from tenxgraph.core.graph._tools import Tool
from tenxgraph.core.graph._tracing import remote_round_trip, w3c_headers
from tenxgraph.core.llm.base import ToolSpec
from tenxgraph.core.state.json_policy import check_json_data, storable_data
from tenxgraph.core.state.message_block import RemoteToolCallBlock, ToolCallBlock
from tenxgraph.core.state.pairing import unanswered_calls
from tenxgraph.core.state.remote_calls import (
    REMOTE_CALLS_KIND,
    REMOTE_CALLS_TYPE,
    TOOL_RESULTS_KEY,
    remote_tool_result,
)
from tenxgraph.errors import GraphBuildError, StateError, ToolArgumentsError, ToolError

if TYPE_CHECKING:
    from tenxgraph.core.state.agent_state import AgentState, ExecMeta
    from tenxgraph.core.state.message import Message

__all__ = [
    "REMOTE_CALLS_KIND",
    "REMOTE_CALLS_TYPE",
    "PendingRemoteCall",
    "RemoteTool",
    "RemoteToolsPause",
    "check_remote_tools_resumable",
    "pending_remote_calls",
    "remote_pause",
    "remote_tool_result",
    "settle_remote_input",
]

_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


class RemoteTool(Tool):
    """A tool the client runs (e.g. in the browser): a name, a description and a JSON schema.

    Use it wherever a tool goes (``Agent(tools=...)``, ``create_agent``,
    ``ToolNode``), next to local tools. The model sees ``parameters`` as the
    tool's schema; its arguments are checked against it before the call is
    sent. ``timeout`` (seconds) is how long the client has to answer.
    """

    def __init__(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any] | None = None,
        *,
        timeout: float = 300.0,
    ) -> None:
        super().__init__(_runs_remotely, name=name, description=description or name)
        if not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
            raise ToolError(f"remote tool {name!r}: timeout must be a positive number of seconds")
        self.timeout: float = float(timeout)
        schema = dict(parameters) if parameters is not None else dict(_EMPTY_OBJECT)
        try:
            check_schema(schema)
        except SchemaProblem as exc:
            raise GraphBuildError(f"remote tool {name!r}: parameters: {exc}") from None
        if schema.get("type") != "object":
            raise GraphBuildError(
                f"remote tool {name!r}: parameters must be an object schema "
                f'({{"type": "object", ...}}), got type {schema.get("type")!r}'
            )
        self.parameters = schema

    def spec(self) -> ToolSpec:
        """What the model is told: the declared schema, as given."""
        return ToolSpec(self.name, self.description, dict(self.parameters))

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check the model's arguments against the schema; ``ToolArgumentsError`` lists problems."""
        problems = validate(self.parameters, args)
        if problems:
            raise ToolArgumentsError(
                f"invalid arguments for remote tool {self.name!r}: {'; '.join(problems)}"
            )
        return dict(args)

    def __repr__(self) -> str:
        return f"RemoteTool({self.name!r})"


def _runs_remotely() -> Any:
    """The function of a remote tool: never run in process."""
    raise ToolError("a remote tool runs in the client; it has no function in this process")


@dataclass(frozen=True, slots=True)
class PendingRemoteCall:
    """A remote call waiting for the client's result, and until when."""

    call: RemoteToolCallBlock
    deadline: datetime
    """When the call is answered as timed out (UTC)."""
    timeout: float
    """The remote tool's timeout, in seconds."""
    idempotency_key: str | None = None
    """The call's idempotency key (see docs/tools.md); None only in a pause saved before
    keys existed."""
    trace_context: dict[str, str] | None = None
    """The W3C headers of the span that paused for the call, when traced: its round trip's
    span (``_tracing.remote_round_trip``) is that span's child."""

    def as_json(self) -> dict[str, Any]:
        """The entry of the interrupt value's ``calls``."""
        entry = {
            "call": self.call.model_dump(mode="json"),
            "deadline": self.deadline.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "timeout": self.timeout,
        }
        if self.idempotency_key is not None:
            entry["idempotency_key"] = self.idempotency_key
        if self.trace_context is not None:
            entry["trace_context"] = self.trace_context
        return entry

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PendingRemoteCall:
        """Read an entry written by ``as_json``."""
        deadline = datetime.fromisoformat(data["deadline"]).astimezone(UTC)
        call = RemoteToolCallBlock.model_validate(data["call"])
        trace = data.get("trace_context")
        trace = (
            {k: v for k, v in trace.items() if isinstance(v, str)}
            if isinstance(trace, dict)
            else None
        )
        return cls(call, deadline, data["timeout"], data.get("idempotency_key"), trace)

    def expired(self, now: datetime) -> bool:
        """True once the deadline has passed."""
        return now >= self.deadline

    def timed_out(self) -> dict[str, Any]:
        """The ledger entry of a call the client did not answer in time."""
        text = (
            f"remote tool {self.call.name!r} timed out after {self.timeout:g} s: "
            "the client sent no result"
        )
        return {"output": text, "is_error": True, "update": {}}


class RemoteToolsPause(GraphInterrupt):
    """The ``ToolNode``'s pause for remote calls (raised by the runtime, never by ``interrupt``)."""

    kind = REMOTE_CALLS_KIND


def _as_value(pending: Iterable[PendingRemoteCall]) -> dict[str, Any]:
    return {"type": REMOTE_CALLS_TYPE, "calls": [entry.as_json() for entry in pending]}


def _read_value(value: Any) -> list[PendingRemoteCall]:
    """The pending calls of a remote pause's value (one ``_as_value`` wrote)."""
    return [PendingRemoteCall.from_json(entry) for entry in value.get("calls", [])]


def _paused_calls(state: Any) -> list[PendingRemoteCall] | None:
    """The calls a thread paused for remote results waits for; None for any other thread.

    ``state`` is the thread's state, or only its ``execution_meta``: then a
    pause saved before the kind existed is not recognised (that needs the context).
    """
    meta: ExecMeta = getattr(state, "execution_meta", state)
    if meta.status != "interrupted":
        return None
    if meta.interrupt_kind == REMOTE_CALLS_KIND:
        return _read_value(meta.interrupt_value)
    if meta.interrupt_kind == "inside":
        return _legacy_pause(meta, getattr(state, "context", None))
    return None


def _legacy_pause(meta: ExecMeta, context: list[Message] | None) -> list[PendingRemoteCall] | None:
    """The calls of a remote pause saved as ``inside`` (before ``REMOTE_CALLS_KIND`` existed).

    Taken for one only when its value has the remote pause's type and every
    call it lists is a call of the context's last tool group (same id and name)
    with no result yet, in a message or in the tool ledger: the calls the
    ``ToolNode`` paused on. A user's interrupt that copies such a value lists
    calls the thread does not wait for, so it stays a question.
    """
    value = meta.interrupt_value
    if context is None or not isinstance(value, Mapping) or value.get("type") != REMOTE_CALLS_TYPE:
        return None
    try:
        pending = _read_value(value)
    except (AttributeError, KeyError, TypeError, ValueError):  # not one _as_value wrote
        return None
    unanswered = {call.id: call.name for call in unanswered_calls(context)}
    for entry in pending:
        call = entry.call
        if unanswered.get(call.id) != call.name or call.id in meta.tool_ledger:
            return None
    return pending or None


def check_remote_tools_resumable(nodes: Mapping[str, Any]) -> None:
    """Raise ``GraphBuildError`` if a node has remote tools (for a graph without a checkpointer).

    Without one the pause for their results could never be resumed.
    """
    for name, node in nodes.items():
        tools = getattr(node, "tools", None)
        values = tools.values() if isinstance(tools, Mapping) else ()
        remote = [tool.name for tool in values if isinstance(tool, RemoteTool)]
        if remote:
            raise GraphBuildError(
                f"node {name!r} has remote tool(s) {', '.join(map(repr, remote))}: a graph "
                "with remote tools needs a checkpointer, to resume when the client answers"
            )


def pending_remote_calls(state: Any) -> list[PendingRemoteCall]:
    """The remote calls a thread waits for, with their deadlines; [] when it waits for none.

    ``state`` is a graph state (``graph.get_state(config)``) or its ``execution_meta``.
    """
    return _paused_calls(state) or []


def remote_pause(
    calls: list[ToolCallBlock],
    tools: Mapping[str, Tool],
    meta: ExecMeta,
    answers: list[Any],
    now: datetime | None = None,
    *,
    key_of: Callable[[str], str],
) -> RemoteToolsPause | None:
    """Settle what can be settled of ``calls`` (remote, unanswered); the pause for the rest.

    Bad arguments and passed deadlines become failed results in the tool
    ledger. Deadlines already given (the latest remote answer among the node's
    ``answers``) are kept; a call seen for the first time gets one from its
    tool's timeout. ``key_of`` gives a call's idempotency key from its id.
    None when nothing is left to wait for.
    """
    now = now or datetime.now(UTC)
    known = {entry.call.id: entry for entry in _known_deadlines(answers)}
    waiting: list[PendingRemoteCall] = []
    for call in calls:
        tool = tools[call.name]
        try:
            args = tool.validate(call.args)
        except ValueError as exc:
            meta.tool_ledger[call.id] = {"output": str(exc), "is_error": True, "update": {}}
            continue
        key = key_of(call.id)
        entry = known.get(call.id) or PendingRemoteCall(
            RemoteToolCallBlock(id=call.id, name=call.name, args=args),
            now + timedelta(seconds=float(tool.timeout or 0)),
            float(tool.timeout or 0),
            key,
            w3c_headers(),
        )
        if entry.idempotency_key != key:  # a pause saved before keys existed
            entry = replace(entry, idempotency_key=key)
        if entry.expired(now):
            meta.tool_ledger[call.id] = entry.timed_out()
        else:
            waiting.append(entry)
    return RemoteToolsPause(_as_value(waiting)) if waiting else None


def _known_deadlines(answers: list[Any]) -> list[PendingRemoteCall]:
    """The deadlines of the last remote pause: the answer ``settle_remote_input`` made of it."""
    for answer in reversed(answers):
        if isinstance(answer, Mapping) and answer.get("type") == REMOTE_CALLS_TYPE:
            return _read_value(answer)
    return []


def settle_remote_input(
    state: AgentState, input: Mapping[str, Any], now: datetime | None = None
) -> Mapping[str, Any]:
    """Apply a run's input to a thread paused for remote calls; the input the run then takes.

    A resume's results are checked, then written to the tool ledger; the
    resume becomes the list of calls still pending (with their deadlines),
    for the ``ToolNode`` that goes on. ``invoke(None)`` is such a resume with
    no results. New messages end the pause: passed deadlines become timed-out
    results, and the new turn answers the rest as interrupted. Any other thread
    or input is returned as it is.
    """
    pending = _paused_calls(state)
    if pending is None:
        return input
    meta = state.execution_meta
    now = now or datetime.now(UTC)
    if "resume" not in input and input.get("messages"):
        for entry in pending:
            if entry.expired(now):
                meta.tool_ledger[entry.call.id] = entry.timed_out()
        meta.status, meta.resume_values = "stopped", []
        return input
    if input.get("messages"):  # between a call and its result: the log would lose its pairing
        raise StateError(
            "the thread waits for remote tool results: resume with them, or send new messages "
            "without 'resume' (the pending calls are then answered as interrupted)"
        )
    results = _check_results(input.get("resume"), {entry.call.id: entry for entry in pending})
    meta.tool_ledger.update(results)
    for entry in pending:
        if entry.call.id in results:
            sent = (entry.deadline - timedelta(seconds=entry.timeout)).timestamp()
            remote_round_trip(
                entry.call, sent, entry.trace_context, results[entry.call.id]["is_error"]
            )
    rest = [entry for entry in pending if entry.call.id not in results]
    return {**input, "resume": _as_value(rest)}


def _check_results(
    resume: Any, pending: Mapping[str, PendingRemoteCall]
) -> dict[str, dict[str, Any]]:
    """Ledger entries for the results in ``resume``; ``StateError`` for anything wrong."""
    form = '{"tool_results": [{"call_id": ..., "output": ..., "is_error": false}]}'
    if resume is None:
        return {}
    if not isinstance(resume, Mapping) or set(resume) != {TOOL_RESULTS_KEY}:
        raise StateError(f"the thread waits for remote tool results: resume with {form}")
    items = resume[TOOL_RESULTS_KEY]
    if not isinstance(items, list):
        raise StateError(f"resume 'tool_results' must be a list, as in {form}")
    entries: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(items):
        where = f"resume tool_results[{index}]"
        call_id = _check_item(item, where, form)
        if call_id in entries:
            raise StateError(f"{where}: a second result for call {call_id!r}")
        if call_id not in pending:
            waiting = ", ".join(map(repr, pending)) or "none"
            raise StateError(f"{where}: call {call_id!r} is not pending (pending: {waiting})")
        entries[call_id] = _entry(item, where)
    return entries


def _check_item(item: Any, where: str, form: str) -> str:
    if not isinstance(item, Mapping) or not {"call_id", "output"} <= set(item):
        raise StateError(f"{where} must be a dict with 'call_id' and 'output', as in {form}")
    unknown = set(item) - {"call_id", "output", "is_error"}
    if unknown:
        raise StateError(f"{where} has unknown key(s) {sorted(unknown)}")
    if not isinstance(item["call_id"], str):
        raise StateError(f"{where}.call_id must be a string")
    if not isinstance(item.get("is_error", False), bool):
        raise StateError(f"{where}.is_error must be true or false")
    return item["call_id"]


def _entry(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The tool ledger's entry (``ToolOutcome.entry``'s shape) for a checked result."""
    notes: list[str] = []
    try:
        check_json_data(item["output"], f"{where}.output")
        output = storable_data(item["output"], "output", notes)
    except ValueError as exc:
        raise StateError(str(exc)) from None
    entry = {"output": output, "is_error": bool(item.get("is_error", False)), "update": {}}
    if notes:
        entry["notes"] = notes
    return entry
