"""OpenTelemetry spans of a run, by the GenAI semantic conventions: the one module that knows OTel.

A run is an ``invoke_agent`` span; each step a ``node {name}`` span under it
(a parallel step's tasks each a span under the step's); each model call a
``chat {model}`` span, each tool call an ``execute_tool {tool}`` span, under
the node that made it; the wait for the thread's lease and each checkpoint
save are short ``tenxgraph.lease`` and ``tenxgraph.save`` spans. The attribute
names are the conventions' (``gen_ai.*``); what they do not name is
``tenxgraph.*``.

**Free when not configured.** ``tracer()`` (decided in ``utils/_otel.py``, which
the storage floor's spans share) is None unless ``opentelemetry``
is already imported *and* a tracer provider is set (an SDK's, or one that
auto-instrumentation installed): the run loop then creates nothing and
imports nothing, at the cost of one dictionary lookup per run, model call
and tool call. The package depends on ``opentelemetry-api`` only through the
``otel`` extra.

**Parents without a shared current span.** A run is an async generator, and
its reader may change between events (the sync ``stream`` reads each event in
a new task), so a span made current at the run's start would not be current
at its next step. The run's spans are therefore parented explicitly, and a
span is made current (``context.attach``) only around code that runs
within one resume: a node's step, each resume of a streamed node or model,
a tool call. User code, and a provider SDK's own instrumentation, see the
node, model or tool span as the current one. The run's own span is the child
of whatever is current where the run starts: a span of the caller's, or the
W3C ``traceparent`` the server continued.

**Content is off by default.** Message text, tool arguments and results are
recorded only when the run config says ``trace_content=True``, or else the
conventions' environment variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
is ``true``. Nothing here ever reads a model's credentials.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from tenxgraph.core.graph._command import PARALLEL
from tenxgraph.core.graph._interrupt import GraphInterrupt
from tenxgraph.core.graph._run_control import Fail, Finish, Outcome, Pause
from tenxgraph.utils import _otel
from tenxgraph.utils._otel import CONTENT_ENV, content_from_env

if TYPE_CHECKING:
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

    from tenxgraph.core.graph._compiled import CompiledGraph
    from tenxgraph.core.graph._run_control import RunControl
    from tenxgraph.core.graph._tool_node import ToolOutcome
    from tenxgraph.core.llm.base import ChatModel, ModelRequest
    from tenxgraph.core.state.agent_state import AgentState
    from tenxgraph.core.state.message import Message
    from tenxgraph.core.state.message_block import RemoteToolCallBlock, ToolCallBlock
    from tenxgraph.storage.checkpointer.base import ThreadStamp

__all__ = [
    "CONTENT_ENV",
    "RunTrace",
    "client_span",
    "context_event",
    "name_agent",
    "remote_round_trip",
    "start_run",
    "traced_model",
    "traced_tool",
    "tracer",
    "w3c_headers",
]

T = TypeVar("T")

_PROVIDERS = {"google": "gcp.gen_ai", "openai_responses": "openai"}
"""tenxgraph's provider names that the conventions spell otherwise."""

if not TYPE_CHECKING:
    otel_context = otel_trace = None
    """The OpenTelemetry API's modules, bound by ``tracer()`` once a provider is set:
    every other function here runs only after that."""


def tracer() -> Tracer | None:
    """Tenxgraph's tracer (``utils._otel`` decides); binds the OTel API here once one is found."""
    global otel_context, otel_trace
    found = _otel.tracer()
    if found is not None and otel_trace is None:
        import opentelemetry.context as context
        import opentelemetry.trace as trace

        otel_context, otel_trace = context, trace
    return found


def captures_content(config: Mapping[str, Any]) -> bool:
    """Whether this run records message content: its config's ``trace_content``, else the env."""
    wanted = config.get("trace_content")
    if wanted is not None:
        return bool(wanted)
    return content_from_env()


def start_run(
    control: RunControl, config: Mapping[str, Any], graph: CompiledGraph[Any]
) -> RunTrace | None:
    """The trace of a run about to start, or None when no tracer provider is set.

    The run is named by the config's ``run_name``, else the agent's name
    (``create_agent(name=...)``, so an inner agent's run says whose it is),
    else the served graph's id, else ``graph``.
    """
    found = tracer()
    if found is None:
        return None
    # create_agent's model node (an ``Agent``, named by duck type: that layer imports this one)
    agent = getattr(graph.nodes.get("agent"), "name", None)
    agent = agent if isinstance(agent, str) else None
    name = config.get("run_name") or agent or config.get("graph_id") or "graph"
    return RunTrace(found, control, str(name))


