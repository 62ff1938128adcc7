// The SSE parser and the typed parts, without a server.
import assert from "node:assert/strict";
import { test } from "node:test";

import { SSEParser, parsePart, readEvents, remoteCalls } from "../dist/index.js";

test("events split across chunks at any byte are parsed whole", () => {
  const text = 'id: 1\nevent: values\ndata: {"a": 1}\n\n: ping\n\nid: 2\r\nevent: end\r\ndata: null\r\n\r\n';
  for (let cut = 0; cut <= text.length; cut++) {
    const parser = new SSEParser();
    const events = [...parser.feed(text.slice(0, cut)), ...parser.feed(text.slice(cut))];
    assert.deepEqual(events, [
      { event: "values", data: '{"a": 1}', id: "1" },
      { event: "end", data: "null", id: "2" },
    ]);
  }
});

test("multi-line data joins with newlines; an unfinished event is never dispatched", () => {
  const parser = new SSEParser();
  assert.deepEqual(parser.feed("data: a\ndata: b\n\nid: 7\nevent: values\ndata: {"), [
    { event: "message", data: "a\nb", id: undefined },
  ]);
});

test("readEvents reads a fetch body stream", async () => {
  const chunks = ["id: 1\nevent: metadata\nda", 'ta: {"run_id": "r1"}\n\n'];
  const body = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
      controller.close();
    },
  });
  const events = [];
  for await (const event of readEvents(body)) events.push(event);
  assert.deepEqual(events, [{ event: "metadata", data: '{"run_id": "r1"}', id: "1" }]);
});

test("parts are typed by event name and carry messages and remote calls", () => {
  const call = { type: "remote_tool_call", id: "c1", name: "clock", args: { tz: "UTC" }, tool_type: "remote" };
  const message = { role: "assistant", content: [{ type: "text", text: "hi" }, call], delta: false };
  const tuple = parsePart("messages", JSON.stringify([message, { langgraph_node: "agent" }]), "3");
  assert.equal(tuple.kind, "message");
  assert.equal(tuple.metadata.langgraph_node, "agent");
  assert.deepEqual(remoteCalls(tuple), [call]);
  const values = parsePart("values", JSON.stringify({ context: [message], step: 2 }), "4");
  assert.equal(values.kind, "values");
  assert.equal(values.messages[0].content[0].text, "hi");
  assert.deepEqual(remoteCalls(values), []); // old calls in the state are never answered again
  assert.equal(parsePart("error", '{"error": "NodeError", "message": "boom"}', "5").message, "boom");
  assert.equal(parsePart("somethingnew", "[1]", "6").kind, "other");
});
