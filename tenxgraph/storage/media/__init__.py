"""The media store: large bytes kept once per tenant, referenced as ``graph://media/{key}``.

``FilesystemMediaStore`` (plain files; the default beside a SQLite file)
and ``SqliteMediaStore`` need only the standard library; ``PgMediaStore``
needs the extra ``postgres``. All three implement the ``MediaStore``
contract (``base``) and pass the same suite
(``tenxgraph.testing.media_stores``). ``ainline`` and ``media_refs``
(``resolve``) turn stored refs back into bytes for code that sends media on.
``MediaPolicy`` (``offload``) is how a checkpointer given ``media=`` moves
large inline media into a store (``offload_message`` does it to one
message); ``acollect`` (``gc``) deletes what no thread references.
Every export is imported on first access, so importing this package loads
no backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "MEDIA_URL_PREFIX",
    "FilesystemMediaStore",
    "GcReport",
    "MediaData",
    "MediaInfo",
    "MediaPolicy",
    "MediaStore",
    "MediaStream",
    "OpeningMedia",
    "PgMediaStore",
    "SqliteMediaStore",
    "SyncMediaStream",
    "Upload",
    "acollect",
    "ainline",
    "aoffload_message",
    "collect",
    "detect_mime_type",
    "in_media_store",
    "inline",
    "is_media_url",
    "media_key",
    "media_refs",
    "media_url",
    "offload_message",
]

if TYPE_CHECKING:
    from tenxgraph.storage.media._keys import MEDIA_URL_PREFIX, is_media_url, media_key, media_url
    from tenxgraph.storage.media._sniff import detect_mime_type
    from tenxgraph.storage.media._source import MediaData
    from tenxgraph.storage.media._stream import MediaStream, OpeningMedia, SyncMediaStream
    from tenxgraph.storage.media.base import MediaInfo, MediaStore, Upload
    from tenxgraph.storage.media.filesystem import FilesystemMediaStore
    from tenxgraph.storage.media.gc import GcReport, acollect, collect
    from tenxgraph.storage.media.offload import MediaPolicy, aoffload_message, offload_message
    from tenxgraph.storage.media.postgres import PgMediaStore
    from tenxgraph.storage.media.resolve import ainline, in_media_store, inline, media_refs
    from tenxgraph.storage.media.sqlite import SqliteMediaStore
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.storage.media._keys": (
                "MEDIA_URL_PREFIX",
                "is_media_url",
                "media_key",
                "media_url",
            ),
            "tenxgraph.storage.media._sniff": ("detect_mime_type",),
            "tenxgraph.storage.media._source": ("MediaData",),
            "tenxgraph.storage.media._stream": ("MediaStream", "OpeningMedia", "SyncMediaStream"),
            "tenxgraph.storage.media.base": ("MediaInfo", "MediaStore", "Upload"),
            "tenxgraph.storage.media.filesystem": ("FilesystemMediaStore",),
            "tenxgraph.storage.media.gc": ("GcReport", "acollect", "collect"),
            "tenxgraph.storage.media.offload": (
                "MediaPolicy",
                "aoffload_message",
                "offload_message",
            ),
            "tenxgraph.storage.media.postgres": ("PgMediaStore",),
            "tenxgraph.storage.media.resolve": (
                "ainline",
                "in_media_store",
                "inline",
                "media_refs",
            ),
            "tenxgraph.storage.media.sqlite": ("SqliteMediaStore",),
        },
    )
