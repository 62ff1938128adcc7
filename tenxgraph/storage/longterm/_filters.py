"""Search filters of the memory store: what they mean, checked once, run on every backend.

A filter maps a *path* to a condition, all conditions ANDed:

- **Path**: a field name, or dotted names into nested objects
  (``"meta.source"`` is ``value["meta"]["source"]``). A path walks objects
  only; a field name holding a dot cannot be addressed.
- **Condition**: a JSON scalar (equality, ``$eq``'s short form) or a dict of
  operators ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, all of
  which must hold.
- **Equality** (``$eq``): numbers as numbers (``1`` equals ``1.0``), ``True``
  never equal to ``1``, ``None`` equals JSON ``null`` (not a missing field).
- **Order** (``$gt``...): between numbers, or between strings (by code
  point, the same on every backend); a value of another type never matches.
- **Lists**: where the path ends at a list, a condition holds when one of
  its elements satisfies it (``{"tags": "tea"}`` finds ``{"tags": ["tea",
  "green"]}``), each operator on its own.
- **``$ne``** is the exact opposite of ``$eq``: it also keeps items where
  the path is missing, and a list none of whose elements equals the value.

``check_filter`` refuses anything else with a ``ConfigError`` naming the
filter's path, before any I/O. ``matches`` runs a checked filter in
Python (``InMemoryStore``); ``sqlite_where`` and ``postgres_where``
translate it into SQL conditions on the stored JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from tenxgraph.errors import ConfigError

__all__ = [
    "Condition",
    "Scalar",
    "check_filter",
    "check_path",
    "matches",
    "postgres_where",
    "resolve",
    "sqlite_where",
]

Scalar = str | int | float | bool | None

Condition = tuple[tuple[str, ...], str, Scalar]
"""One checked condition: the path's parts, the operator (``$eq``...) and its operand."""

_ORDER = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
OPERATORS = ("$eq", "$ne", *_ORDER)


def check_path(path: object, what: str) -> tuple[str, ...]:
    """The parts of a dotted path, or ``ConfigError`` naming ``what`` it is."""
    if type(path) is not str or not path or "\x00" in path:
        raise ConfigError(f"{what} must be a non-empty str, got {path!r:.60}")
    parts = tuple(path.split("."))
    for part in parts:
        if not part:
            raise ConfigError(f"{what} {path!r:.60} has an empty part (dots separate parts)")
        if '"' in part or "\\" in part:
            raise ConfigError(f"{what} {path!r:.60} must not contain '\"' or '\\'")
    return parts


def _scalar(path: str, operator: str, operand: object) -> Scalar:
    if operand is not None and not isinstance(operand, str | int | float | bool):
        raise ConfigError(
            f"filter {path!r}: {operator} needs a JSON scalar (str, number, bool, None), "
            f"got {type(operand).__name__}"
        )
    if isinstance(operand, float) and not math.isfinite(operand):
        raise ConfigError(f"filter {path!r}: {operator} needs a finite number, got {operand}")
    if isinstance(operand, int) and not -(1 << 63) <= operand < 1 << 63:
        raise ConfigError(f"filter {path!r}: {operator} needs an int within 64 bits, got {operand}")
    if operator in _ORDER and (operand is None or isinstance(operand, bool)):
        raise ConfigError(f"filter {path!r}: {operator} compares numbers or strings, got {operand}")
    return operand


def check_filter(filter: object) -> tuple[Condition, ...]:
    """The filter as conditions, or ``ConfigError`` naming the path that is wrong."""
    if filter is None:
        return ()
    if not isinstance(filter, Mapping):
        raise ConfigError(f"filter must be a dict of path -> value, got {type(filter).__name__}")
    checked: list[Condition] = []
    for path, wanted in filter.items():
        parts = check_path(path, "a filter path")
        if not isinstance(wanted, Mapping):
            checked.append((parts, "$eq", _scalar(path, "$eq", wanted)))
            continue
        if not wanted:
            raise ConfigError(f"filter {path!r}: an empty dict of operators")
        for operator, operand in wanted.items():
            if operator not in OPERATORS:
                raise ConfigError(
                    f"filter {path!r}: unknown operator {operator!r:.40} (use one of "
                    f"{', '.join(OPERATORS)}; a dotted path reaches nested fields)"
                )
            checked.append((parts, operator, _scalar(path, operator, operand)))
    return tuple(checked)


_MISSING = object()


