from __future__ import annotations

import pytest
from pydantic import ValidationError

from tenxgraph.core.llm import ModelRequest, RetryingModel, RetryPolicy, ScriptedModel
from tenxgraph.core.llm.base import ChatModel
from tenxgraph.core.state import Message
from tenxgraph.errors import (
    AuthenticationError,
    ContextWindowExceededError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)

NO_WAIT = RetryPolicy(initial_delay=0, jitter=0)


def request() -> ModelRequest:
    return ModelRequest(messages=[Message.text_message("hi")])


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_transient_errors_are_retried_until_success() -> None:
    inner = ScriptedModel(
        [RateLimitError("429"), ServerError("503"), "finally"], model="m", provider="p"
    )
    model = RetryingModel(inner, NO_WAIT)
    assert (await model.complete(request())).text() == "finally"
    assert len(inner.requests) == 3
    assert (model.provider, model.model) == ("p", "m")
    inner.assert_consumed()


async def test_gives_up_after_max_attempts_with_the_last_error() -> None:
    inner = ScriptedModel([ModelTimeoutError("t1"), ModelTimeoutError("t2"), "never"])
    model = RetryingModel(inner, RetryPolicy(max_attempts=2, initial_delay=0, jitter=0))
    with pytest.raises(ModelTimeoutError, match="t2"):
        await model.complete(request())
    assert inner.remaining == 1


@pytest.mark.parametrize(
    "error", [AuthenticationError("no"), ContextWindowExceededError("too long")]
)
async def test_permanent_errors_are_not_retried(error: Exception) -> None:
    inner = ScriptedModel([error, "unused"])
    with pytest.raises(type(error)):
        await RetryingModel(inner, NO_WAIT).complete(request())
    assert len(inner.requests) == 1


async def test_backoff_grows_exponentially_and_is_capped() -> None:
    sleeps = Sleeps()
    policy = RetryPolicy(max_attempts=5, initial_delay=1, multiplier=3, max_delay=5, jitter=0)
    inner = ScriptedModel([ServerError("x")] * 4 + ["ok"])
    await RetryingModel(inner, policy, sleep=sleeps).complete(request())
    assert sleeps.waits == [1, 3, 5, 5]


def test_jitter_stays_within_its_fraction() -> None:
    policy = RetryPolicy(initial_delay=2, jitter=0.25)
    delays = {policy.delay(1) for _ in range(200)}
    assert all(1.5 <= d <= 2.5 for d in delays)
    assert len(delays) > 1


def test_policy_validates_its_fields() -> None:
    with pytest.raises(ValidationError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValidationError, match="jitter"):
        RetryPolicy(jitter=2)


class FailsMidStream(ChatModel):
    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ModelRequest):  # type: ignore[no-untyped-def]
        self.calls += 1
        yield Message.text_message("partial", role="assistant", delta=True)
        raise ServerError("connection dropped")


async def test_no_retry_once_output_was_streamed() -> None:
    inner = FailsMidStream()
    model = RetryingModel(inner, NO_WAIT)
    seen: list[Message] = []
    with pytest.raises(ServerError, match="dropped"):
        async for message in model.stream(request()):
            seen.append(message)
    assert inner.calls == 1
    assert [m.text() for m in seen] == ["partial"]


async def test_custom_retry_on() -> None:
    inner = ScriptedModel([AuthenticationError("flaky proxy"), "ok"])
    policy = RetryPolicy(initial_delay=0, jitter=0, retry_on=(AuthenticationError,))
    assert (await RetryingModel(inner, policy).complete(request())).text() == "ok"
