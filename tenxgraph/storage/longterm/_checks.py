"""Argument checks of the memory store, done before any I/O, the same on every backend.

Bad input is refused with an error naming what was wrong, and nothing
stored changes: namespaces and keys are ids (``InvalidIdError``), values,
queries, filters and limits are arguments (``ConfigError``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from tenxgraph.core.state.json_policy import json_text, lone_surrogate
from tenxgraph.errors import ConfigError, InvalidIdError
from tenxgraph.storage.longterm._filters import check_path, resolve

__all__ = [
    "MAX_INDEX_FIELDS",
    "MAX_KEY_LENGTH",
    "MAX_LIMIT",
    "MAX_NAMESPACE_DEPTH",
    "MAX_PART_LENGTH",
    "MAX_QUERY_LENGTH",
    "MAX_VALUE_BYTES",
    "SEPARATOR",
    "STOP_WORDS",
    "check_index",
    "check_key",
    "check_limit",
    "check_namespace",
    "check_query",
    "check_ttl",
    "encode_value",
    "join_namespace",
    "search_text",
    "split_namespace",
    "terms",
]

SEPARATOR = "/"
"""Joins a namespace's parts where it is stored or shown (``("users", "prefs")`` is
``users/prefs``); no part may hold it."""

MAX_NAMESPACE_DEPTH = 16
"""The most parts a namespace may have."""

MAX_PART_LENGTH = 128
"""The most characters one namespace part may have."""

MAX_KEY_LENGTH = 256
"""The most characters a key may have (as ``thread_id``: it is part of an index entry)."""

MAX_VALUE_BYTES = 256 * 1024
"""The most bytes a value may take as JSON (UTF-8): memories are facts, not documents."""

MAX_QUERY_LENGTH = 2_000
"""The most characters a search query may have."""

MAX_LIMIT = 1_000
"""The most results one search or listing returns."""

MAX_INDEX_FIELDS = 64
"""The most paths one put may name in ``index=``."""

_WORD = re.compile(r"\w+")


def check_namespace(namespace: object, *, name: str = "namespace", empty: bool = False) -> str:
    """The namespace tuple as stored text, or ``InvalidIdError`` naming the bad part.

    A namespace is a tuple (a list is taken too) of 1 to ``MAX_NAMESPACE_DEPTH``
    non-empty ``str`` parts, each at most ``MAX_PART_LENGTH`` characters,
    without ``SEPARATOR``, NUL or lone surrogates. ``empty`` allows ``()``
    (a search or listing over everything).
    """
    if isinstance(namespace, str) or not isinstance(namespace, tuple | list):
        raise InvalidIdError(
            f"{name} must be a tuple of str parts, got {type(namespace).__name__} {namespace!r:.60}"
        )
    if not namespace and not empty:
        raise InvalidIdError(f"{name} must have at least one part")
    if len(namespace) > MAX_NAMESPACE_DEPTH:
        raise InvalidIdError(
            f"{name} has {len(namespace)} parts, over the limit of {MAX_NAMESPACE_DEPTH}"
        )
    for index, part in enumerate(namespace):
        _check_text(f"{name} part {index}", part, MAX_PART_LENGTH)
        if SEPARATOR in part:
            raise InvalidIdError(
                f"{name} part {index} must not contain {SEPARATOR!r} (it joins the parts): "
                f"{part!r:.60}"
            )
    return join_namespace(tuple(namespace))


def check_key(key: object) -> str:
    """``key`` if it is a usable item key, else ``InvalidIdError``."""
    return _check_text("key", key, MAX_KEY_LENGTH)


def _check_text(name: str, value: object, limit: int) -> str:
    if type(value) is not str:
        raise InvalidIdError(f"{name} must be a str, got {type(value).__name__} {value!r:.60}")
    if not value:
        raise InvalidIdError(f"{name} must not be empty")
    if len(value) > limit:
        raise InvalidIdError(
            f"{name} is {len(value)} characters long, over the limit of {limit}: {value!r:.60}"
        )
    if "\x00" in value:
        raise InvalidIdError(f"{name} must not contain NUL characters: {value!r:.60}")
    if lone_surrogate(value) is not None:
        raise InvalidIdError(f"{name} holds lone surrogates: {value!r:.60}")
    return value


def join_namespace(namespace: tuple[str, ...]) -> str:
    """The stored text of a (checked) namespace."""
    return SEPARATOR.join(namespace)


def split_namespace(text: str) -> tuple[str, ...]:
    """The namespace tuple of its stored text."""
    return tuple(text.split(SEPARATOR)) if text else ()


def encode_value(value: object, max_bytes: int = MAX_VALUE_BYTES) -> str:
    """The value as compact JSON text, or ``ConfigError`` saying why it cannot be stored.

    A value is a JSON object (a ``dict`` with ``str`` keys) of JSON types
    only: no NaN or infinity, no NUL in strings (Postgres ``jsonb`` holds
    none), no lone surrogates, at most ``max_bytes`` as UTF-8.
    """
    if not isinstance(value, dict):
        raise ConfigError(
            f"a memory value must be a dict (a JSON object), got {type(value).__name__}"
        )
    try:
        text = json_text(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ConfigError(f"a memory value must be plain JSON: {exc}") from None
    size = len(text.encode())
    if json.loads(text) != value:
        raise ConfigError(
            "a memory value must be plain JSON: only str keys, and lists rather than tuples"
        )
    if "\\u0000" in text:
        raise ConfigError("a memory value must not hold NUL characters in its strings")
    if size > max_bytes:
        raise ConfigError(
            f"a memory value takes {size} bytes as JSON, over the limit of {max_bytes}"
        )
    return text


def search_text(value: Mapping[str, Any], fields: tuple[tuple[str, ...], ...] | None = None) -> str:
    """What a query searches of a value: its string leaves, one per line.

    Keys are not indexed (``{"food": "pizza"}`` is found by "pizza", not by
    "food"), so field names do not make every item match. ``fields`` (a
    put's checked ``index=``) keeps the leaves under those paths only, in
    their order; ``()`` keeps nothing.
    """
    if fields is None:
        return "\n".join(_strings(value))
    return "\n".join(text for path in fields for text in _strings(resolve(value, path)))


def check_index(index: object) -> tuple[tuple[str, ...], ...] | None:
    """A put's ``index=``: None (the whole value), ``()`` (``False``: nothing) or the paths.

    ``ConfigError`` for anything else: ``True``, a str, a list holding a
    bad path, more than ``MAX_INDEX_FIELDS`` paths.
    """
    if index is None:
        return None
    if index is False:
        return ()
    if isinstance(index, str) or not isinstance(index, list | tuple):
        raise ConfigError(f"index must be None, False or a list of field paths, got {index!r:.60}")
    if len(index) > MAX_INDEX_FIELDS:
        raise ConfigError(f"index has {len(index)} paths, over the limit of {MAX_INDEX_FIELDS}")
    return tuple(() if path == "$" else check_path(path, "an index path") for path in index)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""".split()  # noqa: SIM905 - a word list reads better as text
)
"""Words a query ignores: they are in most texts, so they rank nothing apart and only cost
time (Postgres' ``english`` configuration drops a similar list)."""


