"""A small runtime checker of JSON answers against ``langgraph_sdk.schema``'s TypedDicts.

``problems(value, SomeTypedDict)`` lists where ``value`` does not have the
declared shape: a required key missing (``NotRequired`` keys may be absent;
extra keys are allowed, as a TypedDict allows them), or a value of another
type. ``datetime`` fields are ISO strings on the wire (the SDK hands JSON
back as parsed), so an ISO string is what they must be. Types the checker
does not know (the SDK's Protocol aliases for ``context``, forward
references) pass: it checks what the schema states, and no more.
"""

from __future__ import annotations

import collections.abc
import datetime
import types
import typing
from typing import Any, NotRequired, Required

import typing_extensions

_MISSING = object()


def problems(value: Any, expected: Any, where: str = "answer") -> list[str]:
    """Every way ``value`` differs from the type ``expected`` (empty when it matches)."""
    origin = typing.get_origin(expected)
    args = typing.get_args(expected)
    if expected is Any or isinstance(expected, typing.ForwardRef | str):
        return []
    if origin in (NotRequired, Required):
        return problems(value, args[0], where)
    if origin in (typing.Union, types.UnionType):
        found = [problems(value, arm, where) for arm in args]
        if any(not found_in_arm for found_in_arm in found):
            return []
        return [f"{where}: {_show(value)} is none of {_name(expected)}"]
    if origin is typing.Literal:
        return [] if value in args else [f"{where}: {_show(value)} is not one of {list(args)}"]
    if expected is type(None):
        return [] if value is None else [f"{where}: {_show(value)} is not null"]
    if typing_extensions.is_typeddict(expected):  # the SDK's TypedDicts are typing_extensions'
        return _typed_dict(value, expected, where)
    return _plain(value, expected, origin, args, where)


def _plain(value: Any, expected: Any, origin: Any, args: tuple[Any, ...], where: str) -> list[str]:
    if expected is datetime.datetime:
        return [] if _iso(value) else [f"{where}: {_show(value)} is not an ISO date-time"]
    simple = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}
    if expected in simple:
        ok = isinstance(value, simple[expected]) and not (
            expected is not bool and isinstance(value, bool)
        )
        return [] if ok else [f"{where}: {_show(value)} is not a {expected.__name__}"]
    container = origin or expected
    if container in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            return [f"{where}: {_show(value)} is not an object"]
        item = args[1] if len(args) == 2 else Any
        return [p for k, v in value.items() for p in problems(v, item, f"{where}.{k}")]
    if container in (list, collections.abc.Sequence):
        if not isinstance(value, list):
            return [f"{where}: {_show(value)} is not an array"]
        item = args[0] if args else Any
        return [p for i, v in enumerate(value) for p in problems(v, item, f"{where}[{i}]")]
    return []  # a Protocol or other alias the schema uses loosely: not checked


def _typed_dict(value: Any, expected: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {_show(value)} is not a {expected.__name__}"]
    hints = typing.get_type_hints(expected, include_extras=True)
    found: list[str] = []
    for key, hint in hints.items():
        optional = typing.get_origin(hint) is NotRequired or (
            not expected.__total__ and typing.get_origin(hint) is not Required
        )
        item = value.get(key, _MISSING)
        if item is _MISSING:
            if not optional:
                found.append(f"{where}: no {key!r} ({expected.__name__} requires it)")
            continue
        found.extend(problems(item, hint, f"{where}.{key}"))
    return found


def _iso(value: Any) -> bool:
    if isinstance(value, datetime.datetime):
        return True
    if not isinstance(value, str):
        return False
    try:
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _name(expected: Any) -> str:
    return str(expected).replace("typing.", "").replace("langgraph_sdk.schema.", "")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check(value: Any, expected: Any, where: str = "answer") -> Any:
    """``value`` when it has the shape of ``expected``; else an AssertionError saying why."""
    found = problems(value, expected, where)
    assert not found, f"not a {_name(expected)}: " + "; ".join(found[:6])
    return value
