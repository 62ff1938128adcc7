"""Gemini Files API: upload, wait until the file is ready, delete.

Gemini processes some uploads (video above all) before a request may name
them: the file comes back ``PROCESSING`` and turns ``ACTIVE``, or
``FAILED``. A file is sent only once it is ``ACTIVE``: the upload polls it,
at growing intervals, for at most ``ready_timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import io
import time
from typing import IO, TYPE_CHECKING, Any, cast

from tenxgraph.core.llm._convert_google import PROVIDER
from tenxgraph.core.llm.media import ProviderFile
from tenxgraph.errors import BadRequestError, ModelError, ModelTimeoutError

if TYPE_CHECKING:
    from google import genai

__all__ = ["delete_file", "upload_file"]

_FIRST_POLL = 0.1
_LONGEST_POLL = 5.0


async def upload_file(
    client: genai.Client, data: IO[bytes], mime_type: str, name: str, *, ready_timeout: float
) -> ProviderFile:
    """Upload media and wait until Gemini has processed it; its URI is what requests name.

    Gemini keeps such files for 48 hours; the expiry it reports is kept, so
    the file is uploaded again when it is near. ``BadRequestError`` if
    Gemini fails to process it, ``ModelTimeoutError`` if it is still
    processing after ``ready_timeout`` seconds.
    """
    made = await client.aio.files.upload(
        file=cast(io.IOBase, data), config={"mime_type": mime_type, "display_name": name}
    )
    made = await _ready(client, made, name, ready_timeout)
    if not made.uri:
        raise ModelError(f"{PROVIDER}: the uploaded file {made.name} has no URI", provider=PROVIDER)
    expires = made.expiration_time
    return ProviderFile(made.uri, expires.timestamp() if expires is not None else None)


async def _ready(client: genai.Client, made: Any, name: str, ready_timeout: float) -> Any:
    """``made`` polled until it is no longer ``PROCESSING``; an error unless it is then usable."""
    deadline = time.monotonic() + ready_timeout
    delay = _FIRST_POLL
    while _state(made) == "PROCESSING":
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ModelTimeoutError(
                f"{PROVIDER}: the uploaded file {made.name} ({name}) is still being processed "
                f"after {ready_timeout:g} s (MediaResolver(ready_timeout=...) waits longer)",
                provider=PROVIDER,
            )
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 2, _LONGEST_POLL)
        made = await client.aio.files.get(name=made.name)
    if _state(made) == "FAILED":
        reason = getattr(made.error, "message", None) or "no reason given"
        raise BadRequestError(
            f"{PROVIDER}: Gemini failed to process the uploaded file {made.name} ({name}): "
            f"{reason}",
            provider=PROVIDER,
        )
    return made


def _state(made: Any) -> str:
    state = made.state
    return str(getattr(state, "value", state) or "ACTIVE")


async def delete_file(client: genai.Client, uri: str) -> None:
    """Delete the file a ``ProviderFile`` names by its URI (``.../files/{id}``)."""
    await client.aio.files.delete(name="files/" + uri.rsplit("/files/", 1)[-1])
