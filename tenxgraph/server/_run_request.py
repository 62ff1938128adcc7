"""The body of a run request (LangGraph's ``RunCreate``) and what it becomes for the graph.

``RunRequest`` accepts what ``langgraph-sdk`` sends to ``/runs``,
``/runs/stream``, ``/runs/wait`` and their ``/threads/{id}/...`` forms.
``checkpoint``/``checkpoint_id`` start the run from that older checkpoint,
branching the thread there (the run config's ``checkpoint_id``).
``command.goto`` starts the run at the node(s) it names (``goto_entry``).
Fields LangGraph's server has and this one does not act on are refused with
a 422 that says what to do instead, never silently dropped:
``interrupt_before``/``interrupt_after`` (set when compiling the
graph) and ``webhook``. ``stream_subgraphs`` adds the subgraphs' events,
named with their namespace (``updates|research``). Fields that only tune LangGraph's
own machinery and change nothing a client sees here (``durability``,
``checkpoint_during``, ``stream_resumable``: every
stream here is resumable, ``feedback_keys``, ``langsmith_tracer``,
``strict_resume``) are accepted and ignored. A field this server does not know
is refused unless its value is null (newer clients send new fields as null).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tenxgraph.core.graph import Send
from tenxgraph.core.state.edits import RemoveMessage
from tenxgraph.core.state.ids import checkpoint_of, run_config, thread_metadata_of
from tenxgraph.core.state.langchain_format import from_langchain_message, is_langchain_message
from tenxgraph.core.state.message_input import ROLE_ALIASES, as_messages
from tenxgraph.errors import StateError
from tenxgraph.server._run_stream import STREAM_MODES

if TYPE_CHECKING:
    from tenxgraph.core.graph import CompiledGraph

__all__ = [
    "RunCommand",
    "RunRequest",
    "check_state_input",
    "checkpoint_named",
    "graph_input",
    "input_messages",
    "run_config_of",
    "state_update",
]

MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]

_UNSUPPORTED = {
    "interrupt_before": "set interrupt_before when compiling the served graph",
    "interrupt_after": "set interrupt_after when compiling the served graph",
    "webhook": "webhooks are not supported; join the run (GET .../join) or stream it",
}
_LANGCHAIN_TYPE = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}
_OWN_CONFIG_KEYS = ("thread_id", "user_id", "run_id")


class RunCommand(BaseModel):
    """LangGraph's ``Command``: ``resume``, ``update`` and ``goto``.

    ``resume`` answers an interrupt, ``update`` changes state, ``goto`` names
    the node(s) the run starts at (names, or ``Send``s: ``{"node", "input"}``).
    """

    model_config = ConfigDict(extra="forbid")

    resume: Any = None
    update: dict[str, Any] | None = None
    goto: Any = None


class RunRequest(BaseModel):
    """A run request as ``langgraph-sdk`` sends it."""

    model_config = ConfigDict(extra="allow")

    assistant_id: str
    """The served graph's id (``GET /info`` names it)."""
    input: dict[str, Any] | None = None
    command: RunCommand | None = None
    stream_mode: str | list[str] = "values"
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    """Given to tools and hooks as the run's ``invocation_state``."""
    multitask_strategy: MultitaskStrategy | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    on_disconnect: Literal["cancel", "continue"] | None = None
    on_completion: Literal["delete", "keep"] | None = None
    after_seconds: float | None = Field(default=None, ge=0, le=86_400)
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    checkpoint_during: bool | None = None
    feedback_keys: list[str] | None = None
    langsmith_tracer: dict[str, Any] | None = None
    strict_resume: bool | None = None
    checkpoint: dict[str, Any] | None = None
    """Start from this checkpoint of the thread (a ``Checkpoint``; its id is the version)."""
    checkpoint_id: str | None = None
    """Start from the checkpoint of this id, as ``checkpoint`` does."""
    interrupt_before: Any = None
    interrupt_after: Any = None
    webhook: Any = None

    @model_validator(mode="after")
    def _supported(self) -> RunRequest:
        for name, why in _UNSUPPORTED.items():
            if getattr(self, name) not in (None, [], ""):
                raise StateError(f"{name!r} is not supported by this server: {why}")
        unknown = sorted(k for k, v in (self.model_extra or {}).items() if v is not None)
        if unknown:
            raise StateError(f"unknown field(s) {unknown} in the run request")
        if self.input and self.command is not None:  # an empty input beside it says nothing
            raise StateError("give either 'input' or 'command', not both")
        if self.command is not None and self.command.goto is not None:
            if "resume" in self.command.model_fields_set:
                raise StateError(
                    "give command.goto or command.resume, not both: a resumed node goes on "
                    "along the graph's edges; resume first, then run with command.goto"
                )
            _goto(self.command.goto)
        bad = [mode for mode in self.modes() if mode not in STREAM_MODES]
        if bad:
            raise StateError(
                f"stream_mode {bad} is not supported; supported: {sorted(STREAM_MODES)}"
            )
        return self

    def modes(self) -> tuple[str, ...]:
        """The requested stream modes, as a tuple."""
        modes = self.stream_mode
        return (modes,) if isinstance(modes, str) else tuple(modes)


