// The client against a live tenxgraph server (started by tests/clients/test_typescript_client.py).
//
// Environment: TENXGRAPH_URL (a graph answering "said: <text> w0 ... w39" word by word),
// TENXGRAPH_PROXY_URL (the same server behind a proxy that cuts run streams mid-way),
// TENXGRAPH_SLOW_URL (a model that sleeps <text> seconds), TENXGRAPH_CLOCK_URL (a graph
// calling the remote tool "clock"), TENXGRAPH_API_KEY (the key all of them require).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  APIConflictError,
  APIConnectionError,
  APINotFoundError,
  APIUnauthorizedError,
  Client,
  messagesIn,
} from "../dist/index.js";

const env = process.env;
const live = { skip: env.TENXGRAPH_URL ? false : "TENXGRAPH_URL is not set (run through pytest)" };
const key = env.TENXGRAPH_API_KEY;
const AGENT = "agent";
const ANSWER = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
const MODES = ["values", "updates", "messages-tuple"];

const user = (text) => ({ messages: [{ role: "user", content: [{ type: "text", text }] }] });
const textOf = (message) => message.content.map((b) => (b.type === "text" ? b.text : "")).join("");

async function collect(iterator) {
  const parts = [];
  for await (const part of iterator) parts.push(part);
  return parts;
}

function checkNumbered(parts) {
  assert.equal(parts[0].kind, "metadata");
  assert.ok(parts[0].runId);
  assert.equal(parts.at(-1).kind, "end");
  const ids = parts.map((part) => Number(part.id));
  assert.deepEqual(ids, Array.from({ length: parts.length }, (_, i) => i + 1)); // none lost or twice
}

function checkWhole(parts, said) {
  checkNumbered(parts);
  const chunks = parts.filter((p) => p.kind === "message" && p.message.delta).map((p) => textOf(p.message));
  assert.equal(chunks.join(""), `said: ${said} ${ANSWER}`);
}

test("threads: create, get, search, state with typed messages, delete, 404 with the detail", live, async () => {
  const client = new Client(env.TENXGRAPH_URL, { apiKey: key });
  const thread = await client.threads.create({ metadata: { owner: "ts" } });
  assert.equal((await client.threads.get(thread.thread_id)).metadata.owner, "ts");
  const found = await client.threads.search({ metadata: { owner: "ts" } });
  assert.deepEqual(found.map((t) => t.thread_id), [thread.thread_id]);
  const values = await client.runs.wait(thread.thread_id, AGENT, { input: user("hi") });
  assert.deepEqual(messagesIn(values).map((m) => m.role), ["user", "assistant"]);
  const state = await client.threads.getState(thread.thread_id);
  assert.equal(textOf(state.messages[1]), `said: hi ${ANSWER}`);
  await client.threads.updateState(thread.thread_id, { messages: [{ role: "assistant", content: [{ type: "text", text: "a note" }] }] });
  const history = await client.threads.getHistory(thread.thread_id, 3);
  assert.equal(textOf(messagesIn(history[0].values).at(-1)), "a note");
  await client.threads.delete(thread.thread_id);
  await assert.rejects(client.threads.get(thread.thread_id), (error) => {
    assert.ok(error instanceof APINotFoundError);
    assert.equal(error.status, 404);
    assert.match(error.detail, new RegExp(thread.thread_id));
    return true;
  });
});

test("traceHeaders: every request carries the caller's traceparent, which the run continues", live, async () => {
  // the pytest side reads the server's spans back: the run's trace is TENXGRAPH_TRACE_ID
  const traceparent = `00-${env.TENXGRAPH_TRACE_ID}-00f067aa0ba902b7-01`;
  const client = new Client(env.TENXGRAPH_URL, { apiKey: key, traceHeaders: () => ({ traceparent }) });
  const values = await client.runs.wait("ts-traced", AGENT, { input: user("traced"), ifNotExists: "create" });
  assert.deepEqual(messagesIn(values).map((m) => m.role), ["user", "assistant"]);
});

test("stream: typed parts, numbered once each, message chunks, end last", live, async () => {
  const client = new Client(env.TENXGRAPH_URL, { apiKey: key });
  const thread = await client.threads.create();
  const parts = await collect(client.runs.stream(thread.thread_id, AGENT, { input: user("hey"), streamMode: MODES }));
  checkWhole(parts, "hey");
  assert.ok(parts.some((p) => p.kind === "updates" && "agent" in p.updates));
  const final = parts.filter((p) => p.kind === "values").at(-1);
  assert.deepEqual(final.messages.map(textOf), ["hey", `said: hey ${ANSWER}`]);
});

