from __future__ import annotations

import os
import sys

import pytest

from tenxgraph.core.state import TiktokenCounter
from tenxgraph.core.state.context.tokens import MESSAGE_OVERHEAD_TOKENS
from tenxgraph.errors import MissingExtraError

from .convo import calls, user

SAMPLE = (
    "Weather in Tokyo? It's cloudy, 18°C — la météo à Paris: ensoleillé. 東京の天気は曇り。\n"
    "def f(x):\n    return x ** 2  # 12345 tokens? don't know!\n\n  \t trailing   "
)


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_known_counts_offline(encoding: str) -> None:
    environ = dict(os.environ)
    counter = TiktokenCounter(encoding)
    assert counter.count_text("hello world") == 2
    assert counter.count_text("") == 0
    assert dict(os.environ) == environ  # no cache dir was set behind the user's back


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # bpe_openai's own resource loading
@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_counts_match_an_independent_tokenizer(encoding: str) -> None:
    import bpe_openai

    reference = bpe_openai.get_encoding(encoding)
    counter = TiktokenCounter(encoding)
    for text in [SAMPLE, SAMPLE * 7, "<|endoftext|> is plain text here"]:
        assert counter.count_text(text) == len(reference.encode_ordinary(text))


def test_the_two_encodings_differ_where_they_should() -> None:
    text = "東京の天気は曇り。" * 20
    assert TiktokenCounter("o200k_base").count_text(text) < TiktokenCounter(
        "cl100k_base"
    ).count_text(text)


def test_model_names_map_to_their_encoding() -> None:
    assert TiktokenCounter("gpt-4o").encoding_name == "o200k_base"
    assert TiktokenCounter("gpt-4").encoding_name == "cl100k_base"
    with pytest.raises(ValueError, match="unknown model or encoding 'no-such-model'"):
        TiktokenCounter("no-such-model")
    with pytest.raises(ValueError, match="not available offline"):
        TiktokenCounter("text-davinci-003")


def test_messages_count_text_exactly_plus_framing() -> None:
    counter = TiktokenCounter("cl100k_base")
    message = user("hello world")
    assert counter.count([message]) == 2 + MESSAGE_OVERHEAD_TOKENS
    call = calls("c1", name="get_weather")
    expected = counter.count_text("get_weather") + counter.count_text('{"query": "c1"}')
    assert counter.count([call]) == expected + MESSAGE_OVERHEAD_TOKENS
    assert counter.count([message, call]) == counter.count([message]) + counter.count([call])


def test_missing_tiktoken_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # makes `import tiktoken` fail
    with pytest.raises(MissingExtraError, match=r"tenxgraph\[tokens\]"):
        TiktokenCounter("gpt-4o")


def test_repr_names_the_encoding() -> None:
    assert repr(TiktokenCounter("o200k_base")) == "TiktokenCounter('o200k_base')"
