"""``Agent``: the graph node that calls a chat model over the state.

Each call builds the request in a fixed order (system prompt, then the
``context_summary``, then the context), streams the answer (delta messages
go out as stream events, never into state), and returns the complete
assistant message with its usages. Tool calls in the answer are run by a
``ToolNode``; ``create_agent`` wires the two into a loop.

Middleware's ``wrap_model_call`` wrappers run around each model call
(``tenxgraph.core.graph._model_call``): they may change the request, the
model or the answer, and call the model more than once.

A forced ``tool_choice`` (``required`` or a tool name) holds only until the
forced tool has answered in the current turn; later calls in that turn use
``auto``, so a loop that forces a tool still ends (see ``turn_tool_choice``).
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from tenxgraph.core.graph._events import MessageEvent
from tenxgraph.core.graph._model_call import ModelCall, ModelCallWrapper, stream_model_call
from tenxgraph.core.graph._node import Node, NodeOutput, RunContext
from tenxgraph.core.graph._structured import OutputStrategy, StructuredOutput
from tenxgraph.core.graph._tool_node import ToolNode
from tenxgraph.core.graph._tools import Tool
from tenxgraph.core.graph._toolsets import Toolset, index_tools
from tenxgraph.core.graph._tracing import context_event, name_agent
from tenxgraph.core.graph._updates import Updates
from tenxgraph.core.llm.base import ChatModel, ToolChoice, ToolSpec
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.context.injection import messages_for_model
from tenxgraph.core.state.context.overflow import (
    MAX_OVERFLOW_ATTEMPTS,
    afit_before_request,
    areduce_on_overflow,
    irreducible_error,
)
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ContextWindowExceededError, GraphBuildError

if TYPE_CHECKING:
    from tenxgraph.core.graph._builder import StateGraph
    from tenxgraph.core.llm.retry import RetryPolicy
    from tenxgraph.core.state.context.base import BaseContextManager

__all__ = ["AGENT_KEY", "Agent", "check_agent_name", "turn_tool_choice"]

AGENT_KEY = "agent"
"""``Message.metadata`` key: the name of the agent that wrote the message."""
_AGENT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_agent_name(name: str | None) -> str | None:
    """``name`` when it can name an agent (and its tools: ``transfer_to_<name>``)."""
    if name is not None and not (isinstance(name, str) and _AGENT_NAME.fullmatch(name)):
        raise GraphBuildError(
            f"agent name {name!r}: use 1 to 64 letters, digits, '_' or '-' "
            "(it becomes part of tool names)"
        )
    return name


class Agent(Node):
    """Call a chat model with the conversation; return its answer as one assistant message."""

    def __init__(
        self,
        model: str | ChatModel,
        *,
        provider: str | None = None,
        system_prompt: str | None = None,
        tools: Sequence[Callable[..., Any] | Tool | Toolset] = (),
        tool_node: str | None = None,
        tool_choice: ToolChoice = "auto",
        output_schema: Any = None,
        output_strategy: OutputStrategy = "auto",
        output_retries: int = 1,
        trim_context: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
        retry: RetryPolicy | None = None,
        wrappers: Sequence[ModelCallWrapper] = (),
        name: str | None = None,
        **model_options: Any,
    ) -> None:
        """Describe the agent; the model itself is resolved on first use.

        ``model`` is a ``ChatModel`` or a model name (``gpt-*``, ``claude-*``,
        ``gemini-*``...; ``provider`` overrides the guess). ``tools`` are
        described to the model; alternatively ``tool_node`` names a ``ToolNode``
        of the graph whose tools are used. ``trim_context=True`` runs the
        graph's context manager before each model call. A name no provider
        claims raises ``GraphBuildError`` here rather than at the first call.
        ``wrappers`` run around every model call, the first outermost
        (middleware's ``wrap_model_call``, see ``ModelCall``).
        ``output_schema`` (a pydantic model, dataclass, TypedDict, JSON-schema
        dict, or a union of them), ``output_strategy`` and ``output_retries``:
        structured output, see ``tenxgraph.core.graph._structured``; a schema
        that cannot be used raises ``GraphBuildError`` here.
        ``name`` (letters, digits, ``_`` and ``-``) marks every message the
        agent adds (``metadata["agent"]``) and names it in handoffs and agent
        tools (``_agent_tools``, ``_handoffs``).
        """
        from tenxgraph.core.llm.resolve import check_model

        self.name = check_agent_name(name)

        check_model(model, provider=provider, **model_options)
        self._model_ref = model
        self._provider = provider
        self._model_options = model_options
        self._retry = retry
        self.wrappers = tuple(wrappers)
        self._model: ChatModel | None = None
        self.system_prompt = system_prompt
        self.tools = index_tools(tools)
        self.tool_node = tool_node
        self.tool_choice = tool_choice
        self.output_schema = output_schema
        self.output = (
            StructuredOutput(output_schema, strategy=output_strategy, retries=output_retries)
            if output_schema is not None
            else None
        )
        self.trim_context = trim_context
        self.temperature = temperature
        self.max_tokens = max_tokens

    @property
    def model(self) -> ChatModel:
        """The chat model, resolved from its name the first time it is needed."""
        if self._model is None:
            from tenxgraph.core.llm.resolve import resolve_model

            model = resolve_model(self._model_ref, provider=self._provider, **self._model_options)
            if self._retry is not None:
                from tenxgraph.core.llm.retry import RetryingModel

                model = RetryingModel(model, self._retry)
            self._model = model
        return self._model

    def bind(self, graph: StateGraph[Any], name: str) -> Agent:
        """Check the setup (a named ToolNode, a context manager); a copy gets that node's tools."""
        bound = self
        if self.tool_node is not None:
            node = graph.nodes.get(self.tool_node)
            if not isinstance(node, ToolNode):
                raise GraphBuildError(
                    f"Agent {name!r}: tool_node={self.tool_node!r} is not a ToolNode of the graph"
                )
            bound = copy.copy(self)
            bound.tools = node.tools.union(self.tools)
        if self.output is not None:
            self.output.check_tools(bound.tools, f"Agent {name!r}")
        if self.trim_context and graph.context_manager is None:
            warnings.warn(
                f"Agent {name!r} has trim_context=True but the graph has no context manager; "
                "the context will not be trimmed (pass context_manager= to StateGraph)",
                UserWarning,
                stacklevel=3,
            )
        return bound

    def tool_specs(self) -> list[ToolSpec]:
        """What the model is told about the tools."""
        return [tool.spec() for tool in self.tools.values()]

    async def run(
        self, state: AgentState, ctx: RunContext
    ) -> AsyncIterator[MessageEvent | NodeOutput]:
        """Trim if asked, call the model (streaming), validate structured output, return it."""
        name_agent(self.name)
        if self.tools.toolsets:  # an MCP server's tools, listed again if they changed
            await self.tools.aprepare()
        manager = ctx.context_manager if self.trim_context else None
        if manager is not None:
            before = (len(state.context), state.context_summary)
            manager.use_model_window(self.model.context_window)
            await manager.atrim_context(state)
            if manager.proactive_at is not None:
                prompt = self.system_prompt or ""
                system = [Message.text_message(prompt, role="system")] if prompt else []
                await afit_before_request(state, manager, self.model.context_window, system)
            context_event("trim", state, before)
        answer: Message | None = None
        ids: dict[str | int, str | int] = {}
        async for message in self._answer(state, ctx, manager):
            if message.delta:
                given = message.message_id
                if given not in ids:
                    ids[given] = ctx.id_generator()
                yield MessageEvent(ctx.node, message.model_copy(update={"message_id": ids[given]}))
            else:
                answer = message
        assert answer is not None  # stream_model_call ends with the complete message or raises
        if self.output is None:
            yield NodeOutput([self._own(answer, ids, ctx)])
            return
        settled = await self.output.settle(
            answer,
            lambda extra: self._ask_again(state, ctx, extra),
            native=not self.output.uses_tool(self.model, with_tools=bool(self.tools)),
            provider=self.model.provider,
        )
        answer = self._own(settled.message, ids, ctx)
        if not settled.structured:  # the answer calls tools: they run first
            yield NodeOutput([answer])
            return
        yield NodeOutput(
            Updates(
                [
                    ("the answer", [answer]),
                    ("structured output", {"structured_response": settled.value}),
                ]
            )
        )

    def _own(self, answer: Message, ids: dict[str | int, str | int], ctx: RunContext) -> Message:
        """The answer as stored, with the agent's name when it has one.

        Its id is the one its streamed chunks carried (``ids``, by the model's own id),
        or a new one.
        """
        given = answer.message_id
        update: dict[str, Any] = {"message_id": ids[given] if given in ids else ctx.id_generator()}
        if self.name is not None:
            update["metadata"] = {**answer.metadata, AGENT_KEY: self.name}
        return answer.model_copy(update=update)

    async def _answer(
        self, state: AgentState, ctx: RunContext, manager: BaseContextManager | None
    ) -> AsyncIterator[Message]:
        """Stream the model's answer; on a context-window error reduce the context and retry.

        Each retry follows one reduction step (``areduce_on_overflow``), at
        most ``MAX_OVERFLOW_ATTEMPTS``; when nothing is left to reduce the
        error names the size of what is left.
        """
        attempts = 0
        while True:
            try:
                async for message in stream_model_call(self._call(state, ctx), self.wrappers):
                    yield message
                return  # only a context overflow is retried, never a stream without an answer
            except ContextWindowExceededError as exc:
                before = (len(state.context), state.context_summary)
                if attempts >= MAX_OVERFLOW_ATTEMPTS or not await areduce_on_overflow(
                    state, manager
                ):
                    request = self._call(state, ctx).request().messages
                    raise irreducible_error(request, attempts, exc) from exc
                context_event("overflow", state, before)
                attempts += 1

    def _call(self, state: AgentState, ctx: RunContext, extra: Sequence[Message] = ()) -> ModelCall:
        """The next model call over ``state``, before the wrappers change it."""
        call = ModelCall(
            model=self.model,
            system_prompt=self.system_prompt,
            messages=[*messages_for_model(state), *extra],
            tools=self.tool_specs(),
            tool_choice=turn_tool_choice(self.tool_choice, state.context),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            state=state,
            config=ctx.config,
            invocation_state=ctx.invocation_state,
        )
        return call if self.output is None else self.output.apply(call, self.model)

    async def _ask_again(self, state: AgentState, ctx: RunContext, extra: list[Message]) -> Message:
        """A structured-output retry through the wrappers; its deltas are not streamed."""
        answer: Message | None = None
        async for message in stream_model_call(self._call(state, ctx, extra), self.wrappers):
            answer = message  # the last is the complete answer
        assert answer is not None
        return answer


def turn_tool_choice(choice: ToolChoice, context: Sequence[Message]) -> ToolChoice:
    """The tool choice for the next model call: ``choice``, or ``auto`` once it was obeyed.

    A forced choice applies until the current turn (the messages after the
    last user message) holds a result for a call it forced: a call of the
    named tool, or of any tool for ``required``. Only the turn is read,
    newest first, so the cost does not grow with the thread.
    """
    if choice in ("auto", "none"):
        return choice
    answered: set[str] = set()
    for message in reversed(context):
        if message.role == "user" and not message.tool_results():
            break
        answered.update(result.call_id for result in message.tool_results())
        for call in message.tool_calls():
            if call.id in answered and choice in ("required", call.name):
                return "auto"
    return choice
