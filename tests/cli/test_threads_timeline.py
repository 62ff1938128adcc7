"""``tenxgraph threads show ID --timeline``: the stored thread as a text timeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenxgraph.cli.main import main


def test_the_timeline_shows_turns_calls_summaries_window_and_checkpoints(
    trip_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["threads", "show", "trip", "--db", str(trip_db), "--timeline"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(
        "timeline of thread trip (user default) - version 13, 8 messages, 3 turns, "
        "1 tool calls, 13 checkpoints"
    )
    body = [line[17:] for line in lines[2:]]  # past the seq and time columns
    assert body[:3] == [
        "== turn 1",
        "  user: Pick Lisbon",
        "v checkpoint v1 after __start__ (step 0): the turn's input, +1 message",
    ]
    call = next(line for line in body if line.startswith("  -> tool"))
    assert call.startswith('  -> tool select_city("city": "Lisbon"): answered at seq 2 (')
    assert call.endswith(" ms)") or call.endswith(" s)")
    assert "~ summary replaced seqs 0-2" in body
    assert "[ context window: seqs 6-7 (what the model sees next)" in body
    window = body.index("[ context window: seqs 6-7 (what the model sees next)")
    assert body[window + 1 : window + 3] == ["== turn 3", "  user: When should I go?"]
    checkpoints = [line for line in body if line.startswith("v checkpoint")]
    assert len(checkpoints) == 13
    # Each says what it recorded, so two checkpoints of one step read apart.
    assert all(line.split("): ", 1)[1] for line in checkpoints)
    assert len(set(checkpoints)) == 13


def test_the_timeline_of_a_missing_thread_is_a_one_line_error(
    trip_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["threads", "show", "nope", "--db", str(trip_db), "--timeline"]) == 1
    assert capsys.readouterr().err.strip().endswith("no thread 'nope' for user 'default'")
