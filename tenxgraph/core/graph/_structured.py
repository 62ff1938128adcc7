"""Structured output: what ``output_schema`` accepts, how it is asked for, how answers are read.

``output_schema`` is a pydantic model, a dataclass, a TypedDict, a JSON-schema
dict, or a union of them (``A | B``, ``Union[A, B]``, or a list ``[A, B]``,
which can hold dicts). Everything is checked when the Agent is built: a
schema that cannot be used is a ``GraphBuildError`` naming what is wrong.

Two strategies ask the model for it (``output_strategy``):

- **native**: the provider's own structured output (OpenAI's ``json_schema``
  response format, Gemini's ``response_json_schema``, Anthropic's
  ``output_config.format``): ``ModelRequest.output_schema`` carries the
  schema and the answer is JSON text. A union is sent as an object with one
  field, ``answer``, holding ``anyOf`` the members (OpenAI wants an object at
  the root).
- **tool**: each schema becomes a tool (named after the schema) that the model
  must call to answer; with other tools offered, the model must call one of
  them or an output tool (``tool_choice`` ``required``). The call is never run:
  in the recorded answer it is replaced by its arguments as JSON text, with
  ``metadata["output_tool_call"]`` naming the call, so the history holds no
  unanswered call and replays to any provider like a native answer. An output
  call made together with other tool calls is dropped: those tools run, and
  the model is asked again.

``auto`` (the default) is native when the model says it can do it
(``ChatModel.supports_output_schema``), else tool. An answer that does not
validate is sent back with what was wrong, ``retries`` times (the failed
attempts are not recorded), then ``OutputValidationError`` is raised.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, Protocol, TypeVar, get_args, get_origin

from pydantic import BaseModel, PydanticUserError, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

from tenxgraph.core.graph._json_schema import SchemaProblem, check_schema, validate
from tenxgraph.core.llm.base import ChatModel, ToolChoice, ToolSpec
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import TextBlock, ToolCallBlock, ToolResultBlock
from tenxgraph.core.state.tool_arguments import invalid_tool_args
from tenxgraph.errors import ConfigError, GraphBuildError, OutputValidationError

__all__ = ["OUTPUT_TOOL_CALL_KEY", "AskAgain", "OutputStrategy", "Settled", "StructuredOutput"]

OutputStrategy = Literal["auto", "native", "tool"]
"""How structured output is asked for: ``auto`` picks ``native`` when the model supports it."""

OUTPUT_TOOL_CALL_KEY = "output_tool_call"
"""``Message.metadata`` key of an answer given through an output tool: ``{"id", "name"}``."""

UNION_KEY = "answer"
"""The one field of the object a union is sent as, natively."""

_STRATEGIES = ("auto", "native", "tool")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n(.*)\n```$", re.DOTALL)
_DEFAULT_DESCRIPTION = "Give your final answer in this structure."

AskAgain = Callable[[list[Message]], Awaitable[Message]]
"""Makes the model call again with messages appended; returns the complete answer."""


class _HasOutputPart(Protocol):
    """A ``ModelCall`` or a ``ModelRequest``: what ``apply`` changes."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def tools(self) -> list[ToolSpec]: ...
    @property
    def tool_choice(self) -> ToolChoice: ...


_Call = TypeVar("_Call", bound=_HasOutputPart)


@dataclass(frozen=True, slots=True)
class Settled:
    """An answer read against the schema.

    ``structured`` is False when the answer calls tools: it goes to the tools
    as it is, and the structured answer comes later in the turn.
    """

    message: Message
    """The answer to record (an output tool call replaced by its JSON text)."""
    value: Any = None
    """The validated object (a model or dataclass instance, or a dict)."""
    structured: bool = False


@dataclass(frozen=True, slots=True)
class _Rejected:
    """An answer that did not validate."""

    problems: list[str]
    """What was wrong, each ``place: problem``."""
    follow_up: list[Message]
    """What the model is told: a result for each output call, or a user correction."""


