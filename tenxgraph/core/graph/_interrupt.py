"""Human in the loop: ``interrupt(value)`` pauses the thread; a resume answers it.

A node (or a tool) that calls ``interrupt`` is run again from its start when
the thread resumes; this time the call returns the human's answer. Answers
are matched to calls by order, so a node may ask several questions.

The scope also says which thread the running code belongs to, so a direct
tool call made from inside a run can tell that it is nested (see ``_direct``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from tenxgraph.errors import UsageError

if TYPE_CHECKING:
    from tenxgraph.core.state.ids import ThreadKey

__all__ = ["GraphInterrupt", "InterruptKind", "InterruptScope", "interrupt", "running_thread"]

InterruptKind = Literal["before", "after", "inside", "remote_tool_calls"]
"""Where a run paused: ``ExecMeta.interrupt_kind`` and the ``InterruptEvent``'s ``when``."""


class GraphInterrupt(Exception):
    """Raised by ``interrupt`` to pause the run; the runtime catches it."""

    kind: ClassVar[Literal["inside", "remote_tool_calls"]] = "inside"
    """The pause's ``interrupt_kind``: ``inside`` the node for every ``interrupt()``
    (whatever its value); the runtime's own pause for remote tool calls has its own."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


@dataclass(slots=True)
class InterruptScope:
    """The answers available to the ``interrupt`` calls of one node execution.

    The run loop builds one per step, by position (``answers`` to ``forward``):
    keyword arguments cost about twice as much. The two counters start at zero.
    """

    answers: list[Any] = field(default_factory=list)
    thread: ThreadKey | None = None
    """The thread whose run (or direct tool call) executes the code in this scope."""
    subgraphs: dict[str, Any] | None = None
    """Where a graph run inside this node keeps its paused state (``ExecMeta.subgraphs``
    of the graph the node belongs to); None outside a graph's node (a direct call)."""
    namespace: str = ""
    """The running node's namespace: its name, under its graph's (``outer|inner``)."""
    writer: Callable[[Any], None] | None = None
    """Where ``get_stream_writer()``'s data goes: the run's stream, or None (nothing reads it)."""
    forward: Callable[[Any], None] | None = None
    """Where code in this scope sends the events of a graph it runs itself (a graph the node
    invokes, an agent tool's agent): ``SubgraphEvent``s whose namespace starts with the node's
    name, into the run's stream when it yields subgraphs' events; else None."""
    asked: int = 0
    """``interrupt`` calls made so far by this node execution: the next one's answer's index."""
    calls: int = 0
    """Subgraph runs started so far by this node execution, naming the second one on."""


_scope: ContextVar[InterruptScope | None] = ContextVar("tenxgraph_interrupt_scope", default=None)


def interrupt(value: Any = None) -> Any:
    """Pause the thread and show ``value`` to a human; return their answer on resume.

    Only valid inside a node or a tool while a graph runs.
    """
    scope = _scope.get()
    if scope is None:
        raise UsageError("interrupt() can only be called inside a running graph node or tool")
    index = scope.asked
    scope.asked += 1
    if index < len(scope.answers):
        return scope.answers[index]
    raise GraphInterrupt(value)


def running_thread() -> ThreadKey | None:
    """The thread whose run or direct call is executing the calling code (None outside one).

    Set while a node, a router or a tool runs, in worker threads too, so a
    tool that calls ``app.call_tool`` on its own thread is recognised.
    """
    scope = _scope.get()
    return None if scope is None else scope.thread
