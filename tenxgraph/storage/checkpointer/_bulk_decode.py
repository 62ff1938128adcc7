"""Decoding many stored messages at once, and what it does with the cyclic garbage collector.

A load of 10,000 messages makes some 90,000 container objects, all of them kept
(the thread's context). Left alone, the collector walks them in the collections
their allocation sets off (which free nothing), in the first young collection
after the decode (7 % of W4's instructions) and again when they move up a
generation. So ``validate_many`` pauses the collector while it decodes, then
moves what is young into the oldest generation in constant time (``gc.freeze()``
then ``gc.unfreeze()``): those objects are looked at by full collections only,
as any long-lived object is. What else was young at that moment (at most the
young generations' thresholds, some thousands of objects) goes up with them: a
cycle among those is freed by the next full collection rather than a young one.

A process that froze objects itself (``gc.freeze()``, as before forking
workers) keeps them frozen: once the decode has seen a frozen object it leaves
the generations as they are for the rest of the process (``gc.unfreeze()``
would thaw them), and the one walk that finds out is not repeated. The one
case left is another thread calling ``gc.freeze()`` between the two calls,
whose objects would then be promoted instead of frozen.
"""

from __future__ import annotations

import gc
import threading

from pydantic import ValidationError

from tenxgraph.core.state.message import Message, MessagesAdapter

__all__ = ["GC_PAUSE_AT", "decode_joined", "validate_many"]

GC_PAUSE_AT = 1_000
"""Messages decoded at once from which the cyclic garbage collector waits (``validate_many``)."""

_user_froze = False
"""Set once a frozen object was seen: from then on the generations are left as they are."""

_promoting = threading.Lock()
"""Two decodes in two threads do not take each other's freeze for the process's."""


def validate_many(joined: str | bytes, count: int) -> list[Message]:
    """``MessagesAdapter.validate_json(joined)``; for many messages, the collector as above.

    Paused only if it was on; turned back on whatever the outcome. A decode that
    fails moves nothing: what it made is garbage.
    """
    if count < GC_PAUSE_AT or not gc.isenabled():
        return MessagesAdapter.validate_json(joined)
    gc.disable()
    try:
        messages = MessagesAdapter.validate_json(joined)
        _promote_young()
        return messages
    finally:
        gc.enable()


def decode_joined(count: int, size: int, joined: str | None) -> tuple[list[Message], int] | None:
    """``size`` messages from their rows' bodies joined by commas (``count`` rows found).

    The messages and the length of their stored JSON; None when a row is missing or
    the text does not decode to exactly ``size`` messages (a row holding "m1, m2"
    joins into two).
    """
    if count != size or (size and joined is None):
        return None
    if not size:
        return [], 0
    try:
        context = validate_many(f"[{joined}]", size)
    except ValidationError:
        return None
    return (context, len(joined or "") - (size - 1)) if len(context) == size else None


def _promote_young() -> None:
    """Move every young object into the oldest generation, unless the process froze some."""
    global _user_froze  # one flag for the process, as the collector is one
    with _promoting:
        if _user_froze:
            return
        if gc.get_freeze_count():  # walks the frozen objects: once, as the flag then stays set
            _user_froze = True
            return
        gc.freeze()
        gc.unfreeze()