test("a stream cut mid-run resumes with Last-Event-ID: nothing lost, nothing twice", live, async () => {
  const client = new Client(env.TENXGRAPH_PROXY_URL, { apiKey: key });
  const thread = await client.threads.create();
  const parts = await collect(client.runs.stream(thread.thread_id, AGENT, { input: user("cut"), streamMode: MODES }));
  checkWhole(parts, "cut");
});

test("background run, join, cancel, and a busy thread is a 409", live, async () => {
  const client = new Client(env.TENXGRAPH_SLOW_URL, { apiKey: key });
  const quick = await client.runs.create("ts-bg", AGENT, { input: user("0"), ifNotExists: "create" });
  const joined = await client.runs.join("ts-bg", quick.run_id);
  assert.equal(textOf(messagesIn(joined).at(-1)), "done sleeping");
  assert.deepEqual((await client.runs.list("ts-bg")).map((r) => r.run_id), [quick.run_id]);
  const run = await client.runs.create("ts-bg", AGENT, { input: user("30") });
  for (let i = 0; (await client.runs.get("ts-bg", run.run_id)).status !== "running"; i++) {
    assert.ok(i < 1000, "the run never started");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await assert.rejects(client.runs.wait("ts-bg", AGENT, { input: user("0"), multitaskStrategy: "reject" }), APIConflictError);
  await client.runs.cancel("ts-bg", run.run_id, { wait: true });
  assert.equal((await client.runs.get("ts-bg", run.run_id)).status, "interrupted");
});

test("remote tools: the handler runs, its result is posted and the run goes on, errors reach the model", live, async () => {
  const client = new Client(env.TENXGRAPH_CLOCK_URL, { apiKey: key });
  const thread = await client.threads.create();
  const seen = [];
  const parts = await collect(
    client.runs.stream(thread.thread_id, AGENT, {
      input: user("time?"),
      tools: { clock: async (args) => { seen.push(args); return `12:00 ${args.tz}`; } },
    }),
  );
  assert.deepEqual(seen, [{ tz: "UTC" }]);
  const calls = parts.filter((p) => p.kind === "remote_tool_call");
  assert.deepEqual(calls.map((p) => p.call.name), ["clock"]);
  assert.ok(calls[0].id !== undefined); // the server's own event: the run waited in the stream
  checkNumbered(parts);
  assert.equal(parts.filter((p) => p.kind === "metadata").length, 1); // the same run went on
  let state = await client.threads.getState(thread.thread_id);
  assert.equal(textOf(state.messages.at(-1)), "clock ok: 12:00 UTC");
  await collect(
    client.runs.stream(thread.thread_id, AGENT, {
      input: user("again"),
      tools: { clock: () => { throw new RangeError("no clock here"); } },
    }),
  );
  state = await client.threads.getState(thread.thread_id);
  assert.equal(textOf(state.messages.at(-1)), "clock error: RangeError: no clock here");
});

test("remote tools without handlers: the reader sees the call and answers it by hand", live, async () => {
  const client = new Client(env.TENXGRAPH_CLOCK_URL, { apiKey: key });
  const thread = await client.threads.create();
  let runId = "";
  const names = [];
  for await (const part of client.runs.stream(thread.thread_id, AGENT, { input: user("hand") })) {
    if (part.kind === "metadata") runId = part.runId;
    if (part.kind === "remote_tool_call") {
      names.push(part.call.name);
      const answer = await client.runs.toolResults(thread.thread_id, runId, [
        { call_id: part.call.id, output: "by hand", is_error: false },
      ]);
      assert.deepEqual(answer.accepted, [part.call.id]);
    }
  }
  assert.deepEqual(names, ["clock"]);
  const state = await client.threads.getState(thread.thread_id);
  assert.equal(textOf(state.messages.at(-1)), "clock ok: by hand");
});

test("errors: no key is 401, an unknown assistant 404, an unreachable server a connection error", live, async () => {
  await assert.rejects(new Client(env.TENXGRAPH_URL).threads.create(), APIUnauthorizedError);
  const client = new Client(env.TENXGRAPH_URL, { apiKey: key });
  await assert.rejects(client.runs.wait("ts-x", "nobody", { input: user("x"), ifNotExists: "create" }), /assistant 'nobody'/);
  await assert.rejects(new Client("http://127.0.0.1:9").threads.create(), APIConnectionError);
});