@dataclass(frozen=True, slots=True)
class _Member:
    """One schema of ``output_schema`` (a union has several)."""

    name: str
    json_schema: dict[str, Any]
    adapter: TypeAdapter[Any] | None
    """Validates and builds the Python type; None for a JSON-schema dict."""

    @property
    def description(self) -> str:
        text = self.json_schema.get("description")
        return text if isinstance(text, str) and text.strip() else _DEFAULT_DESCRIPTION

    def validate(self, data: Any) -> tuple[Any, list[str]]:
        """The object built from decoded JSON ``data`` and no problems, or None and the problems."""
        if self.adapter is None:
            problems = validate(self.json_schema, data)
            return (None, problems) if problems else (data, [])
        try:
            return self.adapter.validate_json(json.dumps(data)), []
        except ValidationError as exc:
            return None, [
                f"{'.'.join(str(p) for p in error['loc']) or '(root)'}: {error['msg']}"
                for error in exc.errors()
            ]

    def stored(self, value: Any) -> Any:
        """What ``Message.parsed_content`` holds: a pydantic model as it is, else its JSON data."""
        if isinstance(value, BaseModel) or self.adapter is None:
            return value
        return self.adapter.dump_python(value, mode="json")


class StructuredOutput:
    """The output part of an Agent: checked schemas, the request shape, and reading answers."""

    def __init__(
        self, schema: object, *, strategy: OutputStrategy = "auto", retries: int = 1
    ) -> None:
        """Check ``schema`` (``GraphBuildError``) and the options (``ConfigError``)."""
        if strategy not in _STRATEGIES:
            raise ConfigError(f"output_strategy must be one of {_STRATEGIES}, got {strategy!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"output_retries must be an integer >= 0, got {retries!r}")
        self.members = tuple(_member(item) for item in _flatten(schema))
        names = [member.name for member in self.members]
        if len(set(names)) < len(names):
            raise GraphBuildError(
                f"output_schema: the schemas of a union need distinct names, got {names} "
                "(give JSON-schema dicts a 'title')"
            )
        self.strategy = strategy
        self.retries = retries
        self.name = " | ".join(names)
        """How messages name the schema."""
        self.native_schema, self.native_name = _native(self.members)
        self._by_name = {member.name: member for member in self.members}

    def check_tools(self, names: Collection[str], where: str) -> None:
        """Refuse tools named like an output tool (the answer would be ambiguous)."""
        clash = sorted(set(names) & set(self._by_name))
        if clash:
            raise GraphBuildError(
                f"{where}: tool {clash[0]!r} has the name of an output_schema; rename one of them"
            )

    def uses_tool(self, model: ChatModel, *, with_tools: bool) -> bool:
        """Whether the tool strategy is used for ``model``."""
        if self.strategy == "auto":
            return not model.supports_output_schema(with_tools=with_tools)
        return self.strategy == "tool"

    def apply(self, call: _Call, model: ChatModel) -> _Call:
        """``call`` (a ``ModelCall`` or ``ModelRequest``) with the output part for ``model``.

        Native: the schema in ``output_schema``. Tool: the output tools added
        to ``tools``, and a ``tool_choice`` that makes the model call a tool.
        A tool the Agent forces keeps its turn first (``required``: without
        the output tools, until obeyed); ``none`` leaves only the output tools.
        """
        if not self.uses_tool(model, with_tools=bool(call.tools)):
            return replace(
                call, output_schema=self.native_schema, output_schema_name=self.native_name
            )
        choice = call.tool_choice
        offered = [] if choice == "none" else list(call.tools)
        if choice == "required" and offered:  # the Agent's forced call comes first, unmixed
            return replace(call, output_schema=None)
        outputs = [ToolSpec(m.name, m.description, m.json_schema) for m in self.members]
        if choice in ("auto", "required", "none"):
            choice = "required" if offered or len(outputs) > 1 else outputs[0].name
        return replace(call, tools=[*offered, *outputs], tool_choice=choice, output_schema=None)

    async def settle(
        self, answer: Message, ask_again: AskAgain, *, native: bool, provider: str = ""
    ) -> Settled:
        """Read ``answer``; ask again with what was wrong, up to ``retries`` times.

        ``native`` says how the answer was asked for (a native union answer is
        wrapped). ``ask_again(extra)`` makes the same call with ``extra``
        appended: the failed answers so far, each with the replies that say
        what was wrong.
        """
        tried: list[Message] = []
        read = self._read(answer, native)
        for _ in range(self.retries):
            if isinstance(read, Settled):
                return read
            tried += [answer, *read.follow_up]
            answer = await ask_again(list(tried))
            read = self._read(answer, native)
        if isinstance(read, Settled):
            return read
        raise OutputValidationError(
            f"structured output for {self.name} failed {_times(self.retries + 1)}: "
            f"{'; '.join(read.problems)}",
            provider=provider,
        )

    def _read(self, answer: Message, native: bool) -> Settled | _Rejected:
        """The settled answer, or what was wrong and the messages that tell the model."""
        calls = answer.tool_calls()
        outputs = [c for c in calls if c.name in self._by_name]
        if len(outputs) < len(calls):  # other tools first: they run, the output comes later
            return Settled(_without(answer, outputs))
        if len(outputs) > 1:
            problem = (
                f"{len(outputs)} output calls; give one final answer: call one of {self.name}, once"
            )
            return _Rejected([problem], [_tool_error(call, problem) for call in outputs])
        if outputs:
            return self._read_call(answer, outputs[0])
        value, member, problems = self._read_text(answer.text(), native)
        if member is None:
            return _Rejected(problems, [_correction(problems, self._ask_again(native))])
        parsed = answer.model_copy(update={"parsed_content": member.stored(value)})
        return Settled(parsed, value, structured=True)

    def _read_call(self, answer: Message, call: ToolCallBlock) -> Settled | _Rejected:
        member = self._by_name[call.name]
        refused = invalid_tool_args(answer).get(call.id)
        value, problems = (None, [refused]) if refused else member.validate(call.args)
        if problems:
            text = f"Not accepted: {'; '.join(problems)}. Call {call.name} again, fixed."
            return _Rejected(problems, [_tool_error(call, text)])
        message = _as_text(answer, call).model_copy(update={"parsed_content": member.stored(value)})
        return Settled(message, value, structured=True)

    def _read_text(self, text: str, native: bool) -> tuple[Any, _Member | None, list[str]]:
        """The value of a JSON text answer and its member, or None and the problems."""
        stripped = text.strip()
        fenced = _FENCE.match(stripped)
        try:
            data = json.loads(fenced.group(1) if fenced else stripped)
        except ValueError as exc:
            return None, None, [f"the answer is not valid JSON ({exc})"]
        if native and len(self.members) > 1:
            if not isinstance(data, dict) or UNION_KEY not in data:
                return None, None, [f"(root): expected an object with the field {UNION_KEY!r}"]
            data = data[UNION_KEY]
        results = [(m, *m.validate(data)) for m in self.members]
        valid = [(m, value) for m, value, problems in results if not problems]
        if valid:
            member, value = min(valid, key=lambda pair: _unknown_keys(pair[0], data))
            return value, member, []
        if len(results) == 1:
            return None, None, results[0][2]
        return None, None, [f"as {m.name}: {'; '.join(problems)}" for m, _, problems in results]

    def _ask_again(self, native: bool) -> str:
        if native:
            return "Answer again with only a JSON object that matches the schema."
        if len(self.members) == 1:
            return f"Give your final answer by calling the tool {self.name}."
        return f"Give your final answer by calling one of the tools {self.name}."


# --- schemas -----------------------------------------------------------------------


def _flatten(schema: object) -> list[object]:
    """The members of a union (``A | B``, ``Union[A, B]``, a list or tuple), or ``[schema]``."""
    if isinstance(schema, list | tuple):
        if not schema:
            raise GraphBuildError("output_schema: an empty list is no schema")
        return [member for item in schema for member in _flatten(item)]
    if get_origin(schema) in (typing.Union, types.UnionType):
        return [member for item in get_args(schema) for member in _flatten(item)]
    return [schema]


def _member(schema: object) -> _Member:
    """Check one schema and describe it; ``GraphBuildError`` says what is wrong."""
    if isinstance(schema, Mapping):
        try:
            check_schema(schema)
        except SchemaProblem as exc:
            raise GraphBuildError(f"output_schema: {exc}") from None
        if schema.get("type") != "object":
            raise GraphBuildError(
                "output_schema: a JSON schema must describe an object ('type': 'object'), "
                f"got 'type': {schema.get('type')!r}"
            )
        title = schema.get("title")
        name = _tool_name(title) if isinstance(title, str) else "output"
        return _Member(name, json.loads(json.dumps(schema)), None)
    if not _is_schema_type(schema):
        shown = "None" if schema is type(None) else getattr(schema, "__name__", repr(schema))
        raise GraphBuildError(
            "output_schema must be a pydantic model, a dataclass, a TypedDict, a JSON-schema "
            f"dict, or a union of them; got {shown}"
        )
    assert isinstance(schema, type)
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(schema)
        json_schema = adapter.json_schema()
    except (PydanticUserError, TypeError, ValueError) as exc:
        raise GraphBuildError(
            f"output_schema {schema.__name__}: no JSON schema can be made for it: {exc}"
        ) from None
    return _Member(_tool_name(schema.__name__), json_schema, adapter)


def _is_schema_type(schema: object) -> bool:
    if not isinstance(schema, type):
        return False
    return issubclass(schema, BaseModel) or dataclasses.is_dataclass(schema) or is_typeddict(schema)


def _tool_name(name: str) -> str:
    """A name every provider accepts for a tool and a response format (letters, digits, _ -)."""
    return _NAME_CHARS.sub("_", name).strip("_")[:64] or "output"


def _native(members: Sequence[_Member]) -> tuple[dict[str, Any], str]:
    """The schema and name sent natively: the one member's, or an object wrapping the union."""
    if len(members) == 1:
        return members[0].json_schema, members[0].name
    defs: dict[str, Any] = {}
    branches = []
    for member in members:
        branch = dict(member.json_schema)
        for name, definition in branch.pop("$defs", {}).items():
            if defs.setdefault(name, definition) != definition:
                raise GraphBuildError(
                    f"output_schema: two schemas of the union define {name!r} differently"
                )
        branches.append(branch)
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {UNION_KEY: {"anyOf": branches}},
        "required": [UNION_KEY],
    }
    if defs:
        wrapper["$defs"] = defs
    return wrapper, _tool_name("_or_".join(member.name for member in members))


