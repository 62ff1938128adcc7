"""W7 media: a 1,000-turn thread where every 10th user message carries a 1 MB image.

The thread is filled through ``app.invoke`` on one compiled graph (one node answering
with a line of text), on ``SqliteCheckpointer(path, media=True)``: images over 64 KiB go
to the filesystem store beside the file, and the rows keep ``graph://media`` refs. The
100 image turns send 50 distinct images, each twice (a user re-sending a photo), so
content addressing has something to save. Inline baseline: the same fill on
``SqliteCheckpointer(path)``, images kept inline as base64 in the rows.

- Stored: the database (with its WAL) plus the media directory, against the unique
  media plus the text (the baseline's size with its images removed: what the rows cost
  without media). Target: within 10% of that sum.
- Save time: the median ``invoke`` of the first and last 100 text turns and of the
  first and last 10 image turns (each turn one save); flat means last/first near 1.
- Peak RSS (in a fresh process): a 20 MB file put through ``Message.from_file(path,
  media=store)`` and read back through ``store.open`` (streamed), the growth of the
  process's peak resident set over its resident set before (peak reset through
  ``/proc/self/clear_refs``). Target: under 2x the file.
- Peak RSS sending it (each in a fresh process): a 20 MB PDF in the filesystem store
  sent to ``OpenAIChatModel`` (the official SDK) as a ``DocumentBlock``, against the
  replay server run in a process of its own (so the bytes it receives do not count);
  once with the default settings (``media=store``: ``send="auto"``, which uploads media
  over 1 MiB through ``client.files.create`` and sends the file id) and once with
  ``send="inline"`` (base64 in the JSON request), each after one small warm-up request
  (inlined in both). Target: under 2x the file with the default settings.

Run: ``python -m bench.w7_media``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._child import run_child
from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.core.state.message_block import ImageBlock, MediaRef, TextBlock
from tenxgraph.storage.checkpointer import Checkpointer, SqliteCheckpointer

TURNS = 1_000
IMAGE_EVERY = 10
IMAGE_BYTES = 1024 * 1024
DISTINCT_IMAGES = 50
RSS_FILE_BYTES = 20 * 1024 * 1024


def answer(state: AgentState) -> list[Message]:
    text = f"Answer {len(state.context) // 2}: here is what I see, step by step."
    return [Message.text_message(text, role="assistant")]


def one_node(checkpointer: Checkpointer) -> CompiledGraph[AgentState]:
    graph = StateGraph(AgentState)
    graph.add_node("answer", answer)
    graph.set_entry_point("answer")
    return graph.compile(checkpointer)


def image(number: int) -> bytes:
    """A 1 MB 'PNG': the signature, then bytes that differ per image (and do not compress)."""
    return b"\x89PNG\r\n\x1a\n" + random.Random(number).randbytes(IMAGE_BYTES - 8)


def user_message(turn: int) -> Message:
    text = TextBlock(text=f"Question {turn}: what is in this picture, and how does it work?")
    if turn % IMAGE_EVERY:
        return Message.multimodal_message([text])
    data = base64.b64encode(image((turn // IMAGE_EVERY) % DISTINCT_IMAGES)).decode("ascii")
    ref = MediaRef(kind="data", data_base64=data, mime_type="image/png", filename="photo.png")
    return Message.multimodal_message([text, ImageBlock(media=ref)])


def fill(checkpointer: Checkpointer) -> tuple[list[float], list[float]]:
    """Run the 1,000 turns; return the seconds of each text turn and each image turn."""
    app = one_node(checkpointer)
    config = {"thread_id": "photos", "user_id": "acme"}
    text_turns: list[float] = []
    image_turns: list[float] = []
    for turn in range(TURNS):
        message = user_message(turn)
        start = time.perf_counter()
        app.invoke({"messages": [message]}, config)
        elapsed = time.perf_counter() - start
        (text_turns if turn % IMAGE_EVERY else image_turns).append(elapsed)
    return text_turns, image_turns


def size_of(*paths: Path) -> int:
    total = 0
    for path in paths:
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            total += sum(file.stat().st_size for file in path.rglob("*") if file.is_file())
    return total


def filled(directory: Path, *, media: bool) -> tuple[int, list[float], list[float]]:
    path = directory / ("offloaded.db" if media else "inline.db")
    checkpointer = SqliteCheckpointer(path, media=media)
    text_turns, image_turns = fill(checkpointer)
    asyncio.run(checkpointer.aclose())
    stored = size_of(path, Path(f"{path}-wal"), Path(f"{path}-media"))
    return stored, text_turns, image_turns


def ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 3)


def stored_and_timed() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        stored, text_turns, image_turns = filled(directory, media=True)
        inline, _, _ = filled(directory, media=False)
    images = TURNS // IMAGE_EVERY
    unique_media = DISTINCT_IMAGES * IMAGE_BYTES
    inline_media = images * len(base64.b64encode(bytes(IMAGE_BYTES)))
    text_only = inline - inline_media  # the rows without their base64
    return {
        "turns": TURNS,
        "image_turns": images,
        "unique_media_bytes": unique_media,
        "text_bytes_estimate": text_only,
        "stored_bytes": stored,
        "inline_baseline_bytes": inline,
        "stored_over_unique_plus_text": round(stored / (unique_media + text_only), 3),
        "inline_over_stored": round(inline / stored, 2),
        "text_turn_ms_first_100": ms(text_turns[:100]),
        "text_turn_ms_last_100": ms(text_turns[-100:]),
        "image_turn_ms_first_10": ms(image_turns[:10]),
        "image_turn_ms_last_10": ms(image_turns[-10:]),
        "text_turn_last_over_first": round(ms(text_turns[-100:]) / ms(text_turns[:100]), 2),
    }


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss() -> int:
    """The resident set now (KiB), with the peak reset to it where Linux allows (else the
    peak so far, which can only overstate the growth measured from it)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to VmRSS
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return _status_kib("VmRSS") or 0


