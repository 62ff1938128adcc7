r"""Text every store can hold: NUL and lone surrogates replaced by U+FFFD.

Postgres cannot hold a NUL (``"\x00"``) in text or JSONB, and no backend can
hold a lone surrogate (``"\ud800"``: it has no UTF-8 encoding). Values that
were produced by code that already ran, such as a tool's output or a node's
error message, cannot be refused without losing that work, so they are
cleaned instead; each cleaned field is named in a note.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

__all__ = ["REPLACEMENT", "storable_data", "storable_text"]

REPLACEMENT = "\ufffd"
"""What replaces a character the store cannot hold (U+FFFD REPLACEMENT CHARACTER)."""

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_MAX_NOTES = 10
_MAX_DEPTH = 100
"""Deeper data is left as it is: the JSON check that follows refuses it anyway."""


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
    by U+FFFD`` (at most 10 notes, then one saying there were more).
    """
    return _Cleaning(notes).clean(value, where, 0)


class _Cleaning:
    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self.cleaned = 0

    def clean(self, value: Any, where: str, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value, where)
        if depth > _MAX_DEPTH:
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
