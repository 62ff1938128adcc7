from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tenxgraph.core.graph import Agent, StateGraph, create_agent
from tenxgraph.core.llm import (
    OpenAIChatModel,
    RetryingModel,
    RetryPolicy,
    ScriptedModel,
    resolve_model,
)
from tenxgraph.core.llm.resolve import NAME_FORMS, PROVIDERS, check_model, guess_provider
from tenxgraph.core.state import AgentState
from tenxgraph.errors import GraphBuildError, MissingExtraError


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


@pytest.mark.parametrize("name", ["lcoal", "claud-3", "gpt4-o", "gemni-pro", ""])
def test_check_model_rejects_names_no_provider_claims(name: str) -> None:
    with pytest.raises(GraphBuildError) as caught:
        check_model(name)
    message = str(caught.value)
    assert f"cannot tell the provider of model {name!r}" in message
    assert NAME_FORMS in message  # the accepted forms are listed
    assert f"pass provider= (one of {', '.join(PROVIDERS)})" in message


@pytest.mark.parametrize(
    ("name", "provider"),
    [
        ("gpt-4o", "openai"),
        ("o3-mini", "openai"),
        ("claude-sonnet-4-5", "anthropic"),
        ("gemini-2.5-flash", "google"),
        ("local", "local"),
        ("/models/any.gguf", "local"),
    ],
)
def test_check_model_accepts_known_forms(
    name: str, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for sdk in ("openai", "anthropic", "google", "google.genai", "llama_cpp"):
        monkeypatch.setitem(sys.modules, sdk, None)  # nothing is imported to check a name
    monkeypatch.delenv("OPENAI_API_KEY")  # nor any key read
    assert check_model(name) == provider
    assert guess_provider(name) == provider


def test_check_model_with_a_provider_or_an_instance() -> None:
    assert check_model("anything", provider="openai") == "openai"
    assert check_model("llama3", provider="openai-compatible", base_url="http://h/v1") == (
        "openai-compatible"
    )
    with pytest.raises(GraphBuildError, match="needs base_url"):
        check_model("llama3", provider="openai-compatible")
    with pytest.raises(GraphBuildError, match="unknown provider 'mistral'"):
        check_model("mistral-7b", provider="mistral")
    assert check_model(ScriptedModel([])) == "test"  # an instance: its own provider
    with pytest.raises(GraphBuildError, match="apply to model names only"):
        check_model(ScriptedModel([]), provider="openai")


def test_a_mistyped_model_name_fails_when_the_agent_is_built() -> None:
    with pytest.raises(GraphBuildError, match="cannot tell the provider of model 'claud-3'"):
        Agent("claud-3")
    with pytest.raises(GraphBuildError, match="cannot tell the provider of model 'lcoal'"):
        create_agent("lcoal", [])
    with pytest.raises(GraphBuildError, match="needs base_url"):
        Agent("llama3", provider="openai-compatible")
    with pytest.raises(GraphBuildError, match="apply to model names only"):
        Agent(ScriptedModel([]), provider="openai")


def test_a_known_name_builds_without_the_sdk_or_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    app = create_agent("claude-sonnet-4-5", [])  # resolved on first use, as before
    assert app is not None
    graph = StateGraph(AgentState)
    graph.add_node("main", Agent("my-model", provider="openai-compatible", base_url="http://h/v1"))
    graph.set_entry_point("main")
    assert graph.compile() is not None


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


@pytest.mark.parametrize(
    ("extra", "command"),
    [
        ("openai", 'pip install -e ".[openai]"'),
        ("local", 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-cache-dir -e ".[local]"'),
    ],
)
def test_missing_extra_says_a_command_that_works_from_a_checkout(extra: str, command: str) -> None:
    # tenxgraph is not on the package index: `pip install "tenxgraph[x]"` would fail
    error = MissingExtraError("some-sdk", extra)
    message = str(error)
    assert message == (
        f"'some-sdk' is not installed; it comes with the extra tenxgraph[{extra}]. "
        f"In a tenxgraph checkout run: {command}"
    )
    assert 'pip install "tenxgraph[' not in message
    assert isinstance(error, ImportError)
    assert (error.package, error.extra) == ("some-sdk", extra)
