r"""What JSON cannot hold, and what tenxgraph does about it: the one policy, in one module.

Two kinds of Python value have no JSON form: a float that is NaN or an
infinity (JSON has no such numbers; pydantic would write ``null``, so the
value would silently change), and a string holding a lone surrogate
(``"\ud800"``: it has no UTF-8 encoding, so no provider takes it and no store
holds it). Postgres text and ``jsonb`` cannot hold a NUL (``"\x00"``) either.
Where such a value meets tenxgraph decides what happens to it:

- **Input is refused where it enters**, before anything is stored, naming
  where the value was: message fields and content blocks (``surrogate_text``,
  ``check_json_data``, as pydantic validation errors), tool arguments (the
  call is answered with the reason), ``app_state`` values, checkpoint
  metadata and long-term memory values (``json_text``, wrapped in the
  caller's error), thread and tenant ids (``lone_surrogate``).
- **Work already done is cleaned, not refused**: a tool's output, an
  exception's text, a provider's answer cannot be asked for again without
  cost, so their NUL characters and lone surrogates become U+FFFD
  (``storable_text``, ``storable_data``, ``replace_lone_surrogates``), and
  a note says where.
- **A save refuses a state field** that holds such a value behind
  validation (a float field set to NaN, a string set after validation):
  ``json_bytes`` finds the fields, and the save raises
  ``UnstorableStateError`` naming them before anything is written.
- **What is sent to a reader** (a stream event) writes NaN and infinities
  as ``null``, as pydantic's model dumps and LangGraph's server do
  (``reader_json``): an event is never invalid JSON.

JSON text is checked by the parser that reads it: pydantic's refuses lone
surrogate escapes (and ``FiniteJson`` fields the NaN it reads), and
``parse_json`` refuses the ``NaN`` and ``Infinity`` words Python's parser
takes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json

__all__ = [
    "MAX_DEPTH",
    "REPLACEMENT",
    "check_json_data",
    "json_bytes",
    "json_problem",
    "json_text",
    "lone_surrogate",
    "parse_json",
    "reader_json",
    "replace_lone_surrogates",
    "storable_data",
    "storable_text",
    "surrogate_text",
]

REPLACEMENT = "\ufffd"
"""What replaces a character that cannot be kept (U+FFFD REPLACEMENT CHARACTER)."""

MAX_DEPTH = 100
"""Deepest nesting accepted in JSON data: a stored message must load again, and
pydantic's JSON parser stops at about 200 levels for the whole message."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_STRICT = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""``json.dumps`` with options makes an encoder per call: a third of encoding a state row."""
_MAX_NOTES = 10


# --- detection -------------------------------------------------------------------------------


def lone_surrogate(text: str) -> re.Match[str] | None:
    """The first lone surrogate in ``text``, or None (at once for ASCII text)."""
    if text.isascii():
        return None
    return _LONE_SURROGATE.search(text)


def json_bytes(values: Mapping[str, Any]) -> tuple[bytes | None, list[str]]:
    """``values`` as JSON in one Rust call, and the names of those JSON cannot hold.

    The text is None when a value does not serialize at all (a lone surrogate,
    an object). The names are those of values holding NaN, an infinity, a
    lone surrogate or a NUL (which Postgres cannot store, so no backend
    does: a thread stays storable everywhere). A non-finite number is the one
    value written differently with ``inf_nan_mode="null"`` and
    ``"constants"``, so only a text holding the word ``NaN`` or ``Infinity``
    or a NUL's escape (rare) is checked value by value.
    """
    try:
        text: bytes | None = to_json(values, inf_nan_mode="constants")
    except PydanticSerializationError:
        text = None
    # find, not ``in``: bytes' ``in`` first tries the word as an int, and raising and
    # clearing that TypeError cost more than the search
    if (
        text is not None
        and text.find(b"NaN") == -1
        and text.find(b"Infinity") == -1
        and text.find(_NUL) == -1
    ):
        return text, []
    return text, [name for name, value in values.items() if not _exact_json(value)]


_NUL = b"\\u0000"
"""A NUL as JSON text writes it."""


def _exact_json(value: Any) -> bool:
    try:
        text = to_json(value, inf_nan_mode="constants")
        return to_json(value, inf_nan_mode="null") == text and text.find(_NUL) == -1
    except PydanticSerializationError:
        return False


# --- refusing input --------------------------------------------------------------------------


def surrogate_text(found: re.Match[str], field: str | None = None) -> str:
    """How a lone surrogate is reported: which one, where, and what text must be."""
    what = f"{field} holds a lone surrogate" if field else "lone surrogate"
    separator = ";" if field else ":"
    return (
        f"{what} {found.group()!r} at index {found.start()}{separator} "
        "text must be valid Unicode (encodable as UTF-8)"
    )