def _unknown_keys(member: _Member, data: Any) -> int:
    """How many fields of ``data`` the member does not declare (the closest member wins)."""
    known = member.json_schema.get("properties", {})
    return sum(1 for key in data if key not in known) if isinstance(data, dict) else 0


# --- messages ----------------------------------------------------------------------


def _without(answer: Message, calls: Sequence[ToolCallBlock]) -> Message:
    """``answer`` without ``calls`` (output calls made next to other tool calls)."""
    if not calls:
        return answer
    dropped = {call.id for call in calls}
    content = [b for b in answer.content if not (isinstance(b, ToolCallBlock) and b.id in dropped)]
    raw_calls = [c for c in answer.tools_calls or [] if c.get("id") not in dropped]
    return answer.model_copy(update={"content": content, "tools_calls": raw_calls or None})


def _as_text(answer: Message, call: ToolCallBlock) -> Message:
    """``answer`` with the output call replaced, in place, by its arguments as JSON text."""
    text = TextBlock(text=json.dumps(call.args, ensure_ascii=False))
    content = [text if block is call else block for block in answer.content]
    raw_calls = [c for c in answer.tools_calls or [] if c.get("id") != call.id]
    metadata = {**answer.metadata, OUTPUT_TOOL_CALL_KEY: {"id": call.id, "name": call.name}}
    return answer.model_copy(
        update={"content": content, "tools_calls": raw_calls or None, "metadata": metadata}
    )


def _tool_error(call: ToolCallBlock, text: str) -> Message:
    result = ToolResultBlock(call_id=call.id, output=text, is_error=True, status="failed")
    return Message(role="tool", content=[result])


def _correction(problems: Sequence[str], ask: str) -> Message:
    return Message.text_message(
        f"Your answer did not match the required JSON schema: {'; '.join(problems)}. {ask}"
    )


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")