class RunTrace:
    """The spans of one run: its own ``invoke_agent`` span, the parent of its steps'."""

    __slots__ = ("context", "control", "span", "steps", "tracer")

    def __init__(self, tracer: Tracer, control: RunControl, name: str) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "tenxgraph.run.id": control.run_id,
        }
        if control.thread is not None:
            attributes["gen_ai.conversation.id"] = control.thread.thread_id
        self.tracer = tracer
        self.control = control
        self.steps: set[int] = set()
        """The span ids of this run's step and task spans open now (``_here``)."""
        self.span: Span = tracer.start_span(f"invoke_agent {name}", attributes=attributes)
        self.context: Context = otel_trace.set_span_in_context(self.span)

    async def lease(self, taking: Awaitable[T], *, leased: bool) -> T:
        """Await ``taking`` (the run's hold on its thread), timed by a span when ``leased``.

        A run that fails to take its thread (refused, timed out), or was stopped
        before it took it, ends here: the run loop goes no further.
        """
        span = self.tracer.start_span("tenxgraph.lease", self.context) if leased else None
        try:
            taken = await taking
            if self.control.stop_requested:
                self.end("stopped", None)
            return taken
        except BaseException as exc:
            if span is not None:
                _failed(span, exc)
            self.end("error", exc)
            raise
        finally:
            if span is not None:
                span.end()

    async def step(self, node: str, running: Awaitable[tuple[T, Outcome]]) -> tuple[T, Outcome]:
        """Await one step of the run loop in its node's span, current while it runs."""
        with self._current(node, self.context) as span:
            result = await running
            _ended(span, result[1])
        return result

    async def streamed_step(self, node: str, items: AsyncIterator[T]) -> AsyncIterator[T]:
        """``items`` (a streamed step's events, then its outcome) in its node's span."""
        span = self._node_span(node, self.context)
        try:
            async for item in _resumed_in(span, items):
                if isinstance(item, Outcome):
                    _ended(span, item)
                yield item
        except BaseException as exc:
            _failed(span, exc)
            raise
        finally:
            self._closed(span)

    async def task(self, node: str, running: Awaitable[T]) -> T:
        """Await one task of a parallel step in its node's span, under the step's span."""
        with self._current(node, otel_context.get_current()):
            return await running

    async def save(
        self, node: str, saving: Awaitable[None], stamp: Callable[[], ThreadStamp]
    ) -> None:
        """Await a checkpoint save in a ``tenxgraph.save`` span, under the step that saves.

        The span is current while saving: the media a save offloads nest under it.
        """
        span = self.tracer.start_span(
            "tenxgraph.save", self._here(), attributes={"tenxgraph.node": node}
        )
        previous = _attach(span)
        try:
            await saving
        except BaseException as exc:
            _failed(span, exc)
            raise
        finally:
            _restore(previous)
            span.set_attribute("tenxgraph.thread.version", stamp().version)
            span.end()

    def end(self, status: str, error: BaseException | None) -> None:
        """End the run's span with how the run ended."""
        span = self.span
        if not span.is_recording():
            return
        span.set_attribute("tenxgraph.run.status", status)
        if error is not None:
            _failed(span, error)
        span.end()

    def _node_span(self, node: str, parent: Context) -> Span:
        label = "parallel step" if node == PARALLEL else f"node {node}"
        span = self.tracer.start_span(label, parent, attributes={"tenxgraph.node": node})
        self.steps.add(span.get_span_context().span_id)
        return span

    @contextmanager
    def _current(self, node: str, parent: Context) -> Iterator[Span]:
        """A node's span under ``parent``, current inside the block, failed by what it raises."""
        span = self._node_span(node, parent)
        previous = _attach(span)
        try:
            yield span
        except BaseException as exc:
            _failed(span, exc)
            raise
        finally:
            _restore(previous)
            self._closed(span)

    def _closed(self, span: Span) -> None:
        self.steps.discard(span.get_span_context().span_id)
        span.end()

    def _here(self) -> Context:
        """The current context when one of this run's steps is current in it, else the run's.

        A save inside a step nests under it; one between steps (the input, the
        end) under the run, even when the caller's span is current there.
        """
        current = otel_context.get_current()
        found = otel_trace.get_current_span(current).get_span_context()
        return current if found.span_id in self.steps else self.context


