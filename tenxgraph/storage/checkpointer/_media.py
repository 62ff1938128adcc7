"""What a checkpointer with a media store does around its saves and deletes.

Kept out of the backends so each one adds the same three calls: offload the
new messages before the save's transaction (``offload``), make sure their
objects survived a concurrent gc after it (``after_save``), and release the
media a deleted thread alone referenced (``delete_with_media``). Imports of
the media package happen here on first use, so a checkpointer without
``media=`` loads none of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.storage.checkpointer.base import Checkpointer, ThreadWrite

if TYPE_CHECKING:
    from tenxgraph.storage.media.base import MediaStore
    from tenxgraph.storage.media.offload import MediaPolicy, Offloaded

__all__ = ["after_save", "delete_with_media", "media_policy", "offload"]


def media_policy(media: MediaStore | MediaPolicy | None) -> MediaPolicy | None:
    """The policy a ``media=`` option names (a bare store gets the defaults)."""
    if media is None:
        return None
    from tenxgraph.storage.media.offload import MediaPolicy

    return MediaPolicy.of(media)


async def offload(
    policy: MediaPolicy | None, key: ThreadKey, write: ThreadWrite
) -> tuple[ThreadWrite, Offloaded | None]:
    """``write`` with its large inline media in the store (outside any transaction).

    The offloaded copies also replace their originals in the caller's
    ``write.new_messages`` list, so the runtime can hold what is stored (the
    refs) rather than the bytes (see ``ThreadWrite.new_messages``).
    """
    if policy is None or not write.new_messages:
        return write, None
    from tenxgraph.storage.media.offload import aoffload

    done = await aoffload(policy, write.new_messages, user_id=key.user_id)
    if not done.puts:
        return write, None
    write.new_messages[:] = done.messages
    return dataclasses.replace(write, new_messages=done.messages), done


async def after_save(policy: MediaPolicy | None, key: ThreadKey, done: Offloaded | None) -> None:
    """Put back any object a gc deleted between the offload and the commit."""
    if policy is not None and done is not None:
        await done.arestore(policy.store, key.user_id)


async def delete_with_media(
    checkpointer: Checkpointer,
    policy: MediaPolicy | None,
    key: ThreadKey,
    delete: Callable[[ThreadKey], Awaitable[bool]],
) -> bool:
    """``delete(key)``, then release the media no other thread of the tenant references."""
    if policy is None or not policy.release_on_delete:
        return await delete(key)
    from tenxgraph.storage.media.gc import arelease, thread_media_keys

    keys = await thread_media_keys(checkpointer, key)
    deleted = await delete(key)
    if deleted and keys:
        await arelease(checkpointer, policy.store, key, keys, grace=policy.grace)
    return deleted