def peak_rss_kib() -> int:
    return _status_kib("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def rss_child() -> dict[str, Any]:
    """In a fresh process: peak RSS growth while putting and streaming back a 20 MB file."""
    from tenxgraph.storage.media import FilesystemMediaStore

    with tempfile.TemporaryDirectory() as name:
        source = Path(name) / "big.png"
        with source.open("wb") as file:
            file.write(b"\x89PNG\r\n\x1a\n")
            block = os.urandom(1024 * 1024)
            for _ in range(RSS_FILE_BYTES // len(block)):
                file.write(block)
        store = FilesystemMediaStore(Path(name) / "media")
        store.put(b"\x89PNG\r\n\x1a\n" + bytes(100), "image/png")  # warm the code paths
        before = reset_peak_rss()
        message = Message.from_file(source, "look", media=store)
        block_ref = message.content[1]
        assert isinstance(block_ref, ImageBlock)
        with store.open(block_ref.media) as stream:
            read = sum(len(chunk) for chunk in stream)
        after = peak_rss_kib()
    growth = (after - before) * 1024
    return {
        "file_bytes": read,
        "peak_rss_growth_bytes": growth,
        "peak_rss_growth_over_file": round(growth / read, 3),
    }


def serve(mode: str) -> None:
    """Run the replay server until stdin closes: a file object for each upload, an answer
    for each request (the warm-up's, then the measured one's)."""
    from tenxgraph.testing.replay import ReplayServer, chat_chunk

    with ReplayServer() as server:
        for turn in range(2):
            if mode == "default" and turn == 1:  # the warm-up's small PDF is inlined
                file = {"id": "file-w7", "object": "file", "bytes": 0, "created_at": 0}
                server.reply({**file, "filename": "big.pdf", "purpose": "user_data"})
            server.stream(
                [chat_chunk({"role": "assistant", "content": "A PDF."}, "stop"), "[DONE]"]
            )
        print(server.url, flush=True)
        sys.stdin.read()


def send_child(mode: str) -> dict[str, Any]:
    """In a fresh process: peak RSS growth while sending a stored 20 MB PDF (``mode``:
    default or inline) through the OpenAI SDK to a replay server in another process."""
    import subprocess

    import openai

    from tenxgraph.core.llm import MediaResolver, ModelRequest, OpenAIChatModel
    from tenxgraph.core.state.message_block import DocumentBlock
    from tenxgraph.storage.media import FilesystemMediaStore

    server = subprocess.Popen(
        [sys.executable, "-m", "bench.w7_media", "--serve", mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None and server.stdin is not None
    url = server.stdout.readline().strip()
    try:
        with tempfile.TemporaryDirectory() as name:
            source = Path(name) / "big.pdf"
            with source.open("wb") as file:
                file.write(b"%PDF-1.7\n")
                for _ in range(RSS_FILE_BYTES // (1024 * 1024)):
                    file.write(os.urandom(1024 * 1024))
            store = FilesystemMediaStore(Path(name) / "media")
            with source.open("rb") as reader:
                big = store.put(reader, "application/pdf", filename="big.pdf")
            small = store.put(b"%PDF-1.7\n" + bytes(1000), "application/pdf", filename="s.pdf")
            media = store if mode == "default" else MediaResolver(store, send="inline")
            # OpenAI's API is played by the replay server: a client pointed at it, so the
            # model treats it as OpenAI's (a base_url= elsewhere is a server without files).
            client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="test", max_retries=0)
            model = OpenAIChatModel("gpt-test", client=client, media=media)

            async def ask(ref: MediaRef) -> None:
                content = [TextBlock(text="What is this?"), DocumentBlock(media=ref)]
                await model.complete(ModelRequest(messages=[Message(role="user", content=content)]))

            async def measured() -> tuple[int, int]:
                await ask(small)  # warm the SDK and the code paths
                before = reset_peak_rss()
                await ask(big)
                after = peak_rss_kib()
                await client.close()
                return before, after

            before, after = asyncio.run(measured())
            size = source.stat().st_size
    finally:
        server.stdin.close()
        server.wait()
    growth = (after - before) * 1024
    return {
        f"send_{mode}_peak_rss_growth_bytes": growth,
        f"send_{mode}_peak_rss_growth_over_file": round(growth / size, 3),
    }


def run() -> dict[str, Any]:
    return {
        **stored_and_timed(),
        **run_child("bench.w7_media", "--rss"),
        **run_child("bench.w7_media", "--send", "default"),
        **run_child("bench.w7_media", "--send", "inline"),
    }


if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve(sys.argv[-1])
    elif "--send" in sys.argv:
        print(json.dumps(send_child(sys.argv[-1]), indent=2))
    else:
        print(json.dumps(rss_child() if "--rss" in sys.argv else run(), indent=2))