async def traced_model(
    tracer: Tracer, model: ChatModel, request: ModelRequest, config: Mapping[str, Any]
) -> AsyncIterator[Message]:
    """``model.stream(request)`` in a ``chat {model}`` span, current while the model runs."""
    provider = _PROVIDERS.get(model.provider, model.provider)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model.model,
    }
    if request.temperature is not None:
        attributes["gen_ai.request.temperature"] = request.temperature
    if request.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = request.max_tokens
    content = captures_content(config)
    if content:
        attributes["gen_ai.input.messages"] = _messages_json(request.messages)
    span = tracer.start_span(
        f"chat {model.model}", kind=otel_trace.SpanKind.CLIENT, attributes=attributes
    )
    answer: Message | None = None
    try:
        async for message in _resumed_in(span, model.stream(request)):
            if not message.delta:
                answer = message
            yield message
    except BaseException as exc:
        _failed(span, exc)
        raise
    finally:
        if answer is not None:
            _answered(span, answer, content)
        span.end()


async def traced_tool(
    tracer: Tracer, call: ToolCallBlock, running: Awaitable[ToolOutcome], config: Mapping[str, Any]
) -> ToolOutcome:
    """Await one tool call (its wrappers included) in an ``execute_tool {tool}`` span."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
    }
    content = captures_content(config)
    if content:
        attributes["gen_ai.tool.call.arguments"] = _json(call.args)
    span = tracer.start_span(f"execute_tool {call.name}", attributes=attributes)
    previous = _attach(span)
    try:
        outcome = await running
        if outcome.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(otel_trace.StatusCode.ERROR, str(outcome.output)[:200])
        if content:
            span.set_attribute("gen_ai.tool.call.result", _json(outcome.output))
    except BaseException as exc:
        _failed(span, exc)
        raise
    finally:
        _restore(previous)
        span.end()
    return outcome


def context_event(kind: str, state: AgentState, before: tuple[int, str | None]) -> None:
    """A context manager's decision (``trim``, ``overflow``) as an event on the current span.

    ``before`` is the context's length and summary before the decision; an
    unchanged context records nothing, and nothing is looked at untraced.
    """
    if tracer() is None or before == (len(state.context), state.context_summary):
        return
    otel_trace.get_current_span().add_event(
        f"tenxgraph.context.{kind}",
        {
            "tenxgraph.context.messages_before": before[0],
            "tenxgraph.context.messages_after": len(state.context),
            "tenxgraph.context.summarized": state.context_summary != before[1],
        },
    )


@contextmanager
def client_span(name: str, attributes: Mapping[str, Any]) -> Iterator[dict[str, str] | None]:
    """A client span, current around a call to another service (an MCP server's tool).

    Yields the W3C headers (``traceparent``...) to send along so the service
    can continue the trace, or None when no tracer provider is set (then
    nothing is created). An exception leaving the block fails the span.
    """
    found = tracer()
    if found is None:
        yield None
        return
    span = found.start_span(name, kind=otel_trace.SpanKind.CLIENT, attributes=dict(attributes))
    previous = _attach(span)
    try:
        from opentelemetry.propagate import inject

        carrier: dict[str, str] = {}
        inject(carrier)
        yield carrier
    except BaseException as exc:
        _failed(span, exc)
        raise
    finally:
        _restore(previous)
        span.end()


def w3c_headers() -> dict[str, str] | None:
    """The current span's W3C headers when traced (a remote call's pause keeps them), else None."""
    if tracer() is None:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier or None


def remote_round_trip(
    call: RemoteToolCallBlock, sent: float, headers: Mapping[str, str] | None, failed: bool
) -> None:
    """A remote (client-run) tool call's round trip as a finished ``execute_tool`` span.

    It starts when the pause sent the call (``sent``, Unix seconds) and ends
    now, when its result came back; its parent is the span that paused
    (``headers``, kept in the pause), so it lands in the trace of the run
    that asked for it, whichever run or process takes the result.
    """
    found = tracer()
    if found is None:
        return
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    parent = TraceContextTextMapPropagator().extract(dict(headers)) if headers else None
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
        "tenxgraph.tool.remote": True,
    }
    span = found.start_span(
        f"execute_tool {call.name}", parent, attributes=attributes, start_time=int(sent * 1e9)
    )
    if failed:
        span.set_attribute("error.type", "tool_error")
        span.set_status(otel_trace.StatusCode.ERROR)
    span.end()


def name_agent(name: str | None) -> None:
    """A named agent's ``gen_ai.agent.name`` on the current span: its node's, while it runs.

    An unnamed agent (the common case) costs one comparison.
    """
    if name is None or tracer() is None:
        return
    otel_trace.get_current_span().set_attribute("gen_ai.agent.name", name)


def _answered(span: Span, answer: Message, content: bool) -> None:
    """Set the response attributes from the model's complete answer."""
    raw = answer.raw or {}
    metadata = answer.metadata
    response_id = raw.get("id") or raw.get("response_id")
    if isinstance(response_id, str):
        span.set_attribute("gen_ai.response.id", response_id)
    model = metadata.get("model") or raw.get("model") or raw.get("model_version")
    if isinstance(model, str):
        span.set_attribute("gen_ai.response.model", model)
    reason = metadata.get("finish_reason") or metadata.get("stop_reason") or metadata.get("status")
    if reason is None:  # a model that reports none: what the answer shows
        reason = "tool_calls" if answer.tool_calls() else "stop"
    if reason is not None:
        span.set_attribute("gen_ai.response.finish_reasons", [str(reason).lower()])
    usage = answer.usages
    if usage is not None:
        span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
    if content:
        span.set_attribute("gen_ai.output.messages", _messages_json([answer]))


