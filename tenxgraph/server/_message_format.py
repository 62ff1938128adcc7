"""Which message format an answer is in: LangChain's (the default) or tenxgraph's.

The LangGraph routes (threads, their state and history, runs: their output
and every stream mode) answer with messages in LangChain's format, which the
official LangGraph SDKs, ``useStream`` and Agent Chat UI read. A request
with the header ``X-Message-Format: tenxgraph`` gets tenxgraph's own
``Message`` JSON instead (typed blocks, media refs, citations, timestamps),
as tenxgraph's clients and the web page ask for. tenxgraph's own routes
(``/threads/{id}/messages``, ``/window``...) always answer in tenxgraph's.

A run's stream is kept in tenxgraph's format (what the runtime emits, on
every backend) and translated as each reader reads it, so readers of both
formats can follow the same run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends
from pydantic_core import from_json, to_json
from starlette.requests import Request

from tenxgraph.core.state.langchain_format import langchain_from_json, to_langchain_message
from tenxgraph.core.state.message import Message
from tenxgraph.errors import StateError

__all__ = [
    "FORMAT_HEADER",
    "Encode",
    "MessageEncoder",
    "StreamTranslator",
    "langchain_json",
    "message_encoder",
    "output_json",
    "tenxgraph_json",
    "translate_event",
]

FORMAT_HEADER = "x-message-format"
"""The request header that picks the format of the messages in an answer."""

MessageEncoder = Callable[[Message], dict[str, Any]]
"""A message as the JSON of an answer."""


def tenxgraph_json(message: Message) -> dict[str, Any]:
    """The message as tenxgraph's own ``Message`` JSON."""
    return message.model_dump(mode="json")


def langchain_json(message: Message) -> dict[str, Any]:
    """The message as a LangChain message dict (``to_langchain_message``)."""
    return to_langchain_message(message)


_FORMATS: dict[str, MessageEncoder] = {"langchain": langchain_json, "tenxgraph": tenxgraph_json}


def message_encoder(request: Request) -> MessageEncoder:
    """The encoder the request asks for with ``X-Message-Format`` (default: LangChain's)."""
    value = request.headers.get(FORMAT_HEADER, "langchain").strip().lower()
    encoder = _FORMATS.get(value)
    if encoder is None:
        raise StateError(f"{FORMAT_HEADER} must be 'langchain' or 'tenxgraph', got {value[:40]!r}")
    return encoder


async def _awaited_encoder(request: Request) -> MessageEncoder:
    # FastAPI runs a sync dependency in its thread pool: a thread hand-off on every
    # request that names its format (every run, every thread read).
    return message_encoder(request)


Encode = Annotated[MessageEncoder, Depends(_awaited_encoder)]
"""A route's parameter: how the messages of its answer are written."""


def output_json(output: Any, encode: MessageEncoder) -> Any:
    """A run's output (its final values) with its messages in ``encode``'s format."""
    if encode is tenxgraph_json or not isinstance(output, dict):
        return output
    return _values(output)


class StreamTranslator:
    """One reader's stream: each event's data in the reader's format.

    In LangChain's format a message streamed as chunks is not sent again
    whole on ``messages-tuple`` (clients such as ``useStream`` add every
    message of an id to the chunks before it, as LangGraph's server sends
    it once): its last piece is a chunk that adds what the chunks did not
    carry (tool calls, usage), with ``chunk_position: "last"``. The whole
    message is in the ``values``, ``updates`` and ``messages/complete`` events.
    """

    def __init__(self, encode: MessageEncoder) -> None:
        self.encode = encode
        self._streamed: set[str] = set()
        self._chunk: _ChunkForm | None = None
        self._whole: tuple[Any, dict[str, Any]] | None = None
        """The last whole message's JSON and its translation: ``updates`` and ``values``
        carry it again after ``messages-tuple`` did."""

    def data(self, event: str, data: str) -> str:
        """``data`` of the logged ``event``, for this reader."""
        if event != "messages" or self.encode is tenxgraph_json:
            return translate_event(event, data, self.encode, self._message)
        chunk = self._chunk
        if chunk is not None:
            text = chunk.text_in(data)
            if text is not None:
                return chunk.write(text)
        parsed = from_json(data)
        message, *rest = parsed
        if message.get("delta") is True and chunk is not None:
            text = chunk.text_of(parsed)
            if text is not None:
                return chunk.write(text)
        out = langchain_from_json(message)
        if message.get("delta"):
            self._streamed.add(out["id"])
            self._chunk = _ChunkForm.of(parsed, out, data)
            return to_json([out, *rest], inf_nan_mode="null").decode()
        self._whole = (message, out)
        if out["id"] in self._streamed and out["type"] == "ai":
            self._streamed.discard(out["id"])
            out = _last_chunk(out)
        return to_json([out, *rest], inf_nan_mode="null").decode()

    def _message(self, message: Any) -> dict[str, Any]:
        """``langchain_from_json(message)``, the last whole message's kept (the same JSON)."""
        whole = self._whole
        if whole is not None and whole[0] == message:
            return whole[1]
        return langchain_from_json(message)


