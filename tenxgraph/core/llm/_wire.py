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

from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ContentBlock, MediaRef
from tenxgraph.errors import BadRequestError, ModelError

__all__ = [
    "PROVIDER_DATA_KEY",
    "decoded_text",
    "json_safe",
    "output_blocks",
    "output_text",
    "parse_arguments",
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


def parse_arguments(text: str, *, provider: str, tool: str) -> dict[str, Any]:
    """Parse a tool call's JSON arguments; an empty string means no arguments."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ModelError(
            f"{provider}: the model called tool {tool!r} with arguments that are not JSON "
            f"({exc}): {text[:200]!r}",
            provider=provider,
        ) from None
    if not isinstance(value, dict):
        raise ModelError(
            f"{provider}: the model called tool {tool!r} with arguments that are not a JSON "
            f"object: {text[:200]!r}",
            provider=provider,
        )
    return value


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
    """``value`` with everything that JSON cannot hold (bytes, SDK objects) made into JSON."""
    if isinstance(value, BaseModel):
        return json_safe(value.model_dump(mode="json", exclude_none=True))
    return json.loads(json.dumps(value, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return str(value)
