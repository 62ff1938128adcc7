"""Fuzz the server over real HTTP from its own OpenAPI schema: no request may get a 5xx.

Hypothesis generates requests for every route of ``/openapi.json``: path
ids (a thread that exists, one that does not, any text), query values
from their schemas, and JSON bodies that follow the schema, half of them
with one value replaced by any JSON (NaN and Infinity, lone surrogates,
NUL, message-like shapes under any key); strings anywhere may be hostile.
Each request goes to a real server on 127.0.0.1 with SQLite and a memory
store. Every answer must be below 500, and an answer that says it is JSON
must be strict JSON. Bounded by ``TENXGRAPH_FUZZ_EXAMPLES`` examples
(default 2000, about a minute); slow suite only. A 5xx found here becomes
a plain regression test (tests/server/test_hostile_input.py).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tests.server.conftest import Serve

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("TENXGRAPH_FUZZ_EXAMPLES", "2000"))
THREAD = "fuzz-thread"

_ODD_TEXT = ["", "\x00", "\U0001f642", "a" * 300, "../..", "%2F", "null"]
_KEYS = ["messages", "role", "content", "type", "text", "tool_calls", "args", "id", "name"]
_KEYS += ["context", "state", "resume", "update", "configurable", "recursion_limit", "values"]
_KNOWN = {"assistant_id": "agent", "thread_id": THREAD, "name": "add", "stream_mode": "values"}
"""Fields whose value must name something that exists for the request to go further."""
_ROLES = ["user", "assistant", "system", "tool", "human", "ai", "AIMessage", "bogus"]

texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(_ODD_TEXT + _ROLES),
    st.sampled_from(["\ud800", "x\udfff", "\udc00\ud800"]),  # lone surrogates
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0]),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(_KEYS), texts), inner, max_size=4),
        st.tuples(st.sampled_from(_ROLES) | inner, inner).map(list),  # a ("user", ...) pair
    ),
    max_leaves=12,
)


class Schema:
    """Strategies for an OpenAPI document's schemas, each field sometimes replaced by any JSON."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})

    def strategy(self, schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
        """Values the schema describes (their strings and numbers hostile: see ``texts``)."""
        return self._exact(schema, depth)

    def _exact(self, schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
        if "$ref" in schema:
            return self._exact(self.schemas[schema["$ref"].rsplit("/", 1)[-1]], depth)
        for key in ("anyOf", "oneOf"):
            if key in schema:  # null (the default of most optional fields) as one choice in four
                given = [self._exact(s, depth) for s in schema[key] if s != {"type": "null"}]
                return st.one_of(*given * 3, st.none())
        if "allOf" in schema:
            return self._exact(schema["allOf"][0], depth)
        if "const" in schema:
            return st.just(schema["const"])
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        kind = schema.get("type")
        if depth > 3 or kind is None:  # typed Any: often a field that must stay null
            return st.none() | json_values
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            items = self.strategy(schema.get("items", {}), depth + 1)
            return st.lists(items, max_size=3)
        return _scalar(kind, schema)

    def _object(self, schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
        properties = schema.get("properties", {})
        if not properties:
            return st.dictionaries(st.sampled_from(_KEYS) | texts, json_values, max_size=4)
        required = set(schema.get("required", ()))
        fields = {name: self.strategy(s, depth + 1) for name, s in properties.items()}
        for name, field in properties.items():  # the default half the time: a field that
            if "default" in field:  # must stay null (checkpoint, webhook) then stays null
                fields[name] = st.just(field["default"]) | fields[name]
        for name, known in _KNOWN.items():  # a right id now and then gets past the 404
            if name in fields:
                fields[name] = st.just(known) | fields[name]

        @st.composite
        def objects(draw: st.DrawFn) -> dict[str, Any]:
            return {
                name: draw(strategy)
                for name, strategy in fields.items()
                if name in required or draw(st.booleans())
            }

        return objects()


def _scalar(kind: str, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if kind == "string":
        return texts
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    low, high = schema.get("minimum"), schema.get("maximum")
    if kind == "integer":
        return st.integers(min_value=low, max_value=high) | st.integers(-5, 5)
    return st.floats(min_value=low, max_value=high, allow_nan=False) | st.floats()


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """Every (method, path, operation) of the schema."""
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]


def requests(document: dict[str, Any]) -> st.SearchStrategy[tuple[str, str, Any, bool]]:
    """(method, url path with query, JSON body or None, whether a body is sent)."""
    schema = Schema(document)

    @st.composite
    def one(draw: st.DrawFn) -> tuple[str, str, Any, bool]:
        method, path, operation = draw(st.sampled_from(operations(document)))
        query: list[str] = []
        for parameter in operation.get("parameters", ()):
            if parameter["in"] == "path":
                value = draw(st.sampled_from([THREAD, "nope", "agent", "add"]) | texts)
                path = path.replace("{" + parameter["name"] + "}", _in_url(value))
            elif parameter["in"] == "query" and draw(st.booleans()):
                value = draw(schema.strategy(parameter.get("schema", {})))
                query.append(f"{parameter['name']}={_in_url(value)}")
        content = operation.get("requestBody", {}).get("content", {})
        if "application/json" not in content:
            return method, path + ("?" + "&".join(query) if query else ""), None, False
        body = draw(schema.strategy(content["application/json"]["schema"]))
        if draw(st.booleans()):
            body = _mutated(draw, body)
        if isinstance(body, dict) and "after_seconds" in body:
            body["after_seconds"] = 0  # a delayed run would hold /runs/wait for a day
        return method, path + ("?" + "&".join(query) if query else ""), body, True

    return one()


def _mutated(draw: st.DrawFn, body: Any) -> Any:
    """``body`` with one value in it (or itself) replaced by any JSON: one thing wrong at a time.

    A body wrong in many places stops at its first error; one wrong value in a
    body that is otherwise right reaches the route's own code.
    """
    places: list[tuple[Any, Any]] = []
    stack = [body] if isinstance(body, (dict, list)) else []
    while stack:
        node = stack.pop()
        keys = node.keys() if isinstance(node, dict) else range(len(node))
        for key in keys:
            places.append((node, key))
            if isinstance(node[key], (dict, list)):
                stack.append(node[key])
    if not places:
        return draw(json_values)
    node, key = draw(st.sampled_from(places))
    node[key] = draw(json_values)
    return body


def _in_url(value: Any) -> str:
    """``value`` percent-encoded (a lone surrogate as the bytes UTF-8 would give it)."""
    text = value if isinstance(value, str) else json.dumps(value)
    return quote(text, safe="", errors="surrogatepass")


def _strict(text: str) -> None:
    """Fail unless ``text`` is JSON text: no NaN or Infinity, no lone surrogate in a string."""

    def refuse(word: str) -> Any:
        raise AssertionError(f"{word} in an answer: {text[:300]}")

    value = json.loads(text, parse_constant=refuse)
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # a lone surrogate cannot encode


def test_no_generated_request_gets_a_server_error(serve: Serve) -> None:
    url = serve(memory=True)
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.post("/threads", json={"thread_id": THREAD}).status_code == 200
        document = client.get("/openapi.json").json()

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(requests(document))
        def check(request: tuple[str, str, Any, bool]) -> None:
            method, path, body, has_body = request
            content = json.dumps(body).encode() if has_body else None  # NaN, \ud800 as sent
            note(f"{method} {path} {content!r}")
            headers = {"content-type": "application/json"} if has_body else {}
            with client.stream(method, path, content=content, headers=headers) as answer:
                kind = answer.headers.get("content-type", "")
                if kind.startswith("text/event-stream"):  # a thread's stream never ends: its
                    assert answer.status_code < 500, (method, path, content)  # status suffices
                    return
                answer.read()
            assert answer.status_code < 500, (method, path, content, answer.text[:500])
            if kind.startswith("application/json"):
                _strict(answer.text)

        check()