class _ChunkForm:
    """A streamed chunk's event and its translation's JSON after the text: the next ones'.

    The chunks of one message differ in their text and time alone, and a
    chunk's time is not in LangChain's format (a whole message's is). So a
    chunk equal to the last one but for those two is written as the last
    one's JSON with its own text, not parsed into LangChain's dict and
    written whole again: the same bytes, without the translation's work.
    Only a chunk of one plain text block whose text the translation wrote
    as its ``content`` is a form: nothing else in it can depend on the text.

    Most such chunks are recognised in their logged text, not parsed: it is
    the form's text but for the text's JSON string and the time's number
    (``text_in``), where the form's own text had them (a probe parsed once
    per form shows which values those two places hold).
    """

    __slots__ = ("head", "middle", "parsed", "rest", "tail")

    def __init__(self, parsed: list[Any], tail: str, data: str) -> None:
        self.parsed, self.tail = parsed, tail
        self.head, self.middle, self.rest = _text_places(parsed, data)

    @classmethod
    def of(cls, parsed: list[Any], out: dict[str, Any], data: str) -> _ChunkForm | None:
        """The form of a chunk's event ``parsed`` (logged as ``data``) translated as ``out``."""
        message = parsed[0]
        text = _chunk_text(message)
        if text is None or message.get("metadata") or out.get("content") != text:
            return None
        rest = {key: value for key, value in out.items() if key != "content"}
        if not rest or next(iter(out)) != "content":
            return None
        tail = to_json([rest, *parsed[1:]], inf_nan_mode="null").decode()[2:]
        return cls(parsed, tail, data)

    def text_in(self, data: str) -> str | None:
        """The text of ``data``, a logged chunk's event, if it is this one's but for its text.

        Compared as text, with no parse: None when that is not plain.
        """
        head = self.head
        if head is None or not data.startswith(head):
            return None
        found = _string_at(data, len(head))
        if found is None or not found[0] or not data.startswith(self.middle, found[1]):
            return None
        number = _NUMBER.match(data, found[1] + len(self.middle))
        if number is None or len(data) - number.end() != len(self.rest):
            return None
        return found[0] if data.endswith(self.rest) else None

    def text_of(self, parsed: Any) -> str | None:
        """The text of ``parsed``, a chunk's event, if it is this one but for its text and time."""
        message = parsed[0]
        text = _chunk_text(message)
        if text is None:
            return None
        block, last = message["content"][0], self.parsed[0]
        when = message["timestamp"]
        block["text"], message["timestamp"] = last["content"][0]["text"], last["timestamp"]
        same = parsed == self.parsed
        block["text"], message["timestamp"] = text, when
        return text if same else None

    def write(self, text: str) -> str:
        """The JSON of this chunk's translation with ``text`` as its content."""
        return f'[{{"content":{to_json(text).decode()},{self.tail}'


_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
"""The standard library's JSON string reader (its C one): the text of a string token."""
_TEXT_KEY = re.compile(r'"text"\s*:\s*')
_TIME_KEY = re.compile(r'"timestamp"\s*:\s*')
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _string_at(data: str, start: int) -> tuple[str, int] | None:
    """The JSON string starting at ``start`` of ``data``: its text and where it ends, or None.

    One with a unicode escape is None: the parse decides what it holds.
    """
    if data[start : start + 1] != '"':
        return None
    end = data.find('"', start + 1)
    if end < 0:
        return None
    if "\\" not in data[start:end]:
        return data[start + 1 : end], end + 1
    try:
        text, after = _scanstring(data, start + 1)
    except ValueError:
        return None
    return None if "\\u" in data[start:after] else (text, after)


