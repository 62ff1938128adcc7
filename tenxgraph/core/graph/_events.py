"""Stream events: what ``astream`` yields. Each is a fresh immutable object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message

__all__ = [
    "CustomEvent",
    "ErrorEvent",
    "InterruptEvent",
    "MessageEvent",
    "RunResult",
    "StreamEvent",
    "SubgraphEvent",
    "UpdateEvent",
]


@dataclass(frozen=True, slots=True)
class MessageEvent:
    """A message produced by a node: a streamed chunk (``message.delta``) or a complete one."""

    node: str
    message: Message


@dataclass(frozen=True, slots=True)
class UpdateEvent:
    """A node finished: the fields it changed and the messages it added to context."""

    node: str
    step: int
    messages: tuple[Message, ...]
    values: dict[str, Any]
    """Changed non-message fields, as JSON-ready data."""


@dataclass(frozen=True, slots=True)
class InterruptEvent:
    """The run paused for a human; resume with ``invoke({"resume": answer}, config)``."""

    node: str
    value: Any
    when: str
    """``before`` or ``after`` the node (``interrupt_before/after``), or ``inside`` it;
    ``remote_tool_calls`` when a ``ToolNode`` waits for the client's remote tool results."""


@dataclass(frozen=True, slots=True)
class CustomEvent:
    """Data a node or a tool wrote with the writer of ``get_stream_writer()``."""

    node: str
    data: Any


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """A node failed; the run raises ``NodeError`` right after this event."""

    node: str
    error: str


@dataclass(frozen=True, slots=True)
class RunResult:
    """The last event of every run: what ``invoke`` returns, as a dict via ``as_dict``."""

    messages: list[Message]
    """Complete messages this run added, each once, in order (the input excluded)."""
    state: AgentState
    """The final state."""
    interrupt: InterruptEvent | None = None
    """Set when the run paused for a human."""
    invocation_state: dict[str, Any] = field(default_factory=dict)
    """The per-invocation dict given to ``invoke``, as tools and hooks left it."""
    run_id: str = ""
    """The run's id: the config's ``run_id``, or a random one."""

    def as_dict(self) -> dict[str, Any]:
        """The ``invoke`` result as a dict.

        Keys: ``messages``, ``state``, ``invocation_state``, plus ``interrupt``
        when paused and ``structured_response`` when an Agent produced one.
        """
        result: dict[str, Any] = {
            "messages": self.messages,
            "state": self.state,
            "invocation_state": self.invocation_state,
        }
        if self.interrupt is not None:
            result["interrupt"] = self.interrupt
        if self.state.structured_response is not None:
            result["structured_response"] = self.state.structured_response
        return result


@dataclass(frozen=True, slots=True)
class SubgraphEvent:
    """An event of a subgraph, for ``stream(..., subgraphs=True)``.

    ``namespace`` is the path of nodes the subgraph runs in, outermost first
    (``("research",)``; ``("research", "search:1")`` for task 1 of a parallel step).
    """

    namespace: tuple[str, ...]
    event: MessageEvent | UpdateEvent | CustomEvent
    state: AgentState | None = None
    """With an ``UpdateEvent``: a copy of the subgraph's whole state after that step (its
    ``values``; a subgraph's steps are not saved, so they cannot be read back)."""


StreamEvent = (
    MessageEvent
    | UpdateEvent
    | CustomEvent
    | InterruptEvent
    | ErrorEvent
    | RunResult
    | SubgraphEvent
)
