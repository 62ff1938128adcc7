"""``TiktokenCounter``: exact OpenAI token counts, offline (the ``tokens`` extra).

The encodings are read from the files the ``bpe-openai`` package ships,
checked against the SHA-256 digests OpenAI publishes for them (the same
digests tiktoken checks after a download), and handed to ``tiktoken.Encoding``
directly. Nothing is downloaded, no cache directory is written and no
environment variable is changed.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from tenxgraph.core.state.context.tokens import (
    MEDIA_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    countable_parts,
)
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConfigError, MissingExtraError

__all__ = ["TiktokenCounter"]


@dataclass(frozen=True, slots=True)
class _EncodingSpec:
    sha256: str
    """Digest of the uncompressed ``.tiktoken`` file as OpenAI publishes it."""
    pattern: str
    """The pre-tokenization regex of the encoding."""
    special_tokens: dict[str, int]


_O200K_PATTERN = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)

_ENCODINGS = {
    "cl100k_base": _EncodingSpec(
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pattern=r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s",  # noqa: E501
        special_tokens={
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": _EncodingSpec(
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pattern=_O200K_PATTERN,
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}


class TiktokenCounter:
    """Counts tokens exactly with tiktoken, for ``cl100k_base`` and ``o200k_base`` models.

    Text is counted exactly. Each message adds ``MESSAGE_OVERHEAD_TOKENS``
    (OpenAI's documented chat framing: 3 tokens plus the role) and each media
    block ``MEDIA_TOKENS``, which are estimates: providers do not publish an
    exact formula for tool-call framing or images.

    Args:
        model_or_encoding: An encoding name (``o200k_base``, ``cl100k_base``)
            or an OpenAI model name such as ``gpt-4o`` or ``gpt-4``.
    """

    __slots__ = ("_encoding", "encoding_name")

    def __init__(self, model_or_encoding: str = "o200k_base") -> None:
        self.encoding_name = _encoding_name(model_or_encoding)
        self._encoding = _load_encoding(self.encoding_name)

    def count_text(self, text: str) -> int:
        """Exact tokens of ``text`` (special-token strings are counted as plain text)."""
        return len(self._encoding.encode_ordinary(text))

    def count(self, messages: Sequence[Message]) -> int:
        """Tokens of ``messages``: exact text plus the per-message and per-media estimates."""
        total = 0
        for message in messages:
            total += MESSAGE_OVERHEAD_TOKENS
            for part in countable_parts(message):
                total += self.count_text(part) if isinstance(part, str) else MEDIA_TOKENS
        return total

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding_name!r})"


def _encoding_name(model_or_encoding: str) -> str:
    if model_or_encoding in _ENCODINGS:
        return model_or_encoding
    tiktoken = _import_tiktoken()
    try:
        name: str = tiktoken.encoding_name_for_model(model_or_encoding)
    except KeyError:
        raise ConfigError(
            f"TiktokenCounter: unknown model or encoding {model_or_encoding!r}; "
            f"pass one of {sorted(_ENCODINGS)} or an OpenAI model name"
        ) from None
    if name not in _ENCODINGS:
        raise ConfigError(
            f"TiktokenCounter: model {model_or_encoding!r} uses the {name} encoding, which is "
            f"not available offline (available: {sorted(_ENCODINGS)})"
        )
    return name


@functools.cache
def _load_encoding(name: str) -> Any:
    """Build the tiktoken encoding once per process (parsing the ranks takes a moment)."""
    tiktoken = _import_tiktoken()
    spec = _ENCODINGS[name]
    try:  # located through the package metadata: importing bpe_openai would load every encoding
        path = metadata.distribution("bpe-openai").locate_file(
            f"bpe_openai/data/{name}.tiktoken.gz"
        )
        packed = Path(str(path)).read_bytes()
    except (metadata.PackageNotFoundError, FileNotFoundError):
        raise MissingExtraError("bpe-openai", "tokens") from None
    data = gzip.decompress(packed)
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise ConfigError(
            f"TiktokenCounter: the {name} file shipped by bpe-openai does not match "
            "OpenAI's published digest; reinstall bpe-openai"
        )
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    return tiktoken.Encoding(
        name, pat_str=spec.pattern, mergeable_ranks=ranks, special_tokens=spec.special_tokens
    )


def _import_tiktoken() -> Any:
    try:
        import tiktoken
    except ImportError:
        raise MissingExtraError("tiktoken", "tokens") from None
    return tiktoken
