"""LangChain's message format: tenxgraph -> LangChain -> tenxgraph is exact, and
LangChain's own messages (made by ``langchain_core``) convert to tenxgraph's and back."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenxgraph.core.state import (
    AnnotationBlock,
    AnnotationRef,
    AudioBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    Message,
    ReasoningBlock,
    RemoteToolCallBlock,
    RemoveMessage,
    TextBlock,
    TokenUsages,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
    from_langchain_message,
    to_langchain_message,
)
from tenxgraph.core.state.langchain_format import _plain_langchain, langchain_from_json
from tenxgraph.errors import StateError

lc = pytest.importorskip("langchain_core.messages")

# --- strategies: any valid tenxgraph message -----------------------------------------------

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
word = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8)
small = st.integers(-5, 10**6)
finite = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | small | finite | text,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(text, kids, max_size=3),
    max_leaves=8,
)
json_dicts = st.dictionaries(text, json_values, max_size=3)
b64 = st.binary(min_size=1, max_size=6).map(lambda b: base64.b64encode(b).decode())
mime = st.sampled_from(
    ["image/png", "audio/wav", "video/mp4", "application/pdf", "text/plain", "application/zip"]
)


def opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


media_extras = {
    "mime_type": opt(mime),
    "size_bytes": opt(small),
    "sha256": opt(word),
    "filename": opt(text),
    "width": opt(small),
    "height": opt(small),
    "duration_ms": opt(small),
    "page": opt(small),
}
media_refs = st.one_of(
    st.builds(
        MediaRef,
        kind=st.just("url"),
        url=word | st.just("data:image/png;base64,aGk=") | st.just("graph://media/k1"),
        file_id=opt(word),
        **media_extras,
    ),
    st.builds(MediaRef, kind=st.just("data"), data_base64=b64, **media_extras),
    st.builds(
        MediaRef, kind=st.just("file_id"), file_id=word, data_base64=opt(b64), **media_extras
    ),
)
refs = st.builds(
    AnnotationRef,
    url=opt(word),
    file_id=opt(word),
    page=opt(small),
    index=opt(small),
    title=opt(text),
)
simple_blocks = st.one_of(
    st.builds(TextBlock, text=text, annotations=st.lists(refs, max_size=2)),
    st.builds(ReasoningBlock, summary=text, details=opt(st.lists(text, max_size=2))),
    st.builds(
        ImageBlock,
        media=media_refs,
        alt_text=opt(text),
        bbox=opt(st.lists(finite, min_size=4, max_size=4)),
    ),
    st.builds(AudioBlock, media=media_refs, transcript=opt(text), sample_rate=opt(small)),
    st.builds(VideoBlock, media=media_refs, thumbnail=opt(media_refs)),
    st.builds(
        DocumentBlock,
        media=media_refs,
        text=opt(text),
        pages=opt(st.lists(small, max_size=2)),
        excerpt=opt(text),
    ),
    st.builds(DataBlock, mime_type=mime, data_base64=opt(b64), media=opt(media_refs)),
    st.builds(ErrorBlock, message=text, code=opt(word), data=opt(json_dicts)),
    st.builds(
        AnnotationBlock,
        kind=st.sampled_from(["citation", "note"]),
        refs=st.lists(refs, max_size=2),
        spans=opt(st.lists(st.tuples(small, small), max_size=2)),
    ),
)
calls = st.one_of(
    st.builds(ToolCallBlock, id=word, name=text, args=json_dicts, tool_type=opt(word)),
    st.builds(RemoteToolCallBlock, id=word, name=text, args=json_dicts),
)
outputs = st.one_of(text, json_values, st.lists(simple_blocks, max_size=2), media_refs)
results = st.builds(
    ToolResultBlock,
    call_id=word,
    output=outputs,
    is_error=st.booleans(),
    status=st.sampled_from([None, "completed", "failed"]),
)
blocks = simple_blocks | calls | results
usages = st.builds(
    TokenUsages,
    completion_tokens=small,
    prompt_tokens=small,
    total_tokens=small,
    reasoning_tokens=small,
    cache_creation_input_tokens=small,
    cache_read_input_tokens=small,
    image_tokens=opt(small),
    audio_tokens=opt(small),
)
metadata = json_dicts | st.fixed_dictionaries({"langchain": json_values | json_dicts})
messages = st.builds(
    Message,
    message_id=word | small,
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    content=st.lists(blocks, max_size=4) | st.lists(results, min_size=1, max_size=1),
    delta=st.booleans(),
    tools_calls=opt(st.lists(json_dicts, max_size=2)),
    reasoning=opt(text),
    timestamp=opt(finite),
    metadata=metadata,
    usages=opt(usages),
    raw=opt(json_dicts),
    parsed_content=opt(json_dicts),
)


def loaded(data: dict[str, Any]) -> Any:
    """``data`` loaded by langchain_core, as a message of LangChain's."""
    (message,) = lc.messages_from_dict([{"type": data["type"], "data": data}])
    return message


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages)
def test_tenxgraph_langchain_tenxgraph_is_exact(message: Message) -> None:
    if message.delta:  # a chunk carries no time: LangChain adds chunks together
        message = message.model_copy(update={"timestamp": None})
    data = to_langchain_message(message)
    assert from_langchain_message(data) == message
    over_json = json.loads(json.dumps(data))  # as a client reads it
    assert from_langchain_message(over_json) == message
    through_langchain = loaded(over_json)  # langchain_core takes it, and gives it back
    assert through_langchain.type == data["type"]
    assert from_langchain_message(through_langchain.model_dump()) == message
    assert from_langchain_message(lc.message_to_dict(through_langchain)) == message


