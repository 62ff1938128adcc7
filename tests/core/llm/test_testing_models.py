from __future__ import annotations

import pytest

from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.llm.testing import ScriptError
from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import TextBlock, ToolCallBlock
from tenxgraph.errors import RateLimitError, TenxGraphError


def request(text: str = "hi") -> ModelRequest:
    return ModelRequest(messages=[Message.text_message(text)])


async def collect(model: ScriptedModel | FunctionModel, req: ModelRequest) -> list[Message]:
    return [message async for message in model.stream(req)]


async def test_scripted_text_streams_word_deltas_then_the_complete_message() -> None:
    model = ScriptedModel(["Hello there, world"])
    messages = await collect(model, request())
    deltas, final = messages[:-1], messages[-1]
    assert [d.text() for d in deltas] == ["Hello ", "there, ", "world"]
    assert all(d.delta and d.role == "assistant" for d in deltas)
    assert not final.delta
    assert final.role == "assistant"
    assert final.text() == "Hello there, world"
    assert {d.message_id for d in deltas} == {final.message_id}


async def test_scripted_tool_calls_and_messages_are_answered_in_order() -> None:
    call = ToolCallBlock(id="c1", name="get_weather", args={"city": "Oslo"})
    given = Message(role="assistant", content=[TextBlock(text="done")], message_id="m-7")
    model = ScriptedModel([call, [call, call.model_copy(update={"id": "c2"})], given])
    first = await model.complete(request())
    assert first.tool_calls() == [call]
    second = await model.complete(request())
    assert [c.id for c in second.tool_calls()] == ["c1", "c2"]
    third = await model.complete(request())
    assert third.message_id == "m-7"
    assert third.text() == "done"
    assert third is not given  # the script's own message is not handed out and mutated
    assert given.usages is None
    model.assert_consumed()


async def test_requests_are_recorded() -> None:
    model = ScriptedModel(["a", "b"])
    await model.complete(request("first"))
    await model.complete(request("second"))
    assert [r.messages[-1].text() for r in model.requests] == ["first", "second"]


async def test_an_extra_call_fails_loudly() -> None:
    model = ScriptedModel(["only one"])
    await model.complete(request())
    with pytest.raises(ScriptError, match=r"unexpected call 2; the script had 1 responses"):
        await model.complete(request("again?"))
    assert isinstance(ScriptError("x"), AssertionError)
    assert isinstance(ScriptError("x"), TenxGraphError)


async def test_unconsumed_responses_fail_the_context_manager() -> None:
    model = ScriptedModel(["used", "left over"])
    with (
        pytest.raises(ScriptError, match=r"1 of 2 scripted responses were never requested"),
        model,
    ):
        await model.complete(request())


async def test_context_manager_passes_when_the_script_is_used_up() -> None:
    with ScriptedModel(["one"]) as model:
        await model.complete(request())
    assert model.remaining == 0


async def test_context_manager_does_not_hide_the_test_failure() -> None:
    with pytest.raises(KeyError), ScriptedModel(["unused"]):
        raise KeyError("the real failure")


async def test_scripted_exception_is_raised_on_its_turn() -> None:
    model = ScriptedModel([RateLimitError("slow down", status=429), "recovered"])
    with pytest.raises(RateLimitError, match="slow down"):
        await model.complete(request())
    assert (await model.complete(request())).text() == "recovered"


def test_invalid_script_entries_are_refused_at_construction() -> None:
    with pytest.raises(ScriptError, match=r"ScriptedModel response 1: expected a Message"):
        ScriptedModel(["fine", 42])  # type: ignore[list-item]
    with pytest.raises(ScriptError, match=r"role='user'"):
        ScriptedModel([Message.text_message("I am the user")])
    with pytest.raises(ScriptError, match="expected a Message"):
        ScriptedModel([[]])


async def test_usage_is_a_deterministic_estimate() -> None:
    prompt = "x" * 40  # 10 tokens at four characters a token
    model = ScriptedModel(["y" * 8, "y" * 8])
    first = await model.complete(request(prompt))
    second = await model.complete(request(prompt))
    assert first.usages is not None
    assert (first.usages.prompt_tokens, first.usages.completion_tokens) == (10, 2)
    assert first.usages.total_tokens == 12
    assert first.usages == second.usages


async def test_usage_given_in_the_script_is_kept() -> None:
    from tenxgraph.core.state.message import TokenUsages

    usages = TokenUsages(prompt_tokens=1, completion_tokens=2, total_tokens=3)
    model = ScriptedModel([Message.text_message("x", role="assistant", usages=usages)])
    assert (await model.complete(request())).usages == usages


async def test_names_are_set() -> None:
    model = ScriptedModel([], model="my-model", provider="fake")
    assert (model.model, model.provider) == ("my-model", "fake")
    assert FunctionModel(lambda r: "x").provider == "test"


async def test_function_model_sync_and_async() -> None:
    def echo(req: ModelRequest) -> str:
        return f"you said {req.messages[-1].text()}"

    async def call_tool(req: ModelRequest) -> list[ToolCallBlock]:
        return [ToolCallBlock(id="c9", name=req.messages[-1].text())]

    sync_model = FunctionModel(echo)
    messages = await collect(sync_model, request("ping"))
    assert messages[-1].text() == "you said ping"
    assert [m.text() for m in messages[:-1]] == ["you ", "said ", "ping"]
    assert sync_model.requests[0].messages[-1].text() == "ping"

    async_model = FunctionModel(call_tool)
    final = await async_model.complete(request("lookup"))
    assert final.tool_calls()[0].name == "lookup"
    assert final.usages is not None
    assert final.usages.completion_tokens > 0


async def test_function_model_rejects_a_bad_reply() -> None:
    model = FunctionModel(lambda r: {"not": "a message"})  # type: ignore[arg-type,return-value]
    with pytest.raises(ScriptError, match="FunctionModel reply: expected a Message"):
        await model.complete(request())
