"""Small helpers the Message <-> wire converters share.

Provider-opaque data that must go back to the provider unchanged (Anthropic
thinking signatures, OpenAI encrypted reasoning, Gemini thought signatures)
has no field in the provider-neutral content blocks. Adapters keep it in
``message.metadata["provider_data"]``::

    {"provider": "anthropic", "blocks": {"0": {"signature": "..."}}}

``blocks`` maps the index of a content block (as a string, so it is JSON) to
that block's opaque data. An adapter reads it back only when ``provider`` is
its own: another provider's signatures would be rejected.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, cast

from pydantic import BaseModel

from tenxgraph.core.state.json_policy import lone_surrogate, replace_lone_surrogates
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ContentBlock, MediaRef
from tenxgraph.errors import BadRequestError

__all__ = [
    "PROVIDER_DATA_KEY",
    "REPLACED_TEXT_KEY",
    "WireCleaner",
    "decoded_text",
    "json_safe",
    "output_blocks",
    "output_text",
    "provider_blocks",
    "provider_metadata",
    "unsupported",
]

PROVIDER_DATA_KEY = "provider_data"
"""The ``Message.metadata`` key holding provider-opaque per-block data."""


def provider_blocks(message: Message, provider: str) -> dict[int, dict[str, Any]]:
    """Return the opaque data ``provider`` attached to ``message``, by content block index."""
    data = message.metadata.get(PROVIDER_DATA_KEY)
    if not isinstance(data, dict) or data.get("provider") != provider:
        return {}
    blocks = data.get("blocks")
    if not isinstance(blocks, dict):
        return {}
    return {int(index): value for index, value in blocks.items() if isinstance(value, dict)}


def provider_metadata(provider: str, blocks: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Return the metadata entry that keeps ``blocks`` for ``provider`` (empty when none)."""
    if not blocks:
        return {}
    stored = {str(index): value for index, value in sorted(blocks.items())}
    return {PROVIDER_DATA_KEY: {"provider": provider, "blocks": stored}}


def output_blocks(output: Any) -> list[ContentBlock] | None:
    """The blocks of a tool output given as a list of content blocks, else None."""
    if isinstance(output, list) and output and all(isinstance(item, BaseModel) for item in output):
        return cast(list[ContentBlock], output)
    return None


def output_text(output: Any) -> str:
    """A tool output as the text a provider expects: strings as they are, data as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    return json.dumps(output, default=str)


def decoded_text(media: MediaRef, *, where: str) -> str:
    """The UTF-8 text held inline in ``media`` (for plain-text documents)."""
    try:
        return base64.b64decode(media.data_base64 or "").decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise BadRequestError(f"{where}: inline text document is not UTF-8 ({exc})") from None


def unsupported(provider: str, what: str, where: str) -> BadRequestError:
    """The error for content this provider cannot accept, naming where it was."""
    return BadRequestError(f"{provider} does not accept {what} ({where})", provider=provider)


def json_safe(value: Any) -> Any:
    """``value`` with everything that JSON cannot hold made into JSON (see ``WireCleaner``)."""
    return WireCleaner().data(value)


REPLACED_TEXT_KEY = "replaced_lone_surrogates"
"""``Message.metadata`` key, True when the provider's answer held lone surrogates."""


class WireCleaner:
    r"""Makes one response's provider data safe to keep, and remembers what it changed.

    SDK objects and bytes become JSON data; NaN and infinities become the
    strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``. A lone surrogate (a
    broken ``\ud800`` escape in the provider's JSON) becomes U+FFFD, and the
    final message notes it in ``metadata["replaced_lone_surrogates"]``: the
    answer, paid for, stays usable rather than failing the run.
    """

    def __init__(self) -> None:
        self.replaced = False
        """True once a lone surrogate was replaced."""

    def data(self, value: Any) -> Any:
        """``value`` as JSON data, cleaned."""
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", exclude_none=True)
        text = json.dumps(value, default=_json_default, ensure_ascii=False)
        return json.loads(self.text(text), parse_constant=str)

    def text(self, value: str) -> str:
        """``value`` with each lone surrogate replaced by U+FFFD."""
        if lone_surrogate(value) is None:
            return value
        self.replaced = True
        return replace_lone_surrogates(value)

    def metadata(self) -> dict[str, Any]:
        """The note for the final message's metadata (empty when nothing was replaced)."""
        return {REPLACED_TEXT_KEY: True} if self.replaced else {}


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return str(value)
