from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tenxgraph.core.llm import (
    OpenAIChatModel,
    RetryingModel,
    RetryPolicy,
    ScriptedModel,
    resolve_model,
)
from tenxgraph.errors import GraphBuildError


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("GOOGLE_API_KEY", "g-test")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")


@pytest.mark.parametrize(
    "name",
    [
        "gpt-4o",
        "gpt-4.1-mini",
        "o1",
        "o3-mini",
        "o4-mini",
        "chatgpt-4o-latest",
        "ft:gpt-4o-mini:acme::abc123",
    ],
)
def test_openai_names(name: str) -> None:
    model = resolve_model(name)
    assert isinstance(model, OpenAIChatModel)
    assert (model.model, model.provider) == (name, "openai")


def test_claude_names_go_to_anthropic() -> None:
    pytest.importorskip("anthropic")
    from tenxgraph.core.llm.anthropic import AnthropicModel

    model = resolve_model("claude-sonnet-4-5")
    assert isinstance(model, AnthropicModel)
    assert model.model == "claude-sonnet-4-5"


def test_gemini_names_go_to_google() -> None:
    if importlib.util.find_spec("tenxgraph.core.llm.google") is None:
        pytest.skip("the Google adapter is not in this checkout yet")
    from tenxgraph.core.llm.google import GoogleModel

    model = resolve_model("gemini-2.5-flash")
    assert isinstance(model, GoogleModel)
    assert model.model == "gemini-2.5-flash"


def test_local_names() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    from tenxgraph.core.llm.local import LocalLlamaModel, default_model_path

    model = resolve_model("local", n_ctx=256)
    assert isinstance(model, LocalLlamaModel)
    assert model.model_path == default_model_path()
    by_path = resolve_model(str(default_model_path()))
    assert isinstance(by_path, LocalLlamaModel)
    assert by_path.model_path == default_model_path()


def test_missing_gguf_path_is_a_clear_error(tmp_path: Path) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    from tenxgraph.errors import ModelError

    with pytest.raises(ModelError, match="no model file at"):
        resolve_model(str(tmp_path / "missing.gguf"))


def test_provider_overrides_the_name() -> None:
    model = resolve_model("claude-sonnet-4-5", provider="openai")
    assert isinstance(model, OpenAIChatModel)


def test_openai_compatible_needs_base_url() -> None:
    with pytest.raises(GraphBuildError, match="needs base_url"):
        resolve_model("llama3", provider="openai-compatible")
    model = resolve_model("llama3", provider="openai-compatible", base_url="http://127.0.0.1:1/v1")
    assert isinstance(model, OpenAIChatModel)
    assert model.provider == "openai-compatible"


def test_unknown_names_list_the_options() -> None:
    with pytest.raises(
        GraphBuildError, match=r"cannot tell the provider of model 'mistral-7b'.*openai-compatible"
    ):
        resolve_model("mistral-7b")
    with pytest.raises(GraphBuildError, match=r"unknown provider 'azure'; choose one of openai"):
        resolve_model("gpt-4o", provider="azure")
    with pytest.raises(GraphBuildError):
        resolve_model("omni")  # 'o' without a digit is not an OpenAI reasoning model


def test_instances_pass_through_and_retry_wraps() -> None:
    scripted = ScriptedModel([])
    assert resolve_model(scripted) is scripted
    wrapped = resolve_model(scripted, retry=RetryPolicy(max_attempts=2))
    assert isinstance(wrapped, RetryingModel)
    assert wrapped.inner is scripted
    assert wrapped.policy.max_attempts == 2
    with pytest.raises(GraphBuildError, match="apply to model names only"):
        resolve_model(scripted, temperature=0)


def test_adapter_arguments_are_passed() -> None:
    model = resolve_model("gpt-4o", temperature=0.2, base_url="http://127.0.0.1:1/v1")
    assert isinstance(model, OpenAIChatModel)
    assert model.defaults == {"temperature": 0.2}
