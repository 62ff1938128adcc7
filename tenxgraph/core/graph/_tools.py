"""Tools: plain Python functions described to the model by a JSON schema.

The schema comes from the type hints and the docstring (Google ``Args:`` or
NumPy ``Parameters`` sections give argument descriptions). Parameters named
``state``, ``config``, ``tool_call_id``, ``invocation_state`` or
``idempotency_key`` are injected by the runtime and never shown to the model.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from tenxgraph.core.llm.base import ToolSpec
from tenxgraph.errors import ToolArgumentsError, ToolError

__all__ = [
    "IDEMPOTENCY_KEY_LENGTH",
    "INJECTED_PARAMETERS",
    "Tool",
    "as_tools",
    "idempotency_key",
    "tool",
]

INJECTED_PARAMETERS = frozenset(
    {"state", "config", "tool_call_id", "invocation_state", "idempotency_key"}
)
"""Parameter names the runtime fills in; they are not part of the tool's schema."""

IDEMPOTENCY_KEY_LENGTH = 32
"""Characters in a tool call's idempotency key (lowercase hex, 128 bits)."""


def idempotency_key(*names: str | int) -> str:
    """The idempotency key of the tool call that ``names`` identify, in stored data only.

    A hash, so the key is opaque, of fixed length (``IDEMPOTENCY_KEY_LENGTH``)
    and safe in any header or field, whatever the ids hold; the names are
    written as a JSON list first, so ``("a", "bc")`` and ``("ab", "c")``, or
    ``1`` and ``"1"``, never give one key.
    """
    text = json.dumps(["tenxgraph tool call", *names], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:IDEMPOTENCY_KEY_LENGTH]


class Tool:
    """A function the model can call, with its schema and argument validation."""

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.function = function
        self.name = name or function.__name__
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.name):
            raise ToolError(f"tool name {self.name!r} must be 1-64 letters, digits, _ or -")
        summary, arg_docs = _parse_docstring(inspect.getdoc(function) or "")
        self.description = description or summary or self.name
        self.timeout = timeout
        self.is_async = inspect.iscoroutinefunction(function)
        signature = inspect.signature(function)
        self.injected = frozenset(INJECTED_PARAMETERS.intersection(signature.parameters))
        self.arguments = _arguments_model(self.name, function, signature, arg_docs, self.injected)
        self._schema: dict[str, Any] | None = None

    def spec(self) -> ToolSpec:
        """What the model is told about this tool (a copy of the schema: a caller may change it).

        Pydantic builds the JSON schema anew on each call (about a millisecond for
        one small model), and a run asks for it at every model call.
        """
        if self._schema is None:
            self._schema = self.arguments.model_json_schema()
            self._schema.pop("title", None)
        return ToolSpec(self.name, self.description, copy.deepcopy(self._schema))

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check the model's arguments; raise ``ToolArgumentsError`` saying what was wrong."""
        try:
            model = self.arguments.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ToolArgumentsError(
                f"invalid arguments for tool {self.name!r}: {problems}"
            ) from None
        return {name: getattr(model, name) for name in type(model).model_fields}

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, timeout: float | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a ``Tool`` from a function; optional, plain functions work as tools too."""

    def wrap(fn: Callable[..., Any]) -> Tool:
        return Tool(fn, name=name, description=description, timeout=timeout)

    return wrap(function) if function is not None else wrap


def as_tools(tools: Sequence[Callable[..., Any] | Tool]) -> dict[str, Tool]:
    """Index tools by name, wrapping plain functions; duplicate names are an error."""
    indexed: dict[str, Tool] = {}
    for item in tools:
        wrapped = item if isinstance(item, Tool) else Tool(item)
        if wrapped.name in indexed:
            raise ToolError(f"two tools are named {wrapped.name!r}")
        indexed[wrapped.name] = wrapped
    return indexed


def _arguments_model(
    name: str,
    function: Callable[..., Any],
    signature: inspect.Signature,
    docs: dict[str, str],
    injected: frozenset[str],
) -> type[BaseModel]:
    try:
        hints = get_type_hints(function)
    except (NameError, TypeError):
        hints = {}  # resolved one by one below; injected parameters need no hint
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.name in injected:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(f"tool {name!r}: *args/**kwargs cannot be described to a model")
        annotation = hints.get(param.name) or _resolve_hint(name, function, param)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, Field(default, description=docs.get(param.name)))
    model: type[BaseModel] = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


def _resolve_hint(name: str, function: Callable[..., Any], param: inspect.Parameter) -> Any:
    annotation = param.annotation
    if annotation is param.empty:
        return Any
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(
            annotation, getattr(function, "__globals__", {})
        )  # a type hint, in the tool's own module
    except Exception as exc:
        raise ToolError(
            f"tool {name!r}: cannot resolve the type hint {annotation!r} of {param.name!r}: {exc}"
        ) from None


_GOOGLE_SECTION = re.compile(r"^(Args|Arguments|Parameters):\s*$", re.MULTILINE)
_NUMPY_SECTION = re.compile(r"^Parameters\s*\n-{3,}\s*$", re.MULTILINE)
_SECTION_END = re.compile(r"^(\S.*:\s*$|\S.*\n-{3,}\s*$)", re.MULTILINE)


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its summary and per-argument descriptions."""
    numpy = _NUMPY_SECTION.search(doc)
    google = None if numpy else _GOOGLE_SECTION.search(doc)
    section = numpy or google
    if section is None:
        return doc.strip(), {}
    summary = doc[: section.start()].strip()
    body = doc[section.end() :].lstrip("\n")
    end = _SECTION_END.search(body)
    if end is not None:
        body = body[: end.start()]
    return summary, (_numpy_args(body) if numpy else _google_args(body))


def _google_args(body: str) -> dict[str, str]:
    docs: dict[str, str] = {}
    current = None
    for line in body.splitlines():
        match = re.match(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", line)
        if match and (current is None or _indent(line) <= _indent_of_args(body)):
            current = match.group(1).lstrip("*")
            docs[current] = match.group(3).strip()
        elif current and line.strip():
            docs[current] = f"{docs[current]} {line.strip()}".strip()
    return docs


def _numpy_args(body: str) -> dict[str, str]:
    docs: dict[str, str] = {}
    current = None
    base = _indent_of_args(body)
    for line in body.splitlines():
        if not line.strip():
            continue
        if _indent(line) <= base:
            current = line.split(":", 1)[0].strip()
            docs[current] = ""
        elif current:
            docs[current] = f"{docs[current]} {line.strip()}".strip()
    return docs


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _indent_of_args(body: str) -> int:
    for line in body.splitlines():
        if line.strip():
            return _indent(line)
    return 0
