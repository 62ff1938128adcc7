"""W8: long-term memory search over 100,000 items. Budget: <= 20 ms per search (p50).

Two layouts, each on SQLite (a fresh file) and Postgres (a fresh schema,
dropped afterwards; skipped when the server is not there):

- ``one_tenant``: 100,000 items of one user in 100 namespaces
  (``("facts", "n00")``...). A search covers them all (prefix ``("facts",)``).
- ``many_tenants``: 1,000 users with 100 items each; a search covers one user.

Items are short sentences drawn from a 5,000-word vocabulary with a Zipf
law (a few words are very common, most are rare), the 60 most common being
English function words ("the", "of", "and"...) as in real text, so queries
hit posting lists of every size. Each query is three words: one of the 20
most common (a stop word, ignored by search as in Postgres) and two drawn
from the law. Timed: ``await store.asearch(prefix, query=..., limit=10)`` for 200
queries after 20 warm-up ones; p50 and p95 in milliseconds. Also reported:
a listing without a query (newest first) and a ``get``. On Postgres the
table is vacuumed and analyzed after loading, as autovacuum would have done
by then: without it the GIN index's pending list and the missing statistics
made searches and listings 5-10 times slower (77 ms p50 both, at 100,000
items of one user).

Run: ``python -m bench.w8_memory_search``. Loading takes 1.5-3 minutes per
backend and layout, about 9 minutes in all on the 2-core machine, so it is
not part of ``make bench`` (bench/README.md lists it with the standalone
ones).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tenxgraph.storage.longterm import MemoryStore, SqliteMemoryStore

ITEMS = 100_000
VOCABULARY = 5_000
QUERIES = 200
WARMUP = 20
BUDGET_MS = 20.0
PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"


COMMON = (  # noqa: SIM905 - a word list reads better as text
    "the of and to a in is it you that he was for on are with as i his they be at one have "
    "this from or had by not but what some we can out other were all there when up use your "
    "how said an each she which do their time if will way about many then them would"
).split()
"""The most frequent English words, at the top of the law as in real text."""


def _words() -> list[str]:
    return [*COMMON, *(f"w{index}" for index in range(VOCABULARY - len(COMMON)))]


def _sentence(rng: random.Random, words: list[str], weights: list[float]) -> str:
    return " ".join(rng.choices(words, weights, k=rng.randint(6, 14)))


def _layout(name: str) -> list[tuple[str, tuple[str, ...], str]]:
    """(user_id, namespace, key) of every item of the layout."""
    if name == "one_tenant":
        return [("u0", ("facts", f"n{i % 100:02d}"), f"k{i}") for i in range(ITEMS)]
    return [(f"u{i // 100}", ("facts", f"n{i % 10}"), f"k{i}") for i in range(ITEMS)]


async def _load(store: MemoryStore, layout: str, rng: random.Random) -> None:
    words = _words()
    weights = [1.0 / (rank + 1) for rank in range(VOCABULARY)]
    items = _layout(layout)
    batch = 20 if isinstance(store, SqliteMemoryStore) else 50
    for start in range(0, len(items), batch):
        await asyncio.gather(
            *(
                store.aput(ns, key, {"text": _sentence(rng, words, weights)}, user_id=user)
                for user, ns, key in items[start : start + batch]
            )
        )


async def _time_searches(store: MemoryStore, layout: str, rng: random.Random) -> dict[str, Any]:
    words = _words()
    weights = [1.0 / (rank + 1) for rank in range(VOCABULARY)]
    users = ["u0"] if layout == "one_tenant" else [f"u{i}" for i in range(1_000)]
    samples, found = [], 0
    for index in range(WARMUP + QUERIES):
        query = " ".join([rng.choice(words[:20]), *rng.choices(words, weights, k=2)])
        user = rng.choice(users)
        start = time.perf_counter_ns()
        result = await store.asearch(("facts",), query=query, limit=10, user_id=user)
        elapsed = (time.perf_counter_ns() - start) / 1e6
        if index >= WARMUP:
            samples.append(elapsed)
            found += len(result)
    listing = []
    for _ in range(50):
        start = time.perf_counter_ns()
        await store.asearch(("facts",), limit=10, user_id=rng.choice(users))
        listing.append((time.perf_counter_ns() - start) / 1e6)
    gets = []
    for _ in range(200):
        start = time.perf_counter_ns()
        await store.aget(("facts", "n01"), "k1", user_id=users[0])
        gets.append((time.perf_counter_ns() - start) / 1e6)
    samples.sort()
    return {
        "search_p50_ms": round(statistics.median(samples), 2),
        "search_p95_ms": round(samples[int(len(samples) * 0.95)], 2),
        "results_per_search": round(found / QUERIES, 1),
        "list_p50_ms": round(statistics.median(listing), 2),
        "get_p50_ms": round(statistics.median(gets), 3),
    }


async def _measure(
    store: MemoryStore, layout: str, settle: Callable[[], Awaitable[None]] | None = None
) -> dict[str, Any]:
    rng = random.Random(8)
    start = time.perf_counter()
    await _load(store, layout, rng)
    loaded = time.perf_counter() - start
    if settle is not None:
        await settle()
    figures = await _time_searches(store, layout, rng)
    figures["load_s"] = round(loaded, 1)
    figures["within_budget"] = figures["search_p50_ms"] <= BUDGET_MS
    return figures


async def _sqlite(layout: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        store = SqliteMemoryStore(Path(directory) / "memory.db")
        try:
            return await _measure(store, layout)
        finally:
            await store.aclose()


async def _postgres(layout: str) -> dict[str, Any]:
    try:
        import psycopg

        from tenxgraph.storage.longterm import PgMemoryStore
    except ImportError:
        return {"skipped": "the postgres extra is not installed"}
    schema = f"bench_w8_{uuid.uuid4().hex[:8]}"
    store = PgMemoryStore(PG_DSN, schema=schema, pool_size=10)

    async def settle() -> None:
        """What autovacuum does to a table in steady state: statistics, the GIN pending list."""
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            await conn.execute(f'VACUUM ANALYZE "{schema}".memory_items')

    try:
        return await _measure(store, layout, settle)
    except Exception as exc:  # the server is not there: report, do not fail the others
        return {"skipped": f"{type(exc).__name__}: {exc}"}
    finally:
        await store.aclose()
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def run() -> dict[str, Any]:
    """Load and time each backend and layout."""
    results: dict[str, Any] = {"items": ITEMS, "budget_ms": BUDGET_MS}
    for layout in ("one_tenant", "many_tenants"):
        results[f"sqlite_{layout}"] = asyncio.run(_sqlite(layout))
        results[f"postgres_{layout}"] = asyncio.run(_postgres(layout))
    return results


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
