"""What JSON cannot hold (NaN, infinities, lone surrogates) is decided in one module.

``tenxgraph.core.state.json_policy`` says what is refused and how it is
detected; the message model, tool arguments, ``app_state``, checkpoint
metadata, long-term memory, ids and the provider wire cleaner call it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

import tenxgraph
from tenxgraph.core.state import AgentState
from tenxgraph.core.state.json_policy import json_bytes, json_text, parse_json
from tenxgraph.errors import StateError

ROOT = Path(tenxgraph.__file__).parent
OWNER = ROOT / "core" / "state" / "json_policy.py"

DECIDING = re.compile(r"\\ud800-\\udfff|allow_nan|parse_constant=_no_constant")
"""Source text that decides the policy: a lone-surrogate pattern, a strict encoder, a NaN hook."""


def test_one_module_decides_what_json_cannot_hold() -> None:
    elsewhere = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted(ROOT.rglob("*.py"))
        if path != OWNER
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if DECIDING.search(line)
    ]
    assert elsewhere == []
    assert DECIDING.search(OWNER.read_text())  # the scan looks for what the owner has


@pytest.mark.parametrize(
    ("value", "error", "says"),
    [
        ({"x": math.nan}, ValueError, "not JSON compliant"),
        ([math.inf], ValueError, "not JSON compliant"),
        ({"x": ["ok", "a\ud800"]}, ValueError, "lone surrogates"),
        ({"x": object()}, TypeError, "not JSON serializable"),
    ],
)
def test_json_text_refuses_what_json_cannot_hold(
    value: object, error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        json_text(value)
    assert json_text({"a": [1, 2.5, "é"], "b": None}) == '{"a":[1,2.5,"é"],"b":null}'


def test_json_bytes_names_the_values_json_cannot_hold() -> None:
    text, bad = json_bytes({"ok": "NaN is a word", "n": math.nan, "s": "\udcff", "i": -math.inf})
    assert text is None and bad == ["n", "s", "i"]
    assert json_bytes({"ok": "NaN and Infinity are words", "f": 1.5}) == (
        b'{"ok":"NaN and Infinity are words","f":1.5}',
        [],
    )


@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity"])
def test_parse_json_refuses_the_words_python_would_read_as_floats(word: str) -> None:
    with pytest.raises(ValueError, match=f"{word} is not a JSON number"):
        parse_json(f'{{"x": {word}}}')


@pytest.mark.parametrize("value", ["a\ud800", {"nested": ["\udcff"]}])
def test_app_state_refuses_a_lone_surrogate_where_it_is_set(value: object) -> None:
    state = AgentState()
    with pytest.raises(StateError, match=r"app_state value for 'k' .*lone surrogates"):
        state.app_state.set("k", value)
    with pytest.raises(ValidationError, match=r"app_state value for 'k' .*lone surrogates"):
        AgentState(app_state={"k": value})
    assert state.app_state.get() == {}