def resolve(value: object, path: tuple[str, ...]) -> object:
    """What ``path`` reaches in ``value`` through objects only, or ``_MISSING``."""
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _holds(got: object, operator: str, operand: Scalar) -> bool:
    """Whether one JSON value (not a list) satisfies ``$eq`` or an order operator."""
    if operator == "$eq":
        if isinstance(got, bool) or isinstance(operand, bool) or got is None or operand is None:
            return got is operand
        same = isinstance(got, str) == isinstance(operand, str)
        return same and isinstance(got, str | int | float) and got == operand
    numbers = isinstance(got, int | float) and not isinstance(got, bool)
    if isinstance(operand, str) and isinstance(got, str):
        pass
    elif not (numbers and isinstance(operand, int | float)):
        return False
    low, high = (got, operand) if operator in ("$lt", "$lte") else (operand, got)
    return bool(low < high or (operator.endswith("e") and low == high))  # type: ignore[operator]


def _satisfied(value: Mapping[str, Any], condition: Condition) -> bool:
    path, operator, operand = condition
    got = resolve(value, path)
    if got is _MISSING:
        return operator == "$ne"
    candidates = got if isinstance(got, list) else [got]
    if operator == "$ne":
        return not any(_holds(item, "$eq", operand) for item in candidates)
    return any(_holds(item, operator, operand) for item in candidates)


def matches(value: Mapping[str, Any], conditions: tuple[Condition, ...]) -> bool:
    """Whether ``value`` satisfies every checked condition."""
    return all(_satisfied(value, condition) for condition in conditions)


def _json_path(path: tuple[str, ...]) -> str:
    return "$" + "".join(f'."{part}"' for part in path)


def sqlite_where(conditions: tuple[Condition, ...]) -> tuple[str, list[Any]]:
    """SQLite conditions (`` AND ...`` on ``i.value``) and their parameters.

    ``json_each`` at a path yields a list's elements, or the scalar itself;
    an object there would yield its members, so it is excluded first.
    """
    where, params = "", []
    for path, operator, operand in conditions:
        test, extra = _sqlite_test("$eq" if operator == "$ne" else operator, operand)
        found = (
            "(COALESCE(json_type(i.value, ?), 'object') <> 'object' AND EXISTS "
            f"(SELECT 1 FROM json_each(i.value, ?) WHERE {test}))"
        )
        where += f" AND NOT {found}" if operator == "$ne" else f" AND {found}"
        params += [_json_path(path), _json_path(path), *extra]
    return where, params


def _sqlite_test(operator: str, operand: Scalar) -> tuple[str, list[Any]]:
    if operand is None:
        return "type = 'null'", []
    if isinstance(operand, bool):
        return "type = ?", ["true" if operand else "false"]
    sign = "=" if operator == "$eq" else _ORDER[operator]
    if isinstance(operand, str):
        return f"type = 'text' AND atom {sign} ?", [operand]
    return f"type IN ('integer', 'real') AND atom {sign} ?", [operand]


def postgres_where(conditions: tuple[Condition, ...]) -> tuple[str, list[Any]]:
    """Postgres conditions (`` AND ...`` on the ``jsonb`` column ``value``) and parameters.

    A node that is not a list is wrapped in one, so lists and scalars share
    one test; a missing path (SQL NULL) is never wrapped. ``#>`` takes a
    part of digits as a list index, so such a part's parent must be an
    object (paths walk objects only, as everywhere else).
    """
    where, params = "", []
    for path, operator, operand in conditions:
        test, extra = _postgres_test("$eq" if operator == "$ne" else operator, operand)
        parents = [path[:at] for at in range(1, len(path)) if path[at].lstrip("-").isdigit()]
        guards = "".join("jsonb_typeof(value #> %s::text[]) = 'object' AND " for _ in parents)
        found = (
            f"({guards}value #> %s::text[] IS NOT NULL AND EXISTS (SELECT 1 FROM "
            "jsonb_array_elements("
            "CASE jsonb_typeof(value #> %s::text[]) WHEN 'array' THEN value #> %s::text[] "
            f"ELSE jsonb_build_array(value #> %s::text[]) END) AS e (v) WHERE {test}))"
        )
        where += f" AND NOT {found}" if operator == "$ne" else f" AND {found}"
        params += [list(parent) for parent in parents] + [list(path)] * 4 + extra
    return where, params


def _postgres_test(operator: str, operand: Scalar) -> tuple[str, list[Any]]:
    if operator == "$eq":
        return "e.v = %s::jsonb", [json.dumps(operand)]
    sign = _ORDER[operator]
    if isinstance(operand, str):
        return f"jsonb_typeof(e.v) = 'string' AND (e.v #>> '{{}}') COLLATE \"C\" {sign} %s", [
            operand
        ]
    return f"jsonb_typeof(e.v) = 'number' AND e.v {sign} %s::jsonb", [json.dumps(operand)]
