"""JSON-schema dicts given as ``output_schema``: checked when the agent is built, used to validate.

A schema written by hand is easy to get subtly wrong (``"type": "str"``, a
``required`` name missing from ``properties``, a ``$ref`` to nothing), and a
provider would only say so at the first call, if at all. ``check_schema``
reads the keywords structured output uses and names the first problem and
where it is. ``validate`` checks an answer against a checked schema and lists
every mismatch, for the model's retry.

The subset is what the providers' structured output accepts: ``type``,
``properties``, ``required``, ``additionalProperties``, ``items``,
``enum``, ``const``, ``anyOf``/``oneOf``/``allOf``, local ``$ref`` (to
``#/$defs/...`` or ``#/definitions/...``), and the length, range and
``pattern`` bounds. Other keywords (``description``, ``format``, ``title``...)
are annotations and are not enforced.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from tenxgraph.errors import GraphBuildError

__all__ = ["SchemaProblem", "check_schema", "validate"]

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_LISTS_OF_SCHEMAS = ("anyOf", "oneOf", "allOf")
_NUMBERS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_JSON_SCALARS = (str, int, float, bool, type(None))
_NUMBER_BOUNDS = {
    "minimum": ">=",
    "maximum": "<=",
    "exclusiveMinimum": ">",
    "exclusiveMaximum": "<",
}
_HOLDS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_PYTHON_TYPES: dict[str, type] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


class SchemaProblem(GraphBuildError):
    """A JSON schema that cannot be used; the message names the place (``properties.city.type``)."""


def check_schema(schema: object) -> None:
    """Raise ``SchemaProblem`` for the first thing wrong with ``schema``."""
    if not isinstance(schema, Mapping):
        raise SchemaProblem(f"a JSON schema is a dict, got {type(schema).__name__}")
    _check_json(schema, "(root)")
    _check(schema, schema, "(root)")


def validate(schema: Mapping[str, Any], value: Any) -> list[str]:
    """Every way ``value`` (decoded JSON) fails ``schema``, as ``place: problem``; [] if none."""
    problems: list[str] = []
    _validate(schema, schema, value, "(root)", problems)
    return problems


# --- checking a schema --------------------------------------------------------


def _check_json(value: object, where: str) -> None:
    """The schema must itself be JSON (it is sent to the provider as is)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise SchemaProblem(f"{where}: key {key!r} is not a string")
            _check_json(item, _join(where, key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_json(item, _join(where, str(index)))
    elif isinstance(value, float) and not math.isfinite(value):
        raise SchemaProblem(f"{where}: {value} is not a JSON number")
    elif not isinstance(value, _JSON_SCALARS):
        raise SchemaProblem(f"{where}: {type(value).__name__} is not JSON data")


def _check(root: Mapping[str, Any], schema: object, where: str) -> None:
    if isinstance(schema, bool):
        return  # true / false: anything / nothing
    if not isinstance(schema, Mapping):
        raise SchemaProblem(f"{where}: a schema is a dict, got {type(schema).__name__}")
    for key, check in _CHECKS.items():
        if key in schema:
            check(root, schema[key], _join(where, key))
    required = schema.get("required")
    properties = schema.get("properties")
    if isinstance(required, list) and isinstance(properties, Mapping):
        missing = [name for name in required if name not in properties]
        if missing:  # valid JSON schema, but a model cannot know what to put there: a typo
            raise SchemaProblem(
                f"{_join(where, 'required')}: {', '.join(map(repr, missing))} "
                "required but not in 'properties'"
            )


def _check_type(root: Mapping[str, Any], value: object, where: str) -> None:
    names = value if isinstance(value, list) else [value]
    for name in names:
        if name not in _TYPES:
            raise SchemaProblem(
                f"{where}: unknown type {name!r} (one of: {', '.join(sorted(_TYPES))})"
            )


def _check_properties(root: Mapping[str, Any], value: object, where: str) -> None:
    if not isinstance(value, Mapping):
        raise SchemaProblem(f"{where}: expected a dict of property schemas")
    for name, schema in value.items():
        _check(root, schema, _join(where, name))


def _check_required(root: Mapping[str, Any], value: object, where: str) -> None:
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise SchemaProblem(f"{where}: expected a list of property names")


def _check_schema_or_bool(root: Mapping[str, Any], value: object, where: str) -> None:
    _check(root, value, where)


def _check_schema_list(root: Mapping[str, Any], value: object, where: str) -> None:
    if not isinstance(value, list) or not value:
        raise SchemaProblem(f"{where}: expected a non-empty list of schemas")
    for index, schema in enumerate(value):
        _check(root, schema, _join(where, str(index)))


def _check_defs(root: Mapping[str, Any], value: object, where: str) -> None:
    _check_properties(root, value, where)


def _check_enum(root: Mapping[str, Any], value: object, where: str) -> None:
    if not isinstance(value, list) or not value:
        raise SchemaProblem(f"{where}: expected a non-empty list of values")


def _check_ref(root: Mapping[str, Any], value: object, where: str) -> None:
    if not isinstance(value, str):
        raise SchemaProblem(f"{where}: expected a string such as '#/$defs/Name'")
    _resolve(root, value, where)


def _check_number(root: Mapping[str, Any], value: object, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SchemaProblem(f"{where}: expected a number, got {value!r}")


def _check_count(root: Mapping[str, Any], value: object, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaProblem(f"{where}: expected a non-negative integer, got {value!r}")


def _check_pattern(root: Mapping[str, Any], value: object, where: str) -> None:
    if not isinstance(value, str):
        raise SchemaProblem(f"{where}: expected a regular expression string")
    try:
        re.compile(value)
    except re.error as exc:
        raise SchemaProblem(f"{where}: not a regular expression ({exc})") from None


_CHECKS: dict[str, Callable[[Mapping[str, Any], Any, str], None]] = {
    "type": _check_type,
    "properties": _check_properties,
    "required": _check_required,
    "additionalProperties": _check_schema_or_bool,
    "items": _check_schema_or_bool,
    "$defs": _check_defs,
    "definitions": _check_defs,
    "enum": _check_enum,
    "$ref": _check_ref,
    "pattern": _check_pattern,
    **dict.fromkeys(_LISTS_OF_SCHEMAS, _check_schema_list),
    **dict.fromkeys(_NUMBERS, _check_number),
    **dict.fromkeys(_COUNTS, _check_count),
}


def _resolve(root: Mapping[str, Any], ref: str, where: str) -> Any:
    """The schema a local ``$ref`` points at (JSON pointer inside the root schema)."""
    if not ref.startswith("#"):
        raise SchemaProblem(f"{where}: only local references ('#/...') are supported, got {ref!r}")
    target: Any = root
    for part in ref[1:].split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, Mapping) or key not in target:
            raise SchemaProblem(f"{where}: {ref!r} points at nothing in the schema")
        target = target[key]
    return target


# --- validating a value --------------------------------------------------------


def _validate(
    root: Mapping[str, Any], schema: Any, value: Any, where: str, problems: list[str]
) -> None:
    if schema is True or not isinstance(schema, Mapping):
        return
    if schema is False:
        problems.append(f"{where}: no value is allowed here")
        return
    if "$ref" in schema:
        _validate(root, _resolve(root, schema["$ref"], where), value, where, problems)
    if "type" in schema and not _has_type(value, schema["type"]):
        problems.append(f"{where}: expected {_type_text(schema['type'])}, got {_kind(value)}")
        return
    if "enum" in schema and not any(_equal(value, item) for item in schema["enum"]):
        problems.append(f"{where}: {value!r} is not one of {schema['enum']!r}")
    if "const" in schema and not _equal(value, schema["const"]):
        problems.append(f"{where}: expected {schema['const']!r}, got {value!r}")
    _validate_combinations(root, schema, value, where, problems)
    if isinstance(value, dict):
        _validate_object(root, schema, value, where, problems)
    elif isinstance(value, list):
        _validate_array(root, schema, value, where, problems)
    elif isinstance(value, str):
        _validate_string(schema, value, where, problems)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _validate_number(schema, value, where, problems)


def _validate_combinations(
    root: Mapping[str, Any], schema: Mapping[str, Any], value: Any, where: str, problems: list[str]
) -> None:
    for branch in schema.get("allOf", ()):
        _validate(root, branch, value, where, problems)
    for key, wanted in (("anyOf", "at least one"), ("oneOf", "exactly one")):
        if key not in schema:
            continue
        matches = sum(1 for branch in schema[key] if not _problems(root, branch, value, where))
        if matches == 0 or (key == "oneOf" and matches > 1):
            problems.append(
                f"{where}: matches {matches} of the {len(schema[key])} alternatives "
                f"({key} needs {wanted})"
            )


def _problems(root: Mapping[str, Any], schema: Any, value: Any, where: str) -> list[str]:
    found: list[str] = []
    _validate(root, schema, value, where, found)
    return found


def _validate_object(
    root: Mapping[str, Any],
    schema: Mapping[str, Any],
    value: dict[str, Any],
    where: str,
    problems: list[str],
) -> None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in value:
            problems.append(f"{_join(where, name)}: field required")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            _validate(root, properties[name], item, _join(where, name), problems)
        elif extra is False:
            problems.append(f"{_join(where, name)}: unexpected field")
        else:
            _validate(root, extra, item, _join(where, name), problems)
    _check_bounds(schema, len(value), "minProperties", "maxProperties", "fields", where, problems)


def _validate_array(
    root: Mapping[str, Any],
    schema: Mapping[str, Any],
    value: list[Any],
    where: str,
    problems: list[str],
) -> None:
    if "items" in schema:
        for index, item in enumerate(value):
            _validate(root, schema["items"], item, _join(where, str(index)), problems)
    _check_bounds(schema, len(value), "minItems", "maxItems", "items", where, problems)


def _validate_string(
    schema: Mapping[str, Any], value: str, where: str, problems: list[str]
) -> None:
    _check_bounds(schema, len(value), "minLength", "maxLength", "characters", where, problems)
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        problems.append(f"{where}: {value!r} does not match the pattern {pattern!r}")


def _validate_number(
    schema: Mapping[str, Any], value: float, where: str, problems: list[str]
) -> None:
    for key, sign in _NUMBER_BOUNDS.items():
        limit = schema.get(key)
        if limit is not None and not _HOLDS[sign](value, limit):
            problems.append(f"{where}: {value!r} is not {sign} {limit!r}")


def _check_bounds(
    schema: Mapping[str, Any],
    size: int,
    low: str,
    high: str,
    unit: str,
    where: str,
    problems: list[str],
) -> None:
    if low in schema and size < schema[low]:
        problems.append(f"{where}: {size} {unit}, at least {schema[low]} needed")
    if high in schema and size > schema[high]:
        problems.append(f"{where}: {size} {unit}, at most {schema[high]} allowed")


def _has_type(value: Any, wanted: str | list[str]) -> bool:
    names = wanted if isinstance(wanted, list) else [wanted]
    return any(_is(value, name) for name in names)


def _is(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return name == "boolean"
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, int | float)
    return isinstance(value, _PYTHON_TYPES[name])


def _equal(left: Any, right: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but ``True != 1``."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"the number {value!r}"
    return names.get(type(value), type(value).__name__)


def _type_text(wanted: str | list[str]) -> str:
    return " or ".join(wanted) if isinstance(wanted, list) else wanted


def _join(where: str, key: str) -> str:
    return key if where == "(root)" else f"{where}.{key}"
