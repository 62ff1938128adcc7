"""JSON log lines carry the run and thread they are about."""

from __future__ import annotations

import json
import logging

from tenxgraph.server._logging import JsonFormatter


def test_a_log_line_is_json_with_the_run_and_thread_ids() -> None:
    record = logging.LogRecord(
        "tenxgraph.server.runs", logging.INFO, "x", 1, "run %s ended", ("r1",), None
    )
    record.run_id, record.thread_id = "r1", "t1"
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "run r1 ended" and line["level"] == "INFO"
    assert (line["run_id"], line["thread_id"]) == ("r1", "t1")
    assert "worker" not in line