@settings(max_examples=100, deadline=None)
@given(messages)
def test_convert_to_messages_reads_every_dict(message: Message) -> None:
    data = to_langchain_message(message.model_copy(update={"delta": False}))
    (converted,) = lc.convert_to_messages([data])
    assert converted.type == data["type"]
    assert converted.id == data["id"]
    assert (converted.content or "") == (data["content"] or "")  # it reads [] as ""
    assert getattr(converted, "tool_calls", []) == data.get("tool_calls", [])


plain_messages = st.builds(
    Message,
    message_id=word | small,
    role=st.sampled_from(["user", "assistant", "system"]),
    content=st.lists(st.builds(TextBlock, text=text), max_size=3),
    delta=st.booleans(),
    timestamp=opt(finite),
    metadata=json_dicts,
    usages=opt(usages),
)


@settings(max_examples=300, deadline=None)
@given(plain_messages | messages)
def test_from_json_is_the_same_dict(message: Message) -> None:
    """The shortcut for plain text messages writes what the general path writes."""
    dumped = json.loads(message.model_dump_json())
    assert langchain_from_json(dumped) == to_langchain_message(message)
    assert json.dumps(langchain_from_json(dumped)) == json.dumps(to_langchain_message(message))


def test_an_answer_with_its_usage_takes_the_shortcut() -> None:
    """Every model answer has usage: the shortcut takes it when LangChain's fields hold it all."""
    whole = TokenUsages(prompt_tokens=2, completion_tokens=10, total_tokens=12, reasoning_tokens=1)
    answer = Message(role="assistant", content=[TextBlock(text="hi")], usages=whole)
    assert _plain_langchain(json.loads(answer.model_dump_json())) is not None
    for usage in (whole.model_copy(update={"image_tokens": 3}), whole):
        role = "assistant" if usage is not whole else "user"  # a user's usage: not LangChain's
        other = answer.model_copy(update={"usages": usage, "role": role})
        assert _plain_langchain(json.loads(other.model_dump_json())) is None


