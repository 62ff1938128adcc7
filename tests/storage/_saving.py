"""``save``: a save for tests about versions, with the thread's current incarnation filled in.

Every save must name the incarnation (the thread's identity) it was based
on. Tests about versions, windows or tenants are not about identity, so they
save through this helper, which reads the current incarnation first; the
identity tests (``test_identity.py``) call ``asave`` themselves.
"""

from __future__ import annotations

import dataclasses

from tenxgraph.storage.checkpointer import Checkpointer, ThreadKey, ThreadWrite


async def save(checkpointer: Checkpointer, key: ThreadKey, write: ThreadWrite) -> int:
    """Save ``write`` (its incarnation read from storage unless given); return the new version."""
    if write.expected_version and write.expected_incarnation is None:
        stamp = await checkpointer.aversion(key)
        incarnation = "no-such-thread" if stamp is None else stamp.incarnation
        write = dataclasses.replace(write, expected_incarnation=incarnation)
    stamp = await checkpointer.asave(key, write)
    return stamp.version
