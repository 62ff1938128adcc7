"""``tenxgraph threads show THREAD --trace RUN``: a run's span tree with durations, in the terminal.

The spans are the server's (kept for its recent runs, ``tenxgraph serve
--traces``), read from ``GET /threads/{id}/runs/{run_id}/trace``: a trace is
not stored with the thread, so this asks the server that ran the run.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from tenxgraph.cli.errors import CliError
from tenxgraph.cli.render import Console

__all__ = ["fetch_trace", "print_trace"]

_NAME_WIDTH = 40


async def fetch_trace(url: str, api_key: str | None, thread_id: str, run_id: str) -> dict[str, Any]:
    """The run's trace from the server at ``url``; ``CliError`` with the server's reason."""
    import httpx

    headers = {"x-api-key": api_key} if api_key else {}
    path = f"/threads/{quote(thread_id, safe='')}/runs/{quote(run_id, safe='')}/trace"
    try:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            answer = await client.get(path)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach the server at {url}: {exc} (give --url)") from exc
    if answer.status_code != 200:
        try:
            detail = answer.json().get("detail", answer.text)
        except ValueError:
            detail = answer.text
        raise CliError(f"no trace of run {run_id!r} at {url}: {detail}")
    found: dict[str, Any] = answer.json()
    return found


def print_trace(found: dict[str, Any], console: Console) -> None:
    """The spans as an indented tree: name, duration, and what the span says (tokens, errors)."""
    spans: list[dict[str, Any]] = found["spans"]
    console.line(f"run {found['run_id']} (trace {found['trace_id']})", "bold")
    children: dict[str | None, list[dict[str, Any]]] = {}
    for span in spans[1:]:
        children.setdefault(span["parent_id"], []).append(span)
    pending = [(spans[0], 0)]
    while pending:
        span, depth = pending.pop()
        name = ("  " * depth + span["name"])[:_NAME_WIDTH].ljust(_NAME_WIDTH)
        details = _details(span)
        console.line(
            f"{name} {_duration(span):>10}" + (f"  {details}" if details else ""),
            *(("red",) if span["status"] == "error" else ()),
        )
        below = children.get(span["span_id"], [])
        pending.extend((child, depth + 1) for child in reversed(below))


def _duration(span: dict[str, Any]) -> str:
    if span["end"] is None:
        return "running"
    milliseconds = (span["end"] - span["start"]) / 1e6
    return f"{milliseconds:.1f} ms" if milliseconds < 1000 else f"{milliseconds / 1000:.2f} s"


def _details(span: dict[str, Any]) -> str:
    attributes = span["attributes"]
    parts: list[str] = []
    if "gen_ai.usage.input_tokens" in attributes:
        parts.append(
            f"tokens {attributes['gen_ai.usage.input_tokens']} in"
            f" / {attributes.get('gen_ai.usage.output_tokens', 0)} out"
        )
    reasons = attributes.get("gen_ai.response.finish_reasons")
    if reasons:
        parts.append(",".join(reasons))
    if "error.type" in attributes:
        parts.append(f"error {attributes['error.type']}")
    status = attributes.get("tenxgraph.run.status")
    if status is not None:
        parts.append(str(status))
    parts.extend(event["name"].removeprefix("tenxgraph.") for event in span["events"])
    return "  ".join(parts)
