"""Middleware: hooks around the agent loop of ``create_agent`` (like LangChain's AgentMiddleware).

A middleware overrides any of ``before_agent``, ``before_model``,
``after_model``, ``after_agent`` (each gets the state and returns what a node
may return, or None), ``wrap_model_call`` (async, around each model call, see
``ModelCall``) and ``wrap_tool_call`` (async, around each tool call).
Each before/after hook is a node of the graph, so its update is merged and
saved before the next hook runs. ``before_*`` hooks run in list order,
``after_*`` hooks in reverse, and the first middleware's ``wrap_*`` is the
outermost, so the first middleware wraps all the others.

A public method whose name starts with ``before_``, ``after_`` or ``wrap_``
(or ``abefore_``, ``aafter_``, ``awrap_``, LangChain's async spellings) must
be one of these hooks: anything else (a misspelt hook, a hook tenxgraph does
not have) is a ``GraphBuildError`` when the agent is built, never a hook
silently skipped. Helper methods take other names, or a leading ``_``.
A middleware's ``tools`` join the agent's tools; its ``name`` prefixes its
node names (``name=`` on the decorators), and two middleware of one agent
cannot share a name.

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
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from tenxgraph.core.graph._command import Command
from tenxgraph.core.graph._node import Node, NodeOutput, RunContext
from tenxgraph.core.graph._tools import Tool, as_tools
from tenxgraph.core.graph._toolsets import Toolset, index_tools
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message_block import ToolCallBlock
from tenxgraph.errors import GraphBuildError, NodeError

if TYPE_CHECKING:
    from tenxgraph.core.graph._model_call import ModelCall, ModelCallHandler
    from tenxgraph.core.graph._tool_node import ToolOutcome
    from tenxgraph.core.state.message import Message

__all__ = [
    "HOOKS",
    "WRAP_HOOKS",
    "AgentMiddleware",
    "HookNode",
    "JumpTarget",
    "ToolCallHandler",
    "after_agent",
    "after_model",
    "agent_tools",
    "before_agent",
    "before_model",
    "check_middleware",
    "merge_state_schemas",
    "wrap_model_call",
    "wrap_tool_call",
]

JumpTarget = Literal["model", "tools", "end"]
HOOKS = ("before_agent", "before_model", "after_model", "after_agent")
"""The hooks that run as graph nodes."""
WRAP_HOOKS = ("wrap_model_call", "wrap_tool_call")
"""The hooks that run around a call (async)."""
_HOOK_LIKE = re.compile(r"a?(before|after|wrap)_")
ToolCallHandler = Callable[[ToolCallBlock], Awaitable["ToolOutcome"]]


class AgentMiddleware:
    """Base class: override the hooks you need; the others are skipped."""

    state_schema: type[BaseModel] | None = None
    """Extra state fields this middleware needs (merged into the graph's state class)."""
    can_jump_to: Sequence[JumpTarget] = ()
    """Where ``before_model``/``after_model`` may send the run with ``jump_to``."""
    tools: Sequence[Callable[..., Any] | Tool] = ()
    """Tools this middleware adds to the agent's (a name used twice is a build error)."""

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

    async def wrap_model_call(self, call: ModelCall, handler: ModelCallHandler) -> Message:
        """Run around each model call; ``await handler(call)`` calls the model (or don't).

        Change the call with ``call.override(...)`` (``system_prompt``,
        ``messages``, ``tools``, ``model``...), call the handler more than
        once to retry or fall back, and return the complete assistant message.
        """
        return await handler(call)

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
        name: str | None,
    ) -> None:
        if hook in WRAP_HOOKS and not inspect.iscoroutinefunction(function):
            raise GraphBuildError(f"@{hook} needs an async function (async def), got {function!r}")
        self.hook = hook
        self.function = function
        self.can_jump_to = tuple(can_jump_to)
        self.state_schema = state_schema
        self._name = name
        setattr(self, hook, function)

    @property
    def name(self) -> str:
        return self._name or str(getattr(self.function, "__name__", self.hook))

    def overrides(self, hook: str) -> bool:
        return hook == self.hook


def _decorator(hook: str) -> Callable[..., Any]:
    def decorate(
        function: Callable[..., Any] | None = None,
        *,
        can_jump_to: Sequence[JumpTarget] = (),
        state_schema: type[BaseModel] | None = None,
        name: str | None = None,
    ) -> Any:
        def wrap(fn: Callable[..., Any]) -> AgentMiddleware:
            return _FunctionMiddleware(hook, fn, can_jump_to, state_schema, name)

        return wrap(function) if function is not None else wrap

    decorate.__name__ = decorate.__qualname__ = hook
    decorate.__doc__ = (
        f"Make a middleware from one ``{hook}`` function (``@{hook}`` or ``@{hook}(...)``).\n\n"
        "``name`` prefixes its node names (default: the function's name)."
    )
    return decorate


before_agent = _decorator("before_agent")
before_model = _decorator("before_model")
after_model = _decorator("after_model")
after_agent = _decorator("after_agent")
wrap_model_call = _decorator("wrap_model_call")
wrap_tool_call = _decorator("wrap_tool_call")


def check_middleware(middleware: Sequence[AgentMiddleware]) -> None:
    """Refuse, at build time, hook-like methods tenxgraph does not know, sync wraps, twin names."""
    known = (*HOOKS, *WRAP_HOOKS)
    names: set[str] = set()
    for middle in middleware:
        if middle.name in names:
            raise GraphBuildError(
                f"two middleware are named {middle.name!r}: give one another name "
                "(name= on a hook decorator, or a name attribute on the class)"
            )
        names.add(middle.name)
        for attr in dir(type(middle)):
            if attr in known or not _HOOK_LIKE.match(attr):
                continue
            if callable(getattr(type(middle), attr)):
                hint = f" (define {attr[1:]} itself, as async def)" if attr[1:] in known else ""
                raise GraphBuildError(
                    f"middleware {middle.name!r} defines {attr}(), which is not a hook{hint}; "
                    f"the hooks are {', '.join(known)}. Rename it, or start a helper's name "
                    "with '_'"
                )
        for hook in WRAP_HOOKS:
            if middle.overrides(hook) and not inspect.iscoroutinefunction(getattr(middle, hook)):
                raise GraphBuildError(f"middleware {middle.name!r}: {hook} must be async def")


def agent_tools(
    tools: Sequence[Callable[..., Any] | Tool | Toolset], middleware: Sequence[AgentMiddleware]
) -> list[Tool | Toolset]:
    """The agent's tools and toolsets, then each middleware's; a name used twice is an error."""
    given = index_tools(tools)
    owners = dict.fromkeys(given.static, "the agent's tools")
    combined: list[Tool | Toolset] = [*given.static.values(), *given.toolsets]
    for middle in middleware:
        for name, tool in as_tools(middle.tools).items():
            if name in owners:
                raise GraphBuildError(
                    f"tool name {name!r} is used twice: by middleware {middle.name!r} "
                    f"and by {owners[name]}"
                )
            owners[name] = f"middleware {middle.name!r}"
            combined.append(tool)
    return combined


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


def merge_state_schemas(base: type[AgentState], holders: Sequence[object]) -> type[AgentState]:
    """The graph's state class extended with the ``state_schema`` of each holder.

    Holders are middleware, and tools that keep state of their own (agent
    tools); a schema named twice, or one the class already has, is merged once.
    """
    found = (getattr(holder, "state_schema", None) for holder in holders)
    schemas = [s for s in dict.fromkeys(found) if s is not None and not issubclass(base, s)]
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