def graph_input(request: RunRequest, fields: Collection[str] = ()) -> dict[str, Any] | None:
    """The graph's input: ``messages``, ``state`` (other input keys) and/or ``resume``.

    None (no input, no command) continues the thread: a failed turn is
    retried, a dead run goes on. Messages may be LangChain's
    (``{"type": "human", "content": ...}``, see ``langchain_format``) or
    tenxgraph's. ``command.update``'s ``messages`` (unless ``fields``, the
    state class's fields, has its own ``messages``) are added as the input's.
    """
    command = request.command
    if command is not None:
        given = command.model_fields_set
        result: dict[str, Any] = {}
        if "resume" in given:
            result["resume"] = command.resume
        if command.goto is not None:
            result["goto"] = _goto(command.goto)
        if command.update:
            update = dict(command.update)
            if "messages" in update and "messages" not in fields:
                where = "command.update 'messages'"
                result["messages"] = as_messages(
                    input_messages(update.pop("messages"), where), where
                )
            if update:
                result["state"] = update
        return result or None
    if request.input is None:
        return None
    values = dict(request.input)
    result = {}
    if "messages" in values:
        messages = input_messages(values.pop("messages"))
        result["messages"] = as_messages(messages, "input 'messages'")
    if values:
        result["state"] = values
    return result


def _goto(goto: Any) -> str | Send | list[str | Send]:
    """``command.goto`` as the graph's ``goto`` input: node names and ``Send``s."""
    items = goto if isinstance(goto, list) else [goto]
    if not items:
        raise StateError("command.goto names no node")
    targets: list[str | Send] = []
    for item in items:
        if isinstance(item, str):
            targets.append(item)
        elif isinstance(item, dict) and isinstance(item.get("node"), str):
            targets.append(Send(item["node"], item.get("input", item.get("arg"))))
        else:
            raise StateError(
                "command.goto takes a node name, a Send ({'node': name, 'input': value}) "
                f"or a list of them, got {item!r:.80}"
            )
    return targets if isinstance(goto, list) else targets[0]


def check_state_input(graph: CompiledGraph[Any], given: dict[str, Any] | None) -> None:
    """Refuse (``StateError``, 422) state the graph's state class cannot take, before a run starts.

    A ``goto`` naming no node of the graph is refused too.

    The run refuses it too, but only once started: a streamed run would
    answer 200 and then an ``error`` event, a background run would be
    stored first. The state is merged into a new state of the graph's class,
    as a new thread's first turn merges it, so unknown fields, fields the
    runtime owns and values of the wrong type are refused here, by the same
    code and with the same message as in the run. What depends on the
    thread's own state (a custom reducer's merge with it) is the run's to find.
    """
    if given and "goto" in given:
        goto = given["goto"]
        for item in goto if isinstance(goto, list) else [goto]:
            node = item.node if isinstance(item, Send) else item
            if node not in graph.nodes:
                raise StateError(f"command.goto names no node of the graph: {node!r}")
    if not given or "state" not in given:
        return
    schema = graph.schema
    try:
        schema.apply_input(schema.state_class(), given["state"])
    except StateError:
        raise
    except Exception:  # a reducer failing on a blank state: the run reports it
        pass


def input_messages(value: Any, where: str = "input 'messages'", *, edits: bool = False) -> Any:
    """Messages as runs and state updates take them, in the forms ``as_messages`` reads.

    LangChain message dicts become ``Message``s (``remove`` ones ``RemoveMessage``
    edits where ``edits`` allows them: in state updates, not as a run's input).
    """
    if isinstance(value, (list, tuple)):
        return [_message(item, f"{where}[{i}]", edits) for i, item in enumerate(value)]
    return _message(value, where, edits)


def state_update(values: Any, fields: Collection[str]) -> Any:
    """A state update's values, its ``messages`` as the ``context`` field.

    ``messages`` is what states show and LangGraph clients send, unless the
    state class (``fields``) has a field of that name. Its messages may take
    the forms a run input takes: tenxgraph's or LangChain's message dicts
    (``remove`` ones included), or ``[role, text]`` pairs.
    """
    if isinstance(values, dict) and "messages" in values and "messages" not in fields:
        if "context" in values:
            raise StateError("give the messages once: under 'messages' or under 'context'")
        given = values["messages"]
        values = {k: v for k, v in values.items() if k != "messages"}
        values["context"] = input_messages(given, "'messages'", edits=True)
    return values


