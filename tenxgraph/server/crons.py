"""Routes: LangGraph's crons (``/runs/crons``), which this server does not schedule.

A cron is a run started on a schedule. It needs a schedule that outlives
the process and fires once across workers, which the run registry does not
have yet (see docs/server.md, "Crons"). Until it does, the routes say so
truthfully instead of being missing: creating a cron is a 422 that says
what to use instead, searching and counting find none (there are none), and
changing or deleting one is a 404 (no cron has that id).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from tenxgraph.server._context import User
from tenxgraph.server._limits import CheckedJsonRoute
from tenxgraph.server.http_errors import bad_request, not_found

__all__ = ["router"]

router = APIRouter(tags=["crons"], route_class=CheckedJsonRoute)

NO_CRONS = (
    "crons are not supported by this server: it has no durable scheduler. Start the runs "
    "from the system's scheduler instead (cron, a systemd timer, a Kubernetes CronJob) "
    "with POST /threads/{thread_id}/runs or POST /runs (the SDKs' runs.create), which "
    "also takes after_seconds to delay one run"
)


class CronQuery(BaseModel):
    """``POST /runs/crons/search`` and ``/count``: the SDKs' filters."""

    model_config = ConfigDict(extra="allow")

    assistant_id: str | None = None
    thread_id: str | None = None
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


@router.post("/runs/crons")
async def create_cron(body: dict[str, Any], user: User) -> None:
    """Refused: see ``NO_CRONS``."""
    bad_request(NO_CRONS)


@router.post("/threads/{thread_id}/runs/crons")
async def create_thread_cron(thread_id: str, body: dict[str, Any], user: User) -> None:
    """Refused: see ``NO_CRONS``."""
    bad_request(NO_CRONS)


@router.post("/runs/crons/search")
async def search_crons(body: CronQuery, user: User) -> list[dict[str, Any]]:
    """The caller's crons that match: none, as no cron can be created."""
    return []


@router.post("/runs/crons/count")
async def count_crons(body: CronQuery, user: User) -> int:
    """How many of the caller's crons match: 0."""
    return 0


@router.patch("/runs/crons/{cron_id}")
async def update_cron(cron_id: str, body: dict[str, Any], user: User) -> None:
    """No cron has this id."""
    not_found(f"cron {cron_id!r} ({NO_CRONS})")


@router.delete("/runs/crons/{cron_id}")
async def delete_cron(cron_id: str, user: User) -> None:
    """No cron has this id."""
    not_found(f"cron {cron_id!r} ({NO_CRONS})")
