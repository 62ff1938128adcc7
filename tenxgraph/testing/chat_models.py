"""The chat-model adapter contract: a pytest base class every provider adapter's tests subclass.

The suite talks to the adapter through the provider's real SDK, pointed at
a ``ReplayServer`` (``tenxgraph.testing.replay``). The subclass says how its
provider spells an answer on the wire, by queueing replies on the server
(``queue_text``, ``queue_tool_call``, ``queue_error``), and gives a ``model``
fixture: the adapter under test, aimed at ``server.url`` with the SDK's own
retries off. The class name must start with ``Test`` for pytest to collect
it::

    class TestMyAdapter(ChatModelContract):
        @pytest_asyncio.fixture
        async def model(self, server):
            model = MyModel("my-model", base_url=server.url, max_retries=0)
            yield model
            await model.aclose()

        def queue_text(self, server, pieces, prompt_tokens, completion_tokens):
            server.stream([...])  # one event per piece, then the usage

        ...

What every adapter does: a text answer comes back as an assistant message;
the stream yields deltas that add up to the complete message, which comes
last; one tool call comes back with its arguments parsed from JSON; token
usage is recorded on the message; an HTTP 429 raises ``RateLimitError`` and
a 500 ``ServerError``, naming the status and the provider. The suite needs
pytest and pytest-asyncio.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from tenxgraph.core.llm.base import ChatModel, ModelRequest, ToolSpec
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ModelError, RateLimitError, ServerError
from tenxgraph.testing.replay import ReplayServer

__all__ = ["WEATHER", "ChatModelContract"]

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
"""The one tool the suite offers the model."""

PIECES = ("Hel", "lo, wor", "ld!")
"""The text answer, in the pieces the provider streams it in."""


def ask(text: str = "Hello", **fields: Any) -> ModelRequest:
    """A request of one user message."""
    return ModelRequest(messages=[Message.text_message(text)], **fields)


async def collect(model: ChatModel, request: ModelRequest) -> list[Message]:
    """Everything the model's stream yields."""
    return [message async for message in model.stream(request)]


class ChatModelContract:
    """What every chat-model adapter does, as pytest test methods.

    The subclass provides the ``model`` fixture and the three ``queue_*``
    methods; the suite's ``server`` fixture is a replay server of the class's
    own, emptied before each test, and every reply a test queues must be
    requested.
    """

    pytestmark = [pytest.mark.asyncio]

    @pytest.fixture(scope="class")
    @classmethod
    def replay_server(cls) -> Iterator[ReplayServer]:
        """One replay server per test class (starting one takes about half a second)."""
        with ReplayServer() as server:
            yield server

    @pytest.fixture
    def server(self, replay_server: ReplayServer) -> Iterator[ReplayServer]:
        """The class's replay server, emptied for each test; every queued reply must be used."""
        replay_server.replies.clear()
        replay_server.requests.clear()
        yield replay_server
        left = len(replay_server.replies)
        assert not left, f"{left} queued replies were never requested"

    @pytest.fixture
    def model(self, server: ReplayServer) -> ChatModel:
        """Override this in your subclass: the adapter under test, aimed at ``server.url``."""
        raise NotImplementedError(
            f"{type(self).__name__} must define a `model` fixture: the adapter aimed at "
            "the replay server `server.url`, with the SDK's retries off"
        )

    def queue_text(
        self,
        server: ReplayServer,
        pieces: Sequence[str],
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        """Queue a streamed text answer arriving in ``pieces``, with its token usage."""
        raise NotImplementedError(f"{type(self).__name__} must define queue_text")

    def queue_tool_call(
        self, server: ReplayServer, call_id: str, name: str, arguments: dict[str, Any]
    ) -> None:
        """Queue a streamed answer that is one call of tool ``name`` (arguments as JSON)."""
        raise NotImplementedError(f"{type(self).__name__} must define queue_tool_call")

    def queue_error(self, server: ReplayServer, status: int, message: str) -> None:
        """Queue the provider's error response for HTTP ``status``, saying ``message``."""
        raise NotImplementedError(f"{type(self).__name__} must define queue_error")

    async def test_a_text_answer_is_an_assistant_message(
        self, server: ReplayServer, model: ChatModel
    ) -> None:
        """A text answer comes back as one complete assistant message, from one request."""
        self.queue_text(server, PIECES, 12, 5)
        final = await model.complete(ask())
        assert not final.delta
        assert final.role == "assistant"
        assert final.text() == "".join(PIECES)
        assert final.tool_calls() == []
        assert len(server.requests) == 1

    async def test_streamed_deltas_add_up_to_the_complete_message_which_comes_last(
        self, server: ReplayServer, model: ChatModel
    ) -> None:
        """The stream yields deltas, then the complete message; the deltas' text adds up to it."""
        self.queue_text(server, PIECES, 12, 5)
        *deltas, final = await collect(model, ask())
        assert not final.delta
        assert deltas, "the text arrived in pieces, so the stream yields deltas"
        assert all(delta.delta for delta in deltas)
        assert "".join(delta.text() for delta in deltas) == final.text() == "".join(PIECES)
        assert {delta.message_id for delta in deltas} == {final.message_id}

    async def test_one_tool_call_comes_back_with_its_json_arguments(
        self, server: ReplayServer, model: ChatModel
    ) -> None:
        """A tool call comes back as one ``ToolCallBlock`` with its arguments parsed from JSON."""
        self.queue_tool_call(server, "call_1", WEATHER.name, {"city": "Paris", "days": 2})
        final = await model.complete(ask("Weather in Paris?", tools=[WEATHER]))
        assert not final.delta
        assert final.role == "assistant"
        (call,) = final.tool_calls()
        assert call.name == WEATHER.name
        assert call.args == {"city": "Paris", "days": 2}
        assert call.id

    async def test_token_usage_is_recorded(self, server: ReplayServer, model: ChatModel) -> None:
        """The provider's token counts are recorded on the complete message."""
        self.queue_text(server, PIECES, 12, 5)
        final = await model.complete(ask())
        assert final.usages is not None
        assert final.usages.prompt_tokens == 12
        assert final.usages.completion_tokens == 5
        assert final.usages.total_tokens == 17

    @pytest.mark.parametrize(
        ("status", "error"), [(429, RateLimitError), (500, ServerError)], ids=["429", "500"]
    )
    async def test_http_errors_map_to_library_errors(
        self, server: ReplayServer, model: ChatModel, status: int, error: type[ModelError]
    ) -> None:
        """HTTP 429 raises ``RateLimitError``, 500 ``ServerError``, naming status and provider."""
        self.queue_error(server, status, "the replayed failure")
        with pytest.raises(error) as caught:
            await model.complete(ask())
        assert caught.value.status == status
        assert caught.value.provider == model.provider
        assert "the replayed failure" in str(caught.value)
        assert len(server.requests) == 1, "the SDK's own retries must be off"