def check_json_data(value: Any, field: str, *, from_python: bool = True) -> None:
    """Raise ``ValueError`` naming where, unless ``value`` is JSON data a provider can take.

    Refused: NaN and infinities (JSON has no such numbers; they would be
    stored as ``null``), values of other types and, for Python input, lone
    surrogates in strings or keys and nesting deeper than ``MAX_DEPTH``
    levels. JSON input (``from_python=False``) was parsed by pydantic, which
    refuses those.
    """
    try:
        dumped = _STRICT.encode(value)
    except (TypeError, ValueError, RecursionError):
        raise ValueError(json_problem(value, field) or f"{field} is not JSON data") from None
    if not from_python:
        return
    suspect = lone_surrogate(dumped) is not None
    if suspect or dumped.count("[") + dumped.count("{") > MAX_DEPTH:
        problem = json_problem(value, field)
        if problem is not None:
            raise ValueError(problem)


def json_problem(value: Any, where: str, depth: int = 0) -> str | None:
    """What makes ``value`` not JSON data, and where (None when nothing is wrong)."""
    if depth > MAX_DEPTH:
        return f"{where} is nested more than {MAX_DEPTH} levels deep"
    if isinstance(value, dict):
        return _dict_problem(value, where, depth)
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            problem = json_problem(item, f"{where}[{index}]", depth + 1)
            if problem is not None:
                return problem
        return None
    return _scalar_problem(value, where)


def _dict_problem(value: dict[Any, Any], where: str, depth: int) -> str | None:
    for key, item in value.items():
        if not isinstance(key, str):
            return f"{where} has the key {key!r}, which is not a string"
        problem = json_problem(key, f"{where} key {key!r}", depth + 1) or json_problem(
            item, f"{where}[{key!r}]", depth + 1
        )
        if problem is not None:
            return problem
    return None


def _scalar_problem(value: Any, where: str) -> str | None:
    if isinstance(value, str):
        found = lone_surrogate(value)
        return None if found is None else surrogate_text(found, where)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where} is {value!r}, which JSON cannot hold (it would become null)"
    if value is None or isinstance(value, bool | int | float):
        return None
    return f"{where} is a {type(value).__name__}, not JSON data"


def json_text(value: Any) -> str:
    """Compact JSON text of ``value``, refusing what JSON cannot hold.

    ``TypeError`` for a value of another type, ``ValueError`` for NaN, an
    infinity or a lone surrogate (its message says which). The caller raises
    its own error, naming what held the value.
    """
    text = _COMPACT.encode(value)
    if lone_surrogate(text) is not None:
        raise ValueError("it holds lone surrogates, which UTF-8 cannot encode")
    return text


def parse_json(text: str | bytes) -> Any:
    """JSON text as data; ``ValueError`` for the words ``NaN`` and ``Infinity``, which are not JSON.

    Python's parser accepts them (and makes a float JSON cannot hold of them).
    """
    return json.loads(text, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def reader_json(data: Any) -> str:
    """JSON text of ``data`` for a reader: NaN and infinities as ``null``, never ``NaN``.

    Models, dates and bytes are written as pydantic writes them.
    """
    return to_json(data, inf_nan_mode="null").decode()


# --- cleaning what was already produced ------------------------------------------------------


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD."""
    if lone_surrogate(text) is None:
        return text
    return _LONE_SURROGATE.sub(REPLACEMENT, text)


def storable_text(text: str) -> str:
    """``text`` with each NUL and lone surrogate replaced by U+FFFD."""
    if text.isascii() and "\x00" not in text:
        return text
    return _UNSTORABLE.sub(REPLACEMENT, text)


def storable_data(value: Any, where: str, notes: list[str]) -> Any:
    """``value`` with its strings (dict keys too, at any depth) made storable.

    Dicts, lists, tuples and pydantic models are walked (a model that held
    such text is validated again from its cleaned dump); other values are
    returned as they are. One note per cleaned string is appended to ``notes``,
    naming where it was, e.g. ``output[3]['name']: a NUL at index 5 replaced
    by U+FFFD`` (at most 10 notes, then one saying there were more). Data
    nested deeper than ``MAX_DEPTH`` is left as it is: the JSON check that
    follows refuses it anyway.
    """
    return _Cleaning(notes).clean(value, where, 0)


class _Cleaning:
    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self.cleaned = 0

    def clean(self, value: Any, where: str, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value, where)
        if depth > MAX_DEPTH:
            return value
        if isinstance(value, dict):
            return {
                self.text(key, f"{where} key {key!r}") if isinstance(key, str) else key: (
                    self.clean(item, f"{where}[{key!r}]", depth + 1)
                )
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            items = [self.clean(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, BaseModel):
            before = self.cleaned
            dumped = self.clean(value.model_dump(), where, depth)
            return value if self.cleaned == before else type(value).model_validate(dumped)
        return value

    def text(self, text: str, where: str) -> str:
        if text.isascii() and "\x00" not in text:
            return text
        found = list(_UNSTORABLE.finditer(text))
        if not found:
            return text
        self.cleaned += 1
        first = found[0].group()
        kind = "a NUL" if first == "\x00" else f"a lone surrogate {first!r}"
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        if self.cleaned <= _MAX_NOTES:
            self.notes.append(
                f"{where}: {kind} at index {found[0].start()}{more} replaced by U+FFFD"
            )
        elif self.cleaned == _MAX_NOTES + 1:
            self.notes.append("more strings had such characters replaced")
        return _UNSTORABLE.sub(REPLACEMENT, text)
