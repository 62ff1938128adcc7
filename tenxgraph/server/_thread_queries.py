"""Thread listings and checkpoint histories, reading no more state than the answer shows.

A search filters and sorts the tenant's listing lines (metadata, times)
first and loads the state (values, status) only of the threads on the
page; only a ``status`` filter or sort needs every thread's state. A
history filters checkpoints on what they record (version, node, step,
status) and rebuilds the state, messages included, only of those it
returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tenxgraph.core.graph import CheckpointInfo
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.server import _shapes as shapes
from tenxgraph.server._context import ServerContext, thread_config
from tenxgraph.server._message_format import MessageEncoder, tenxgraph_json

if TYPE_CHECKING:
    from tenxgraph.storage import ThreadInfo

__all__ = ["checkpoint_metadata", "runs_busy", "search", "state_history"]

Json = dict[str, Any]

_INFO_SORTS = {
    "thread_id": lambda info: info.key.thread_id,
    "created_at": lambda info: info.created_at,
    "updated_at": lambda info: info.updated_at,
    "state_updated_at": lambda info: info.updated_at,  # every change of a thread is a save
}


async def search(
    context: ServerContext,
    user: str,
    *,
    metadata: Mapping[str, Any] | None,
    ids: Sequence[str] | None,
    status: str | None,
    sort_by: str | None,
    sort_order: str | None,
    page: slice | None,
    encode: MessageEncoder = tenxgraph_json,
) -> tuple[list[Json], int]:
    """The page of the tenant's matching threads as JSON, and how many match in all."""
    infos = await context.graph.alist_threads(user, metadata=metadata or None)
    if ids is not None:
        wanted = set(ids)
        infos = [info for info in infos if info.key.thread_id in wanted]
    descending = sort_order != "asc"
    if sort_by in _INFO_SORTS:
        infos.sort(key=_INFO_SORTS[sort_by], reverse=descending)
    elif sort_by is None and not descending:
        infos.reverse()  # the listing is newest update first
    if status is None and sort_by != "status":
        chosen = infos if page is None else infos[page]
        return [await _thread(context, user, info, encode) for info in chosen], len(infos)
    threads = [await _thread(context, user, info, encode) for info in infos]
    threads = [t for t in threads if status is None or t["status"] == status]
    if sort_by == "status":
        threads.sort(key=lambda t: str(t["status"]), reverse=descending)
    return (threads if page is None else threads[page]), len(threads)


async def _thread(
    context: ServerContext, user: str, info: ThreadInfo, encode: MessageEncoder
) -> Json:
    thread_id = info.key.thread_id
    state = await context.graph.aget_state(thread_config(thread_id, user))
    busy = await runs_busy(context, user, thread_id)
    return shapes.thread_json(info, state, busy, encode)


async def runs_busy(context: ServerContext, user: str, thread_id: str) -> bool:
    """True while a run is pending or running on the thread (no run manager yet: none is)."""
    manager = context.state.get("runs")
    return manager is not None and bool(await manager.thread_busy(user, thread_id))


def checkpoint_metadata(info: CheckpointInfo) -> Json:
    """A checkpoint's ``metadata`` in a state answer (what filters of the history match)."""
    return shapes.state_metadata(info.node, info.step, info.status)


async def state_history(
    context: ServerContext,
    key: ThreadKey,
    *,
    limit: int,
    before: int | None,
    metadata: Mapping[str, Any] | None,
    encode: MessageEncoder = tenxgraph_json,
) -> list[Json] | None:
    """The thread's checkpoints as states, newest first; None when the thread does not exist."""
    wanted = list((metadata or {}).items())

    def matches(info: CheckpointInfo) -> bool:
        shown = checkpoint_metadata(info)
        return all(shown.get(k) == v for k, v in wanted)

    config = thread_config(key.thread_id, key.user_id)
    snapshots = await context.graph.aget_state_history(
        config,
        limit=limit,
        before=before,
        where=matches if wanted else None,
    )
    if not snapshots and await context.graph.athread_info(config) is None:
        return None
    return [shapes.state_json(key.thread_id, snapshot, encode) for snapshot in snapshots]
