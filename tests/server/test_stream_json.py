"""Stream events are JSON a reader can parse: NaN and infinities are written as null."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tenxgraph.server._run_stream import StreamEncoder


def strict(text: str) -> Any:
    def refuse(word: str) -> None:
        raise AssertionError(f"{word} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_number_json_cannot_hold_is_sent_as_null(number: float) -> None:
    text = StreamEncoder.dumps({"score": number, "scores": [1.5, number], "note": "NaN"})
    assert strict(text) == {"score": None, "scores": [1.5, None], "note": "NaN"}
