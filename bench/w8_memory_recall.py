"""W8: memory retrieval quality: recall@5 over 1,000 facts and 50 queries with known answers.

One user's 1,000 facts, each ``"My {relation} {name} {activity} in {city}."``
with every combination unique (20 relations, 50 names, 25 activities, 40
cities, drawn without repeats). 50 queries each ask for one fact:

- 25 *worded like the fact* ("Where does my cousin Nora go sailing?"),
- 25 *paraphrased*: the relation and the activity in other words ("Where
  does Nora, my mother's nephew, sail boats?"), so only the name and a
  meaning-aware ranking can find it.

A query scores 1 when its fact is among the first 5 results. Reported per
mode: ``lexical`` (the store's full-text search), and ``vector`` and
``hybrid`` with ``HashingEmbedder`` (words hashed, no model) and with
``MiniLMEmbedder`` (all-MiniLM-L6-v2, the offline sentence model; budget:
paraphrased recall@5 >= 0.8 in both modes). The local GGUF embedder
(``LocalEmbedder``) is reported on request (``--local``): about 0.2 s per
text on the 2-core machine, 4 minutes for the facts. Vector and hybrid run
on both vector paths of the SQLite store: the ``sqlite-vec`` index (plain
names) and the brute-force scan (``..._scan``).

Also measured with ``MiniLMEmbedder``: its throughput (sentences per
second, the 1,000 facts in one call and 100 texts one call each; the model
loaded beforehand, its load time reported apart), and a vector search over
100,000 items of one user (p50/p95 over 50 queries, each embedded as part
of its search). Embedding 100,000 texts would take minutes, so the stored
items carry precomputed random unit vectors (written through the store's
own put, by a stand-in embedder that looks them up) while the queries get
real embeddings: the search does the same work whatever the vectors mean.

Run: ``python -m bench.w8_memory_recall [--local]`` (``make bench`` runs it
without ``--local``).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tenxgraph.storage.longterm import Embedder, HashingEmbedder, MemoryStore, SqliteMemoryStore

RELATIONS = {
    "sister": "female sibling",
    "brother": "male sibling",
    "cousin": "mother's nephew",
    "aunt": "father's sister",
    "uncle": "mother's brother",
    "neighbour": "next-door resident",
    "colleague": "coworker",
    "boss": "manager",
    "friend": "pal",
    "daughter": "girl",
    "son": "boy",
    "grandmother": "nan",
    "grandfather": "grandpa",
    "niece": "sibling's girl",
    "nephew": "sibling's boy",
    "partner": "spouse",
    "teacher": "tutor",
    "doctor": "physician",
    "landlord": "property owner",
    "roommate": "flatmate",
}
ACTIVITIES = {
    "goes sailing": "sail boats",
    "plays tennis": "hit balls with a racket",
    "teaches piano": "give keyboard lessons",
    "runs marathons": "race long distances on foot",
    "studies chemistry": "learn about molecules",
    "bakes bread": "make loaves",
    "repairs bicycles": "fix bikes",
    "sings opera": "perform arias",
    "climbs mountains": "scale peaks",
    "paints portraits": "make pictures of faces",
    "writes novels": "author fiction books",
    "grows tomatoes": "cultivate vegetables",
    "trains dogs": "coach puppies",
    "brews beer": "make ale",
    "swims laps": "do lengths in the pool",
    "builds furniture": "make tables and chairs",
    "fixes computers": "repair laptops",
    "drives buses": "operate coaches",
    "sells houses": "deal in real estate",
    "flies planes": "pilot aircraft",
    "cooks curry": "prepare spicy dishes",
    "knits sweaters": "make woollen jumpers",
    "plays chess": "play the board game with kings and pawns",
    "dances salsa": "do latin dancing",
    "rides horses": "go horseback riding",
}
NAMES = (  # noqa: SIM905 - a word list reads better as text
    "Nora Ines Omar Lena Pavel Rosa Tariq Uma Viktor Wanda Yusuf Zoe Aaron Bea Carl Dalia "
    "Emil Farah Goran Hana Igor Jana Kofi Lara Milo Nadia Otto Petra Quinn Rania Sven Tilda "
    "Umar Vera Walt Xenia Yara Zeno Alma Boris Cleo Dmitri Esme Felix Greta Hugo Ilse Jonas "
    "Kira Luca"
).split()
CITIES = (  # noqa: SIM905 - a word list reads better as text
    "Lisbon Porto Madrid Seville Paris Lyon Berlin Hamburg Vienna Prague Warsaw Krakow Oslo "
    "Bergen Stockholm Helsinki Tallinn Riga Vilnius Dublin Cork London Leeds Glasgow "
    "Brussels Ghent Amsterdam Utrecht Zurich Geneva Milan Turin Rome Naples Athens Sofia "
    "Bucharest Budapest Zagreb Ljubljana"
).split()
FACTS = 1_000
QUERIES = 50
SEARCH_ITEMS = 100_000
SEARCH_QUERIES = 50


def dataset(seed: int = 20) -> tuple[list[str], list[tuple[str, int]]]:
    """The facts and the (query, index of its fact) pairs."""
    rng = random.Random(seed)
    combos: set[tuple[str, str, str, str]] = set()
    while len(combos) < FACTS:
        combos.add(
            (
                rng.choice(list(RELATIONS)),
                rng.choice(NAMES),
                rng.choice(list(ACTIVITIES)),
                rng.choice(CITIES),
            )
        )
    ordered = sorted(combos)
    rng.shuffle(ordered)
    facts = [f"My {rel} {name} {act} in {city}." for rel, name, act, city in ordered]
    queries = []
    for index, number in enumerate(rng.sample(range(FACTS), QUERIES)):
        rel, name, act, _ = ordered[number]
        if index % 2 == 0:
            verb = act.split()[0].removesuffix("es").removesuffix("s")
            queries.append((f"Where does my {rel} {name} {verb} {act.split(' ', 1)[1]}?", number))
        else:
            queries.append((f"Where does {name}, my {RELATIONS[rel]}, {ACTIVITIES[act]}?", number))
    return facts, queries


async def recall_at_5(
    store: MemoryStore, facts: list[str], queries: list[tuple[str, int]], mode: str
) -> dict[str, float]:
    """recall@5 over all queries, the worded-alike ones and the paraphrased ones."""
    hits: list[tuple[int, bool]] = []
    for index, (query, answer) in enumerate(queries):
        found = await store.asearch(("facts",), query=query, limit=5, mode=mode)  # type: ignore[arg-type]
        hits.append((index % 2, f"f{answer}" in {item.key for item in found}))
    alike = [hit for kind, hit in hits if kind == 0]
    paraphrased = [hit for kind, hit in hits if kind == 1]
    return {
        "all": round(sum(hit for _, hit in hits) / len(hits), 2),
        "worded_alike": round(sum(alike) / len(alike), 2),
        "paraphrased": round(sum(paraphrased) / len(paraphrased), 2),
    }


async def _measure(embedder: Embedder, modes: tuple[str, ...]) -> dict[str, Any]:
    """recall@5 per mode, and per vector path: the sqlite-vec index and the brute-force scan.

    Both paths read the same file (the facts are embedded once); the scan's
    figures are reported under ``<mode>_scan``. They may differ a little:
    sqlite-vec's float32 cosines round differently from numpy's, so items
    with (near) equal scores, common with hashed words, may swap ranks.
    """
    facts, queries = dataset()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "recall.db"
        store = SqliteMemoryStore(path, embedder=embedder)
        scan = SqliteMemoryStore(path, embedder=embedder, vector_index=False)
        try:
            for index, fact in enumerate(facts):
                await store.aput(("facts",), f"f{index}", {"text": fact})
            results = {mode: await recall_at_5(store, facts, queries, mode) for mode in modes}
            if store.vector_index is not None:
                for mode in modes:
                    if mode != "lexical":
                        results[f"{mode}_scan"] = await recall_at_5(scan, facts, queries, mode)
            return results
        finally:
            await store.aclose()
            await scan.aclose()


def throughput(embedder: Embedder) -> dict[str, float]:
    """Sentences per second: the facts in one call (batched inside), and texts one per call."""
    facts, _ = dataset()
    start = time.perf_counter()
    embedder.embed(facts[:1])
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    embedder.embed(facts)
    batch = len(facts) / (time.perf_counter() - start)
    start = time.perf_counter()
    for fact in facts[:100]:
        embedder.embed([fact])
    single = 100 / (time.perf_counter() - start)
    return {"load_s": round(loaded, 2), "batch_per_s": round(batch), "single_per_s": round(single)}


class _Planted(Embedder):
    """Precomputed random unit vectors for the planted items, real embeddings for the rest."""

    def __init__(self, real: Embedder) -> None:
        self.real = real
        self.dimensions = real.dimensions

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        if all(text.startswith("planted ") for text in texts):
            return [_unit(int(text.split()[1]), self.dimensions) for text in texts]
        return await self.real.aembed(texts)


def _unit(seed: int, dimensions: int) -> list[float]:
    rng = random.Random(seed)
    vector = [rng.gauss(0.0, 1.0) for _ in range(dimensions)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


async def search_100k(embedder: Embedder) -> dict[str, Any]:
    """Vector search over 100,000 items of one user (SQLite, its default vector path)."""
    _, queries = dataset()
    with tempfile.TemporaryDirectory() as directory:
        store = SqliteMemoryStore(Path(directory) / "search.db", embedder=_Planted(embedder))
        try:
            for start in range(0, SEARCH_ITEMS, 20):
                await asyncio.gather(
                    *(
                        store.aput(("facts",), f"p{n}", {"text": f"planted {n}"})
                        for n in range(start, min(start + 20, SEARCH_ITEMS))
                    )
                )
            samples = []
            for query, _ in queries[:5] + queries[:SEARCH_QUERIES]:
                began = time.perf_counter()
                await store.asearch(("facts",), query=query, limit=10, mode="vector")
                samples.append((time.perf_counter() - began) * 1000)
            samples = sorted(samples[5:])
            return {
                "items": SEARCH_ITEMS,
                "path": store.vector_index or "brute force",
                "p50_ms": round(statistics.median(samples), 1),
                "p95_ms": round(samples[int(len(samples) * 0.95)], 1),
            }
        finally:
            await store.aclose()


def run(local: bool = False) -> dict[str, Any]:
    """recall@5 per mode (SQLite store; vector modes through the index and the scan)."""
    from tenxgraph.core.llm.minilm_embedder import MiniLMEmbedder

    results: dict[str, Any] = {"facts": FACTS, "queries": QUERIES}
    hashing = asyncio.run(_measure(HashingEmbedder(512), ("lexical", "vector", "hybrid")))
    results["lexical"] = hashing.pop("lexical")
    results.update({_name(mode, "hashing"): value for mode, value in hashing.items()})
    minilm = MiniLMEmbedder()
    results["minilm_throughput"] = throughput(minilm)
    measured = asyncio.run(_measure(minilm, ("vector", "hybrid")))
    results.update({_name(mode, "minilm"): value for mode, value in measured.items()})
    results["minilm_search"] = asyncio.run(search_100k(minilm))
    if local:
        from tenxgraph.core.llm.local_embedder import LocalEmbedder

        measured = asyncio.run(_measure(LocalEmbedder(), ("vector", "hybrid")))
        results.update({_name(mode, "local"): value for mode, value in measured.items()})
    return results


def _name(mode: str, embedder: str) -> str:
    """``vector_hashing``, ``vector_hashing_scan``... (the index's figures are the plain ones)."""
    base, _, path = mode.partition("_")
    return f"{base}_{embedder}" + (f"_{path}" if path else "")


if __name__ == "__main__":
    import json

    print(json.dumps(run(local="--local" in sys.argv), indent=2))
