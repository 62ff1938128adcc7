"""Structured logs: one JSON object per line, with the run and thread a line is about.

The server's loggers (``tenxgraph.server.runs`` and the rest of
``tenxgraph``) pass ``run_id``, ``thread_id`` and ``worker`` as ``extra``
fields. With ``TENXGRAPH_SERVE_LOG_FORMAT=json`` each worker writes the
``tenxgraph`` loggers' lines to stderr as JSON (``time``, ``level``,
``logger``, ``message`` and those fields when present), which log shippers
(Loki, Elasticsearch, Cloud Logging) index without parsing rules. Without
it, lines stay plain text as uvicorn prints them.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

__all__ = ["FIELDS", "JsonFormatter", "use_json_logs"]

FIELDS = ("run_id", "thread_id", "worker", "attempt")
"""The ``extra`` fields copied into each JSON line when a log call gives them."""


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        """The record's time, level, logger, message and known extra fields, as JSON."""
        line = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = str(value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def use_json_logs(level: int = logging.INFO) -> logging.Handler:
    """Send the ``tenxgraph`` loggers to stderr as JSON lines (once per process)."""
    logger = logging.getLogger("tenxgraph")
    for handler in logger.handlers:
        if isinstance(handler.formatter, JsonFormatter):
            return handler
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return handler
