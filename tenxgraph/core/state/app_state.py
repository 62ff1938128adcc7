"""``AppState``: a JSON-validated key-value store on the thread, never shown to the model.

What Strands Agents calls "agent state": data that lives beside the conversation,
persists with the thread, and is read and written by tools and application
code. Values must be JSON; anything else is refused where it enters (the
constructor, ``set``, assigning ``state.app_state``), so a save can never meet
a value it cannot store.

The store owns its data: a value is copied when it comes in (as the JSON it
will be stored as: tuples become lists) and when ``get`` hands it out, so
changing an object you passed in or got back never changes the thread's state.
Copying is cheap because values are plain JSON: a recursive dict/list copy
(scalars are shared, they are immutable) costs about a quarter of
``copy.deepcopy`` and less than a ``json`` round trip, and nothing at all for
the usual scalar values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import RootModel, field_validator

from tenxgraph.core.state.json_policy import json_text, lone_surrogate
from tenxgraph.errors import StateError

__all__ = ["AppState"]


class AppState(RootModel[dict[str, Any]]):
    """Key-value data of a thread: ``get``, ``set``, ``delete``; stored as a JSON object.

    Keys are non-empty strings; values are JSON (str, int, float, bool, None,
    lists and dicts of them). ``get`` returns a copy, so change a value by
    setting it again.
    """

    root: dict[str, Any] = {}

    @field_validator("root")
    @classmethod
    def _json_only(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _stored(value)

    def get(self, key: str | None = None, default: Any = None) -> Any:
        """A copy of the value of ``key`` (``default`` when absent), or of everything when no key.

        Changing the copy does not change the state: ``set`` it to store it.
        """
        if key is None:
            return _copy(self.root)
        _check_key(key)
        if key not in self.root:
            return default
        return _copy(self.root[key])

    def set(self, key: str, value: Any) -> None:
        """Store a copy of the JSON value ``value`` under ``key``.

        Raises ``StateError`` (a ``ValueError``) naming the key when the key is
        not a non-empty string or the value is not JSON.
        """
        self.root[_check_key(key)] = _json_copy_of(key, value)

    def delete(self, key: str) -> None:
        """Remove ``key`` if present; a key that is not a non-empty string raises ``StateError``."""
        self.root.pop(_check_key(key), None)

    def __contains__(self, key: object) -> bool:
        return key in self.root

    def __len__(self) -> int:
        return len(self.root)


def empty_app_state() -> AppState:
    """``AppState()``: what a new ``AgentState`` starts with, built without validation.

    The same object ``AppState.model_construct({}, _fields_set=set())`` builds,
    without its loop over fields; ``AppState()`` validates and deep-copies its
    ``{}`` default (``copy.deepcopy``, in Python). Either cost several times this,
    for every fresh state.
    """
    state = AppState.__new__(AppState)
    object.__setattr__(state, "__dict__", {"root": {}})
    object.__setattr__(state, "__pydantic_fields_set__", set())
    return state


def app_state_from(value: Any) -> AppState:
    """``value`` as an ``AppState``: itself, or a copy of a mapping's JSON data.

    What ``AgentState`` uses when ``state.app_state`` is assigned, so a dict
    assigned there is checked like ``set`` checks (``StateError`` naming the key).
    """
    if isinstance(value, AppState):
        return value
    if not isinstance(value, Mapping):
        raise StateError(
            f"app_state must be an AppState or a dict of JSON values, got {type(value).__name__}"
        )
    return AppState.model_construct(_stored(value))


def _stored(data: Mapping[Any, Any]) -> dict[str, Any]:
    return {_check_key(key): _json_copy_of(key, item) for key, item in data.items()}


def _check_key(key: Any) -> str:
    if not isinstance(key, str):
        raise StateError(f"app_state keys must be strings, got {key!r}")
    if not key.strip():
        raise StateError(f"app_state keys must not be empty or blank, got {key!r}")
    return key


def _json_copy_of(key: str, value: Any) -> Any:
    """``value`` as the JSON data that will be stored: a new object, checked once.

    What JSON cannot hold (NaN, an infinity, a lone surrogate; see
    ``json_policy``) is refused here, before any save.
    """
    plain_text = type(value) is str and lone_surrogate(value) is None
    if plain_text or value is None or type(value) in (int, bool):
        return value  # immutable and JSON as they are: the common case costs nothing
    try:
        return json.loads(json_text(value))
    except (TypeError, ValueError, RecursionError) as exc:
        raise StateError(f"app_state value for {key!r} is not JSON-serializable: {exc}") from None


def _copy(value: Any) -> Any:
    """Copy stored JSON data: only dicts and lists are mutable in it."""
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    return value