def test_shapes_the_sdks_read() -> None:
    call = ToolCallBlock(id="c1", name="search", args={"q": "x"})
    ai = Message(
        role="assistant",
        message_id="m1",
        content=[TextBlock(text="Looking"), call],
        usages=TokenUsages(prompt_tokens=3, completion_tokens=2, total_tokens=5),
    )
    data = to_langchain_message(ai)
    assert data["type"] == "ai"
    assert data["id"] == "m1"
    assert data["content"] == "Looking"
    assert data["tool_calls"] == [
        {"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}
    ]
    assert data["invalid_tool_calls"] == []
    assert data["usage_metadata"] == {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
    result = ToolResultBlock(call_id="c1", output="boom", is_error=True, status="failed")
    tool = to_langchain_message(Message.tool_message([result], message_id="t1"))
    assert (tool["type"], tool["tool_call_id"], tool["status"], tool["content"]) == (
        "tool",
        "c1",
        "error",
        "boom",
    )
    human = to_langchain_message(Message.text_message("hi", message_id=7))
    assert (human["type"], human["id"], human["content"]) == ("human", "7", "hi")
    assert human["additional_kwargs"]["tenxgraph"]["message_id"] == 7


def test_a_delta_is_a_chunk_with_tool_call_chunks() -> None:
    piece = Message(role="assistant", message_id="m", delta=True, content=[TextBlock(text="He")])
    data = to_langchain_message(piece)
    assert (data["type"], data["content"], data["tool_call_chunks"]) == ("AIMessageChunk", "He", [])
    assert isinstance(loaded(data), lc.AIMessageChunk)
    call = Message(
        role="assistant",
        delta=True,
        content=[ToolCallBlock(id="c", name="f", args={"a": [1, 2]})],
    )
    chunk = to_langchain_message(call)["tool_call_chunks"][0]
    assert chunk == {
        "name": "f",
        "args": '{"a": [1, 2]}',
        "id": "c",
        "index": 0,
        "type": "tool_call_chunk",
    }
    pieces = [
        loaded(to_langchain_message(Message(role="assistant", message_id="m", delta=True, **part)))
        for part in ({"content": [TextBlock(text="He")]}, {"content": [TextBlock(text="llo")]})
    ]
    whole = pieces[0] + pieces[1]  # how LangChain programs gather a stream
    assert (whole.content, whole.id) == ("Hello", "m")
    reasoning = Message(role="assistant", delta=True, content=[ReasoningBlock(summary="hm")])
    assert to_langchain_message(reasoning)["content"] == [{"type": "reasoning", "reasoning": "hm"}]


def test_media_as_standard_blocks() -> None:
    image = ImageBlock(media=MediaRef(kind="url", url="https://x/a.png", mime_type="image/png"))
    pdf = DocumentBlock(
        media=MediaRef(kind="data", data_base64="aGk=", mime_type="application/pdf")
    )
    data = to_langchain_message(Message(role="user", content=[TextBlock(text="see"), image, pdf]))
    assert data["content"] == [
        {"type": "text", "text": "see"},
        {"type": "image", "url": "https://x/a.png", "mime_type": "image/png"},
        {"type": "file", "base64": "aGk=", "mime_type": "application/pdf"},
    ]


# --- LangChain's own messages -> tenxgraph -> LangChain ------------------------------------


def langchain_messages() -> list[Any]:
    return [
        lc.HumanMessage("hi", id="h1", name="ann"),
        lc.HumanMessage(
            [
                {"type": "text", "text": "what is this?"},
                {  # Agent Chat UI's upload
                    "type": "image",
                    "source_type": "base64",
                    "mime_type": "image/png",
                    "data": "aGk=",
                    "metadata": {"name": "a.png"},
                },
                {"type": "file", "base64": "aGk=", "mime_type": "application/pdf", "id": "b1"},
                {"type": "image", "url": "https://x/y.png"},
                {
                    "type": "text",
                    "text": "cited",
                    "annotations": [{"type": "citation", "url": "u"}],
                },
            ],
            id="h2",
        ),
        lc.SystemMessage("be brief", id="s1"),
        lc.AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}],
            invalid_tool_calls=[{"name": "g", "args": "{oops", "id": "c2", "error": "bad json"}],
            usage_metadata={
                "input_tokens": 10,
                "output_tokens": 5,
                "total_tokens": 15,
                "input_token_details": {"cache_read": 4, "audio": 1},
                "output_token_details": {"reasoning": 2},
            },
            response_metadata={"model_name": "m", "finish_reason": "tool_calls"},
            additional_kwargs={"refusal": None},
        ),
        lc.AIMessage(
            [
                {"type": "reasoning", "reasoning": "think", "id": "r1"},
                {"type": "text", "text": "ok"},
            ],
            id="a2",
        ),
        lc.ToolMessage("nope", tool_call_id="c1", status="error", artifact={"k": 1}, id="t1"),
        lc.ToolMessage([{"type": "text", "text": "fine"}], tool_call_id="c1", name="f", id="t2"),
        lc.AIMessageChunk(
            content="par",
            id="k1",
            tool_call_chunks=[{"name": "f", "args": '{"x": ', "id": "c9", "index": 0}],
        ),
        lc.AIMessageChunk(content="", id="k2", chunk_position="last"),
    ]


