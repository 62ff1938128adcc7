"""Threads and runs: the floor between storage and the runtime (docs/architecture.md).

A run holds its thread through the thread's lease (``ThreadLease``, taken by
``take_thread`` according to a ``LeasePolicy`` and the run's
``MultitaskStrategy``), and a turn that did not finish is discarded whole
(``discard_unfinished``). ``RunRegistry`` keeps a process's runs (started,
ordered per thread, stopped, remembered), made of the ``RunParts`` the layer
above gives it; ``DurableRunManager`` is the registry of a server's workers
over ``PgRunQueue``, the durable run table on Postgres, whose running runs
are alive while their thread's lease is (with a ``RunTransport`` from the
layer above to share events and tool results between workers). Crons
(``Cron``, ``CronScheduler``) start runs on a schedule: their ticks are
queued runs, kept where the runs are (``MemoryCronTable``, ``PgCronTable``). This
package uses storage and the state model, never the runtime:
``tenxgraph.core.graph`` and the server build on it. Exports are imported on
first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "CONSUMERS",
    "DRAIN_SECONDS",
    "FINISHED",
    "CancelAction",
    "ClaimedRun",
    "Cron",
    "CronQuery",
    "CronScheduler",
    "CronTable",
    "DueRun",
    "DurableRunManager",
    "Encoder",
    "Followers",
    "LeasePolicy",
    "MemoryCronTable",
    "MultitaskStrategy",
    "PgCronTable",
    "PgRunQueue",
    "QueueStats",
    "Relay",
    "RemoteWaits",
    "RunGone",
    "RunHandle",
    "RunLog",
    "RunParts",
    "RunRecord",
    "RunRegistry",
    "RunSpec",
    "RunStatus",
    "RunTarget",
    "RunTransport",
    "RunWriter",
    "Take",
    "ThreadLease",
    "check_schedule",
    "default_worker_id",
    "discard_unfinished",
    "lease_owner",
    "lease_table",
    "missing_leases",
    "settle",
    "take_thread",
]

if TYPE_CHECKING:
    from tenxgraph.runs._claim_loop import CONSUMERS
    from tenxgraph.runs._crons import (
        Cron,
        CronQuery,
        CronScheduler,
        CronTable,
        DueRun,
        MemoryCronTable,
        check_schedule,
    )
    from tenxgraph.runs._durable import DurableRunManager, default_worker_id
    from tenxgraph.runs._leases import (
        LeasePolicy,
        MultitaskStrategy,
        Take,
        ThreadLease,
        lease_owner,
        lease_table,
        missing_leases,
        take_thread,
    )
    from tenxgraph.runs._pg_crons import PgCronTable
    from tenxgraph.runs._pg_queue import ClaimedRun, PgRunQueue, QueueStats, RunGone
    from tenxgraph.runs._registry import (
        DRAIN_SECONDS,
        FINISHED,
        CancelAction,
        Encoder,
        RemoteWaits,
        RunHandle,
        RunLog,
        RunParts,
        RunRecord,
        RunRegistry,
        RunSpec,
        RunStatus,
        RunTarget,
        RunWriter,
    )
    from tenxgraph.runs._transport import Followers, Relay, RunTransport, settle
    from tenxgraph.runs._turns import discard_unfinished
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.runs._claim_loop": ("CONSUMERS",),
            "tenxgraph.runs._crons": (
                "Cron",
                "CronQuery",
                "CronScheduler",
                "CronTable",
                "DueRun",
                "MemoryCronTable",
                "check_schedule",
            ),
            "tenxgraph.runs._pg_crons": ("PgCronTable",),
            "tenxgraph.runs._durable": ("DurableRunManager", "default_worker_id"),
            "tenxgraph.runs._transport": ("Followers", "Relay", "RunTransport", "settle"),
            "tenxgraph.runs._leases": (
                "LeasePolicy",
                "MultitaskStrategy",
                "Take",
                "ThreadLease",
                "lease_owner",
                "lease_table",
                "missing_leases",
                "take_thread",
            ),
            "tenxgraph.runs._pg_queue": ("ClaimedRun", "PgRunQueue", "QueueStats", "RunGone"),
            "tenxgraph.runs._registry": (
                "DRAIN_SECONDS",
                "FINISHED",
                "CancelAction",
                "Encoder",
                "RemoteWaits",
                "RunHandle",
                "RunLog",
                "RunParts",
                "RunRecord",
                "RunRegistry",
                "RunSpec",
                "RunStatus",
                "RunTarget",
                "RunWriter",
            ),
            "tenxgraph.runs._turns": ("discard_unfinished",),
        },
    )