def check_query(query: object) -> list[str] | None:
    """The query's words (lowercased, in order, without repeats or stop words), or None.

    ``ConfigError`` for a query that is not a str or is over
    ``MAX_QUERY_LENGTH``. A query with no words but stop words matches
    nothing.
    """
    if query is None:
        return None
    if type(query) is not str:
        raise ConfigError(f"query must be a str or None, got {type(query).__name__}")
    if len(query) > MAX_QUERY_LENGTH:
        raise ConfigError(
            f"query is {len(query)} characters long, over the limit of {MAX_QUERY_LENGTH}"
        )
    return [word for word in terms(query) if word not in STOP_WORDS]


def terms(text: str) -> list[str]:
    """The distinct lowercase words of ``text``, in order of first appearance."""
    return list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))


def check_limit(name: str, value: object, *, most: int = MAX_LIMIT) -> int:
    """``value`` if it is an int from 0 to ``most`` (``limit``) or >= 0 (``offset``)."""
    if type(value) is not int or value < 0 or value > most:
        raise ConfigError(f"{name} must be an int from 0 to {most}, got {value!r}")
    return value


def check_ttl(ttl: object) -> float | None:
    """Seconds an item lives (None: for ever), or ``ConfigError``."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < math.inf:
        raise ConfigError(f"ttl must be a number of seconds > 0, or None, got {ttl!r}")
    return float(ttl)