def _message(item: Any, where: str, edits: bool) -> Any:
    """A LangChain message dict as a ``Message``, a JSON ``[role, text]`` as a pair.

    A ``type`` naming a role (``user``) or a LangChain class (``HumanMessage``)
    is read as LangChain's type for it.
    """
    if (
        isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], str)  # a list or dict there is not a role (nor hashable)
        and item[0] in ROLE_ALIASES
    ):
        return (item[0], item[1])
    if not isinstance(item, Mapping) or "role" in item or "type" not in item:
        return item
    if not is_langchain_message(item):
        kind = str(item["type"]).removesuffix("MessageChunk").removesuffix("Message").lower()
        if kind not in ROLE_ALIASES:
            return item
        item = {**item, "type": _LANGCHAIN_TYPE[ROLE_ALIASES[kind]]}
    message = from_langchain_message(item, where)
    if isinstance(message, RemoveMessage) and not edits:
        raise StateError(
            f"{where}: a 'remove' message edits the thread's messages; send it in a "
            "state update (POST /threads/{thread_id}/state), not as a run's input"
        )
    return message


def checkpoint_named(
    checkpoint: Mapping[str, Any] | None, checkpoint_id: str | None, thread_id: str
) -> str | None:
    """The checkpoint id a request names with ``checkpoint`` and/or ``checkpoint_id``, or None.

    A ``Checkpoint`` of another thread, or of a subgraph namespace (a run or an
    update starts at the top of the thread), is refused.
    """
    named = None if checkpoint is None else checkpoint.get("checkpoint_id")
    if checkpoint is not None:
        if checkpoint.get("thread_id") not in (None, "", thread_id):
            raise StateError("'checkpoint' names another thread than the request's")
        if checkpoint.get("checkpoint_ns") not in (None, ""):
            raise StateError(
                "'checkpoint' names a subgraph namespace: runs and state updates start at "
                "the top of the thread (a paused subgraph continues with command.resume); "
                "read a subgraph's state with POST /threads/{thread_id}/state/checkpoint"
            )
    if named in (None, ""):
        named = checkpoint_id
    elif checkpoint_id not in (None, "", named):
        raise StateError("'checkpoint' and 'checkpoint_id' name different checkpoints")
    return None if named in (None, "") else str(named)


def run_config_of(request: RunRequest, thread_id: str, user_id: str) -> dict[str, Any]:
    """The graph's run config: the request's config, the thread and user, the strategy.

    ``thread_id`` and ``user_id`` come from the path and the caller; a
    request config naming others is refused (a run cannot reach another
    tenant's thread through its config).
    """
    config = run_config(request.config or {})
    for key in _OWN_CONFIG_KEYS:
        if key in config and config[key] not in (None, "") and key != "run_id":
            expected = thread_id if key == "thread_id" else user_id
            if str(config[key]) != expected:
                raise StateError(f"the run config's {key!r} must not differ from the request's")
    limit = config.get("recursion_limit")
    if limit is not None and (type(limit) is not int or limit <= 0):
        raise StateError(
            f"the run config's 'recursion_limit' must be a positive integer, got {limit!r}"
        )
    config.pop("run_id", None)
    config.pop("trace_content", None)  # the server's environment decides what its traces hold
    named = checkpoint_named(request.checkpoint, request.checkpoint_id, thread_id)
    if named is not None:
        if config.get("checkpoint_id") not in (None, "", named):
            raise StateError("the run names two checkpoints: its config's and 'checkpoint'")
        config["checkpoint_id"] = named
    checkpoint_of(config)  # a bad id is a 422 before the run is created
    thread_metadata_of(config)  # and so is metadata that is no dict
    config.update(thread_id=thread_id, user_id=user_id)
    if request.multitask_strategy is not None:
        config["multitask_strategy"] = request.multitask_strategy
    return config


def name_graph(config: dict[str, Any], graph_id: str) -> dict[str, Any]:
    """Make the run name its graph in its thread's metadata; the metadata the run merges.

    ``graph_id`` and ``assistant_id``, as LangGraph sets them on a run's
    thread: clients list a graph's threads by them (Agent Chat UI:
    ``threads.search({metadata: {graph_id}})``). They go in the run
    config's ``thread_metadata``, which the run's first save merges into
    the thread's metadata (creating the thread with it): no save of its
    own, none at all for a thread that has them already, nothing for a
    refused run, and a run waiting for its thread writes them once it holds it.
    """
    tags = {"graph_id": graph_id, "assistant_id": graph_id}
    config["thread_metadata"] = merged = {**(thread_metadata_of(config) or {}), **tags}
    return merged