def _messages_json(messages: list[Message]) -> str:
    """Messages in the conventions' shape: role and parts (text, tool calls, tool results)."""
    shaped: list[dict[str, Any]] = []
    for message in messages:
        parts: list[dict[str, Any]] = []
        for block in message.content:
            kind = block.type
            if kind == "text":
                parts.append({"type": "text", "content": block.text})  # type: ignore[union-attr]
            elif kind == "tool_call":
                call: Any = block
                parts.append(
                    {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.args}
                )
            elif kind == "tool_result":
                result: Any = block
                parts.append(
                    {"type": "tool_call_response", "id": result.call_id, "response": result.output}
                )
            else:
                parts.append({"type": kind})
        shaped.append({"role": message.role, "parts": parts})
    return _json(shaped)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


async def _resumed_in(span: Span, items: AsyncIterator[T]) -> AsyncIterator[T]:
    """``items``, with ``span`` current while each item is made, and never between them."""
    step = items.__anext__
    try:
        while True:
            previous = _attach(span)
            try:
                item = await step()
            except StopAsyncIteration:
                return
            finally:
                _restore(previous)
            yield item
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()


def _attach(span: Span) -> Context:
    """Make ``span`` current; return the context to put back (``_restore``)."""
    previous = otel_context.get_current()
    otel_context.attach(otel_trace.set_span_in_context(span, previous))
    return previous


def _restore(previous: Context) -> None:
    """Put ``previous`` back as the current context.

    Attached again rather than detached by token: a token is bound to the
    ``contextvars.Context`` it was made in, and a generator's reader may differ.
    """
    otel_context.attach(previous)


def _ended(span: Span, outcome: Outcome) -> None:
    """Record how a step ended on its span: failed, paused or stopped."""
    if isinstance(outcome, Fail):
        _failed(span, outcome.error)
    elif isinstance(outcome, Pause):
        span.add_event("tenxgraph.interrupt", {"tenxgraph.interrupt.when": str(outcome.when)})
    elif isinstance(outcome, Finish) and outcome.status != "completed":
        span.set_attribute("tenxgraph.step.status", outcome.status)


def _failed(span: Span, exc: BaseException) -> None:
    """Mark ``span`` failed by ``exc`` (its type is ``error.type``); a pause or a stop is none."""
    if isinstance(exc, GraphInterrupt):
        span.add_event("tenxgraph.interrupt", {"tenxgraph.interrupt.when": exc.kind})
        return
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):  # a stop, or a reader that left
        span.set_attribute("tenxgraph.cancelled", True)
        return
    span.set_attribute("error.type", type(exc).__qualname__)
    if isinstance(exc, Exception):
        span.record_exception(exc)
    span.set_status(otel_trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:200])