def _text_places(parsed: list[Any], data: str) -> tuple[str | None, str, str]:
    """``data`` (a chunk's logged event, ``parsed``) cut around its text's string and its time.

    The text before the string, between it and the time's number, after the
    number; a head of None when they cannot be found. A probe (another
    string and number put in those places) is parsed once to prove that
    they hold the message's text and time and nothing else.
    """
    key = _TEXT_KEY.search(data)
    found = None if key is None else _string_at(data, key.end())
    time = None if found is None else _TIME_KEY.search(data, found[1])
    number = None if time is None else _NUMBER.match(data, time.end())
    if key is None or found is None or number is None:
        return None, "", ""
    head, middle, rest = data[: key.end()], data[found[1] : number.start()], data[number.end() :]
    message = parsed[0]
    try:
        probe = from_json(f'{head}"\\u0000"{middle}-1{rest}')
        probed, block = probe[0], probe[0]["content"][0]
        if block["text"] != "\x00" or probed["timestamp"] != -1:
            return None, "", ""
        block["text"], probed["timestamp"] = message["content"][0]["text"], message["timestamp"]
    except (ValueError, LookupError, TypeError):  # not where the message's text and time are
        return None, "", ""
    return (head, middle, rest) if probe == parsed else (None, "", "")


def _chunk_text(message: Any) -> str | None:
    """The text of a chunk's JSON of one non-empty text block (and a time), else None."""
    content = message.get("content") if type(message) is dict else None
    if type(content) is not list or len(content) != 1 or "timestamp" not in message:
        return None
    block = content[0]
    text = block.get("text") if type(block) is dict else None
    return text if type(text) is str and text and block.get("type") == "text" else None


def _last_chunk(message: dict[str, Any]) -> dict[str, Any]:
    """A whole AI message as the chunk that completes the chunks streamed before it."""
    calls = message.get("tool_calls", [])
    chunks = [
        {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
        | {"type": "tool_call_chunk"}
        for i, c in enumerate(calls)
    ]
    last = {**message, "type": "AIMessageChunk", "content": "", "tool_call_chunks": chunks}
    last["chunk_position"] = "last"
    return last


def translate_event(
    event: str,
    data: str,
    encode: MessageEncoder,
    message: Callable[[Any], dict[str, Any]] = langchain_from_json,
) -> str:
    """One logged stream event's data (tenxgraph's JSON) with its messages in ``encode``'s.

    Only LangChain's format differs from what the log holds; each message is
    translated from its JSON by ``message`` (``langchain_from_json``: plain
    text ones without being validated again) in ``values`` and ``updates``.
    """
    if encode is tenxgraph_json or event not in _MESSAGE_EVENTS:
        return data
    parsed = from_json(data)
    if event == "values":
        translated: Any = _values(parsed, message)
    elif event == "updates":
        translated = {node: _values(update, message) for node, update in parsed.items()}
    elif event == "messages":
        translated = [langchain_from_json(parsed[0]), *parsed[1:]]
    elif event in _TRANSLATED:
        translated = _TRANSLATED[event](parsed)
    else:
        translated = [langchain_from_json(message) for message in parsed]
    return to_json(translated, inf_nan_mode="null").decode()


def _checkpoint(data: Any) -> Any:
    """A ``checkpoints`` event's data: its ``values``."""
    return {**data, "values": _values(data.get("values"))}


def _task(data: Any) -> Any:
    """A ``tasks`` event's data: a start's ``input``, a result's ``messages`` pair."""
    if "input" in data:
        return {**data, "input": _values(data["input"])}
    if isinstance(data.get("result"), list):
        return {**data, "result": [[k, _values({k: v})[k]] for k, v in data["result"]]}
    return data


def _debug(data: Any) -> Any:
    """A ``debug`` event's data: its payload, a checkpoint's or a task's."""
    payload = data.get("payload")
    translate = _checkpoint if data.get("type") == "checkpoint" else _task
    return {**data, "payload": translate(payload)} if isinstance(payload, dict) else data


def _record(data: Any) -> Any:
    """An ``events`` record's data: a model's message (``chunk``, ``output``), a node's values."""
    inner = data.get("data")
    if not isinstance(inner, dict):
        return data
    out = {}
    for key, value in inner.items():
        if isinstance(value, dict) and "role" in value and "content" in value:
            value = langchain_from_json(value)
        out[key] = _values(value)
    return {**data, "data": out}


_TRANSLATED: dict[str, Callable[[Any], Any]] = {
    "checkpoints": _checkpoint,
    "tasks": _task,
    "debug": _debug,
    "events": _record,
}
"""How the messages in the translated modes' events are found (``_stream_modes``)."""

_MESSAGE_EVENTS = frozenset(
    {"values", "updates", "messages", "messages/partial", "messages/complete", *_TRANSLATED}
)


def _values(values: Any, message: Callable[[Any], dict[str, Any]] = langchain_from_json) -> Any:
    """State values (or a node's update) with the messages under ``messages`` translated."""
    if not isinstance(values, dict) or not isinstance(values.get("messages"), list):
        return values
    return {**values, "messages": [message(m) for m in values["messages"]]}
