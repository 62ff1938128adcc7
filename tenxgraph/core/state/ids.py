"""Thread identity: ``ThreadKey``, the rule every ``thread_id``/``user_id`` follows, run configs.

These are data, not storage: the run loop, the server, the media store and
long-term memory all name a thread or a tenant, and each checks the same
rule before any I/O. Every backend then stores any key that exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tenxgraph.core.state.json_policy import lone_surrogate
from tenxgraph.errors import InvalidIdError, StateError

__all__ = [
    "DEFAULT_USER",
    "MAX_ID_LENGTH",
    "ThreadKey",
    "check_id",
    "checkpoint_of",
    "run_config",
    "thread_metadata_of",
]

DEFAULT_USER = "default"
"""The tenant of threads saved without a ``user_id`` (missing or None) in the run config."""

MAX_ID_LENGTH = 256
"""The most characters a ``thread_id`` or ``user_id`` may have, on every backend.

Postgres refuses index entries over about 2,700 bytes, and the keys index
``(user_id, thread_id)``; 256 characters are at most 1,024 UTF-8 bytes each,
so both ids together always fit. 256 holds a UUID, a URL-safe slug or an
e-mail address (at most 254 characters).
"""


_NO_CHECKPOINT_KEYS = frozenset({"checkpoint_ns"})
"""LangGraph config keys with no meaning here, refused (when set) rather than ignored."""


def run_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of a run config with the entries of a ``configurable`` dict moved to the top.

    tenxgraph reads ``thread_id``, ``user_id`` and ``recursion_limit`` from the
    top level of the config; LangGraph code puts the first two under
    ``config["configurable"]``. Both spellings work. The same key given in both
    places with different values is refused, never silently resolved, and so
    is a ``checkpoint_ns``: a run starts at the top of its thread (a paused
    subgraph continues when its parent resumes). A
    ``checkpoint_id`` (``checkpoint_of``) names the checkpoint a run starts from.
    """
    flat = dict(config or {})
    nested = flat.pop("configurable", None)
    if nested is None:
        return flat
    if not isinstance(nested, Mapping):
        raise StateError(
            f"the run config's 'configurable' must be a dict, got {type(nested).__name__}"
        )
    for key, value in nested.items():
        if key in _NO_CHECKPOINT_KEYS and value not in (None, ""):
            raise StateError(
                f"the run config's {key!r} is not supported: a run starts at the top of its "
                "thread, and a paused subgraph continues when its parent resumes "
                "(get_state(config, subgraphs=True) shows it); name a checkpoint with "
                "'checkpoint_id' alone"
            )
        if key in flat and flat[key] != value:
            raise StateError(
                f"the run config gives {key!r} twice with different values: "
                f"{flat[key]!r} and configurable {value!r}"
            )
        flat[key] = value
    return flat


def checkpoint_of(config: Mapping[str, Any]) -> int | None:
    """The checkpoint a (flat) run config names with ``checkpoint_id``, as its version; or None.

    A checkpoint id is its version, as an int or its text (``3``, ``"3"``: the
    server's ids); anything else raises ``StateError`` before anything is read.
    """
    value = config.get("checkpoint_id")
    if value is None or value == "":
        return None
    if type(value) is str and value.isascii() and value.isdigit():
        value = int(value)
    if type(value) is not int or value < 1:
        raise StateError(
            f"checkpoint_id must name a checkpoint by its version (1, 2, ... or its text), "
            f"got {str(value)[:40]!r}"
        )
    return value


def thread_metadata_of(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The metadata a (flat) run config's ``thread_metadata`` asks to merge into its thread's.

    The run's first save writes it (no save of its own, and only when a
    value differs); None when the config has none. Anything but a dict
    with text keys raises ``StateError`` before anything is read.
    """
    value = config.get("thread_metadata")
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(type(k) is str for k in value):
        raise StateError(
            f"the run config's 'thread_metadata' must be a dict with text keys, "
            f"got {type(value).__name__}"
        )
    return dict(value)


def check_id(name: str, value: object) -> str:
    """Return ``value`` if it is a usable ``thread_id``/``user_id``; else raise ``InvalidIdError``.

    An id is a non-empty ``str`` of at most ``MAX_ID_LENGTH`` characters,
    without NUL and encodable as UTF-8 (Postgres text holds neither NUL nor
    lone surrogates). The same rule on every backend, checked before any I/O.
    """
    if type(value) is not str:
        raise InvalidIdError(f"{name} must be a str, got {type(value).__name__} {_shown(value)}")
    if not value:
        raise InvalidIdError(f"{name} must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidIdError(
            f"{name} is {len(value)} characters long, over the limit of {MAX_ID_LENGTH}: "
            f"{_shown(value)}"
        )
    if "\x00" in value:
        raise InvalidIdError(f"{name} must not contain NUL characters: {_shown(value)}")
    if lone_surrogate(value) is not None:
        raise InvalidIdError(
            f"{name} holds characters UTF-8 cannot encode (lone surrogates): {_shown(value)}"
        )
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _config_id(value: Any) -> Any:
    """A config's id as a str: ints (not bools) become their decimal text, as in LangGraph.

    Anything else is left as it is, for ``ThreadKey`` to check (once).
    """
    return str(value) if type(value) is int else value


@dataclass(frozen=True, slots=True)
class ThreadKey:
    """Identifies a thread inside one tenant. Every query is scoped by ``user_id``.

    Both ids are checked by ``check_id`` when the key is made, so a key that
    exists can be stored by every backend.
    """

    thread_id: str
    user_id: str = DEFAULT_USER

    def __post_init__(self) -> None:
        check_id("thread_id", self.thread_id)
        if self.user_id is not DEFAULT_USER:  # the default tenant's id is known to be good
            check_id("user_id", self.user_id)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ThreadKey:
        """Read ``thread_id`` (required) and ``user_id`` from a run config (see ``run_config``).

        ``user_id`` missing or None is the ``"default"`` tenant; any other
        value must be a valid id, so ``""``, ``0`` or ``False`` never land in
        a shared tenant by accident. An int id (not a bool) is read as its
        decimal text (``5`` and ``"5"`` name the same thread).
        """
        if "configurable" in config:  # else it is flat already (a run's config is)
            config = run_config(config)
        thread_id = config.get("thread_id")
        if thread_id is None:
            raise InvalidIdError("the run config has no 'thread_id'")
        user_id = config.get("user_id")
        return cls(_config_id(thread_id), DEFAULT_USER if user_id is None else _config_id(user_id))
