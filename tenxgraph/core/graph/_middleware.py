"""Middleware: hooks around the agent loop of ``create_agent`` (like LangChain's AgentMiddleware).

A middleware overrides any of ``before_agent``, ``before_model``,
``after_model``, ``after_agent`` (each gets the state and returns what a node
may return, or None) and ``wrap_tool_call`` (async, around each tool call).
Each hook is a node of the graph, so its update is merged and saved before
the next hook runs. ``before_*`` hooks run in list order, ``after_*`` hooks
in reverse, so the first middleware wraps all the others.

Before/after-model hooks may jump: a returned dict with ``"jump_to"`` set to
``"model"``, ``"tools"`` or ``"end"`` routes there. The key is consumed by
the hook's node and never stored. The targets a hook may use are declared in
``can_jump_to`` and checked when the graph is built.
A middleware may add state fields with ``state_schema``; they are merged
into the graph's state class, and a field declared twice with different
types is a build error.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from tenxgraph.core.graph._command import Command
from tenxgraph.core.graph._node import Node, NodeOutput, RunContext
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message_block import ToolCallBlock
from tenxgraph.errors import GraphBuildError, NodeError

if TYPE_CHECKING:
    from tenxgraph.core.graph._tool_node import ToolOutcome

__all__ = [
    "HOOKS",
    "AgentMiddleware",
    "HookNode",
    "JumpTarget",
    "ToolCallHandler",
    "after_agent",
    "after_model",
    "before_agent",
    "before_model",
    "merge_state_schemas",
]

JumpTarget = Literal["model", "tools", "end"]
HOOKS = ("before_agent", "before_model", "after_model", "after_agent")
ToolCallHandler = Callable[[ToolCallBlock], Awaitable["ToolOutcome"]]


class AgentMiddleware:
    """Base class: override the hooks you need; the others are skipped."""

    state_schema: type[BaseModel] | None = None
    """Extra state fields this middleware needs (merged into the graph's state class)."""
    can_jump_to: Sequence[JumpTarget] = ()
    """Where ``before_model``/``after_model`` may send the run with ``jump_to``."""

    @property
    def name(self) -> str:
        """Prefix of this middleware's node names."""
        return type(self).__name__

    def before_agent(self, state: Any) -> Any:
        """Run once per invoke, before the first model call."""
        return None

    def before_model(self, state: Any) -> Any:
        """Run before every model call."""
        return None

    def after_model(self, state: Any) -> Any:
        """Run after every model call."""
        return None

    def after_agent(self, state: Any) -> Any:
        """Run once per invoke, after the loop ends."""
        return None

    async def wrap_tool_call(self, call: ToolCallBlock, handler: ToolCallHandler) -> ToolOutcome:
        """Run around each tool call; call ``handler(call)`` to execute it (or don't)."""
        return await handler(call)

    def overrides(self, hook: str) -> bool:
        """True when this middleware defines ``hook`` itself."""
        return getattr(type(self), hook) is not getattr(AgentMiddleware, hook)


class _FunctionMiddleware(AgentMiddleware):
    """A middleware made of one hook function (see the decorators below)."""

    def __init__(
        self,
        hook: str,
        function: Callable[..., Any],
        can_jump_to: Sequence[JumpTarget],
        state_schema: type[BaseModel] | None,
    ) -> None:
        self.hook = hook
        self.function = function
        self.can_jump_to = tuple(can_jump_to)
        self.state_schema = state_schema
        setattr(self, hook, function)

    @property
    def name(self) -> str:
        return str(getattr(self.function, "__name__", self.hook))

    def overrides(self, hook: str) -> bool:
        return hook == self.hook


def _decorator(hook: str) -> Callable[..., Any]:
    def decorate(
        function: Callable[..., Any] | None = None,
        *,
        can_jump_to: Sequence[JumpTarget] = (),
        state_schema: type[BaseModel] | None = None,
    ) -> Any:
        def wrap(fn: Callable[..., Any]) -> AgentMiddleware:
            return _FunctionMiddleware(hook, fn, can_jump_to, state_schema)

        return wrap(function) if function is not None else wrap

    decorate.__name__ = hook
    decorate.__doc__ = (
        f"Make a middleware from one ``{hook}`` function (``@{hook}`` or ``@{hook}(...)``)."
    )
    return decorate


before_agent = _decorator("before_agent")
before_model = _decorator("before_model")
after_model = _decorator("after_model")
after_agent = _decorator("after_agent")


class HookNode(Node):
    """One middleware hook as a graph node; turns ``jump_to`` into routing."""

    def __init__(self, middleware: AgentMiddleware, hook: str, targets: dict[str, str]) -> None:
        self.middleware = middleware
        self.hook = hook
        self.function = getattr(middleware, hook)
        self.targets = targets
        """Jump target -> node name, for the targets this hook declared."""
        self.wants = set(inspect.signature(self.function).parameters) & {
            "config",
            "invocation_state",
        }

    async def run(self, state: AgentState, ctx: RunContext) -> AsyncIterator[NodeOutput]:
        """Call the hook; route on ``jump_to`` when it asks."""
        kwargs = {
            name: ctx.config if name == "config" else ctx.invocation_state for name in self.wants
        }
        value = await ctx.call(self.function, (state,), kwargs)
        if isinstance(value, dict) and "jump_to" in value:
            update = {k: v for k, v in value.items() if k != "jump_to"}
            jump = value["jump_to"]
            if jump is not None:
                if jump not in self.targets:
                    raise NodeError(
                        ctx.node,
                        f"jump_to={jump!r} was not declared in can_jump_to "
                        f"{sorted(self.targets)} of {self.middleware.name}",
                    )
                value = Command(goto=self.targets[jump], update=update or None)
            else:
                value = update or None
        yield NodeOutput(value)


def merge_state_schemas(
    base: type[AgentState], middleware: Sequence[AgentMiddleware]
) -> type[AgentState]:
    """The graph's state class extended with every middleware's ``state_schema``."""
    schemas = [m.state_schema for m in middleware if m.state_schema is not None]
    if not schemas:
        return base
    seen = {name: (info.annotation, base.__name__) for name, info in base.model_fields.items()}
    for schema in schemas:
        for name, info in schema.model_fields.items():
            if name in seen and seen[name][0] != info.annotation:
                annotation, owner = seen[name]
                raise GraphBuildError(
                    f"state field {name!r} is {annotation} in {owner} but "
                    f"{info.annotation} in {schema.__name__}"
                )
            seen[name] = (info.annotation, schema.__name__)
    merged: type[AgentState] = type(f"{base.__name__}WithMiddleware", (base, *schemas), {})
    return merged