@pytest.mark.parametrize("original", langchain_messages(), ids=lambda m: f"{m.type}-{m.id}")
def test_langchain_messages_round_trip(original: Any) -> None:
    ours = from_langchain_message(original.model_dump())
    assert isinstance(ours, Message)
    again = from_langchain_message(lc.message_to_dict(original))
    assert again == ours.model_copy(update={"timestamp": again.timestamp})  # made on reading
    back = to_langchain_message(ours)
    own = back["additional_kwargs"].pop("tenxgraph", {})  # a chunk has none
    assert set(own) <= {"timestamp", "status", "message_id"}
    assert loaded(back) == original


def test_langchain_messages_read_as_tenxgraph_blocks() -> None:
    human = from_langchain_message(langchain_messages()[1].model_dump())
    assert isinstance(human, Message) and human.role == "user"
    _, image, pdf, url, cited = human.content
    assert isinstance(image, ImageBlock) and image.media.data_base64 == "aGk="
    assert isinstance(pdf, DocumentBlock) and pdf.media.mime_type == "application/pdf"
    assert isinstance(url, ImageBlock) and url.media.url == "https://x/y.png"
    assert isinstance(cited, TextBlock) and cited.annotations == [AnnotationRef(url="u")]
    ai = from_langchain_message(langchain_messages()[3].model_dump())
    assert isinstance(ai, Message) and ai.role == "assistant"
    assert ai.tool_calls() == [ToolCallBlock(id="c1", name="f", args={"x": 1})]
    assert ai.usages is not None and ai.usages.cache_read_input_tokens == 4
    assert ai.usages.reasoning_tokens == 2
    tool = from_langchain_message(langchain_messages()[5].model_dump())
    assert isinstance(tool, Message)
    assert tool.tool_results() == [
        ToolResultBlock(call_id="c1", output="nope", is_error=True, status="failed")
    ]
    chunk = from_langchain_message(langchain_messages()[7].model_dump())
    assert isinstance(chunk, Message) and chunk.delta and chunk.tool_calls() == []


def test_remove_and_other_forms() -> None:
    assert from_langchain_message(lc.RemoveMessage(id="m3").model_dump()) == RemoveMessage("m3")
    assert from_langchain_message({"type": "remove", "id": "__remove_all__"}) == RemoveMessage(
        "__remove_all__"
    )
    data_url = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,aGk="}}
    message = from_langchain_message({"type": "human", "content": [data_url]})
    assert isinstance(message, Message)
    assert message.content == [
        ImageBlock(media=MediaRef(kind="data", data_base64="aGk=", mime_type="image/jpeg"))
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("hi", "not a LangChain message"),
        ({"role": "user", "content": "hi"}, "not a LangChain message"),
        ({"type": "robot", "content": "hi"}, "not a LangChain message"),
        ({"type": "human", "content": 5}, "'content' must be a text or a list"),
        ({"type": "human", "content": [5]}, "content[0]: a content item must be"),
        ({"type": "human", "content": [{"type": "gif"}]}, "unknown content block type 'gif'"),
        ({"type": "human", "content": [{"type": "image"}]}, "needs 'url', 'base64' or 'file_id'"),
        ({"type": "human", "content": [{"type": "non_standard", "value": {}}]}, "non_standard"),
        ({"type": "tool", "content": "x"}, "needs 'tool_call_id'"),
        ({"type": "tool", "content": "x", "tool_call_id": "c", "status": "ok"}, "'success' or"),
        ({"type": "ai", "content": "", "tool_calls": [{"name": "f"}]}, "tool_calls[0]"),
        ({"type": "ai", "content": "", "tool_calls": "f"}, "'tool_calls' must be a list"),
        ({"type": "ai", "content": "", "usage_metadata": {"x": 1}}, "'usage_metadata' needs"),
        ({"type": "remove"}, "needs the 'id'"),
        (
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "f", "args": {}, "id": "c"}],
                "additional_kwargs": {"tenxgraph": {"tool_calls": [{"at": "x"}]}},
            },
            "places it at 'x'",
        ),
        ({"type": "human", "content": [{"type": "image_url", "image_url": 3}]}, "image_url"),
        (
            {"type": "human", "content": [{"type": "image", "url": "data:image/png,xyz"}]},
            "base64",
        ),
    ],
)
def test_bad_input_says_what_was_wrong(data: Any, expected: str) -> None:
    with pytest.raises(StateError, match="input 'messages'\\[0\\]") as caught:
        from_langchain_message(data, "input 'messages'[0]")
    assert expected in str(caught.value)
