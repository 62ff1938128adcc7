"""JSON text for the columns a save writes: compact, and plain JSON data only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.json_policy import json_text, parse_json
from tenxgraph.errors import StateError

if TYPE_CHECKING:  # the contract's types; base imports this module to decode
    from tenxgraph.storage.checkpointer.base import Window

__all__ = ["ValuesText", "encode_json", "values_json", "window_json"]


def encode_json(what: str | tuple[ThreadKey, str], value: Any) -> str:
    """Compact JSON text; anything but plain JSON data raises ``StateError`` naming ``what``.

    What JSON cannot hold (NaN, an infinity, a lone surrogate) is refused as
    ``json_policy.json_text`` says, the same on every backend. ``what`` may be
    a thread key and a column: the label is then made only for the error.
    """
    try:
        return json_text(value)
    except (TypeError, ValueError, RecursionError) as exc:
        if isinstance(what, tuple):
            what = f"thread {what[0].thread_id!r}: {what[1]}"
        raise StateError(
            f"{what} must be JSON data (str, number, bool, None, list, dict): {exc}"
        ) from None


class ValuesText(str):
    """Values text the runtime made itself (``state_codec.values_text``): a JSON object's.

    Kept as given without parsing; any other text a caller hands a checkpointer is parsed
    once, so a malformed row is never stored.
    """

    __slots__ = ()


def values_json(key: ThreadKey, values: dict[str, Any] | str) -> str:
    """A write's values as JSON text: text given is kept (it must be a JSON object's)."""
    if not isinstance(values, str):
        return encode_json((key, "values"), values)
    if type(values) is ValuesText:
        return str(values)  # the plain str every driver binds
    try:
        parsed = parse_json(values)
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict):
        raise StateError(
            f"thread {key.thread_id!r}: values given as text must be a JSON object, "
            f"got {_preview(values)}"
        )
    return values


def window_json(key: ThreadKey, window: Window) -> str:
    """A window as JSON; plain int pairs (every runtime window) are formatted directly.

    A window that is not a list of pairs, or holds an int too long to write as
    text, raises ``StateError`` (the rest of the rule, ``window_problem``, is
    checked against the log by the backend).
    """
    try:
        if len(window) == 1:  # a run's usual window: one range, no list and join
            start, end = window[0]
            if type(start) is int and type(end) is int:
                return f"[[{start},{end}]]"
        parts = []
        for start, end in window:
            if type(start) is not int or type(end) is not int:
                break
            parts.append(f"[{start},{end}]")
        else:
            return f"[{','.join(parts)}]"
        pairs = [[start, end] for start, end in window]
    except (TypeError, ValueError):  # not pairs (unpacking), or an int over str()'s limit
        raise StateError(
            f"thread {key.thread_id!r}: the window is not a list of [start, end] ranges of "
            "seqs (a range of another shape, or an int too long to write)"
        ) from None
    return encode_json((key, "window"), pairs)


def _preview(text: str, size: int = 40) -> str:
    return repr(text) if len(text) <= size else f"{text[: size - 3]!r}..."
