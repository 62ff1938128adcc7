// tenxgraph's own routes, the ones the web page uses, against a live server (started by
// tests/clients/test_typescript_client.py): the whole log and the window, the graph's tools and
// direct calls, rollback, the assistant search and media.
//
// Environment: TENXGRAPH_TOOLS_URL (tests/clients/conftest.py `tooled`: tools "add" and "divide",
// a window of three messages at most, a model answering "said: <text>" that fails on "break", a media
// store), TENXGRAPH_SLOW_URL (a model that sleeps <text> seconds), TENXGRAPH_API_KEY.
import assert from "node:assert/strict";
import { test } from "node:test";

import { APIConflictError, APINotFoundError, APIStatusError, ClientError, Client, RunFailedError, mediaKey } from "../dist/index.js";

const env = process.env;
const live = { skip: env.TENXGRAPH_TOOLS_URL ? false : "TENXGRAPH_TOOLS_URL is not set (run through pytest)" };
const key = env.TENXGRAPH_API_KEY;
const AGENT = "agent";

const user = (text) => ({ messages: [{ role: "user", content: [{ type: "text", text }] }] });
const textOf = (message) => message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
const tools = () => new Client(env.TENXGRAPH_TOOLS_URL, { apiKey: key });

test("the whole log pages past the window the model sees", live, async () => {
  const client = tools();
  const { thread_id: threadId } = await client.threads.create();
  for (const text of ["one", "two", "three"]) await client.runs.wait(threadId, AGENT, { input: user(text) });
  const pages = [await client.threads.getLog(threadId, { limit: 4 })];
  while (pages.at(-1).next_offset !== null) {
    pages.push(await client.threads.getLog(threadId, { offset: pages.at(-1).next_offset, limit: 4 }));
  }
  assert.deepEqual(pages.map((p) => [p.offset, p.seqs, p.log_length]), [[0, [0, 1, 2, 3], 6], [4, [4, 5], 6]]);
  const said = ["one", "said: one", "two", "said: two", "three", "said: three"];
  const logged = pages.flatMap((p) => p.messages);
  assert.deepEqual(logged.map(textOf), said);
  assert.ok(logged.every((m) => !("seq" in m))); // positions are in `seqs`, messages are Messages
  const window = await client.threads.getWindow(threadId);
  assert.deepEqual(window.window, [[4, 6]]);
  assert.equal(window.log_length, 6);
  assert.deepEqual(window.messages.map(textOf), said.slice(4));
  assert.deepEqual(window.messages, (await client.threads.getState(threadId)).messages);
  assert.equal(window.context_summary, null);
});

test("direct tool calls: listed, recorded with a note, or only run; bad arguments refused", live, async () => {
  const client = tools();
  const specs = await client.assistants.getTools(AGENT);
  assert.deepEqual(specs.map((t) => t.name), ["add", "divide"]);
  assert.equal(specs[0].description, "Add two integers.");
  assert.deepEqual(Object.keys(specs[0].parameters.properties).sort(), ["a", "b"]);
  const { thread_id: threadId } = await client.threads.create();
  const result = await client.threads.callTool(threadId, "add", { a: 2, b: 3 }, { note: "the user asked for a sum" });
  assert.equal(result.type, "tool_result");
  assert.equal(result.output, 5);
  assert.equal(result.is_error, false);
  const log = await client.threads.getLog(threadId);
  assert.deepEqual(log.messages.map((m) => m.role), ["user", "assistant", "tool"]);
  assert.equal(textOf(log.messages[0]), "the user asked for a sum");
  assert.deepEqual(log.messages[2].content, [result]);
  assert.equal((await client.threads.callTool(threadId, "add", { a: 1, b: 1 }, { record: false })).output, 2);
  const failed = await client.threads.callTool(threadId, "divide", { a: 1, b: 0 }, { record: false });
  assert.equal(failed.is_error, true);
  assert.match(String(failed.output), /ZeroDivisionError/);
  await assert.rejects(client.threads.callTool(threadId, "add", { a: "x" }), (error) => error instanceof APIStatusError && error.status === 422);
  await assert.rejects(client.threads.callTool(threadId, "nope"), APINotFoundError);
  assert.equal((await client.threads.getLog(threadId)).log_length, 3); // only the recorded call
});

test("rollback discards an unfinished turn only", live, async () => {
  const client = tools();
  const { thread_id: threadId } = await client.threads.create();
  await client.runs.wait(threadId, AGENT, { input: user("hello") });
  assert.equal(await client.threads.rollback(threadId), false); // a completed turn stays
  await assert.rejects(client.runs.wait(threadId, AGENT, { input: user("break") }), RunFailedError);
  assert.equal(textOf((await client.threads.getLog(threadId)).messages.at(-1)), "break");
  assert.equal(await client.threads.rollback(threadId), true);
  assert.deepEqual((await client.threads.getLog(threadId)).messages.map(textOf), ["hello", "said: hello"]);
  assert.equal(await client.threads.rollback(threadId), false);
  await assert.rejects(client.threads.rollback("no-such-thread"), APINotFoundError);
});

test("rollback while a run is on the thread is a 409; cancel with action rollback does both", live, async () => {
  const client = new Client(env.TENXGRAPH_SLOW_URL, { apiKey: key });
  const { thread_id: threadId } = await client.threads.create();
  const run = await client.runs.create(threadId, AGENT, { input: user("30") });
  for (let i = 0; (await client.runs.get(threadId, run.run_id)).status !== "running"; i++) {
    assert.ok(i < 3000, "the run never started");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await assert.rejects(client.threads.rollback(threadId), (error) => error instanceof APIConflictError && /cancel it first/.test(error.detail));
  await client.runs.cancel(threadId, run.run_id, { wait: true, action: "rollback" });
  assert.equal((await client.threads.getLog(threadId)).log_length, 0);
});

test("the assistant search finds the served graph, which /info names", live, async () => {
  const client = tools();
  assert.equal((await client.info()).graph_id, AGENT);
  assert.deepEqual((await client.assistants.search()).map((a) => [a.assistant_id, a.graph_id]), [[AGENT, AGENT]]);
  assert.deepEqual(await client.assistants.search({ graphId: "another" }), []);
  await assert.rejects(client.assistants.getTools("another"), APINotFoundError);
});

test("media: put bytes, get them back by ref, url or key", live, async () => {
  const client = tools();
  const data = new TextEncoder().encode("plain notes\n".repeat(1000));
  const ref = await client.media.put(data, { mimeType: "text/plain", filename: "notes.txt" });
  assert.equal(ref.kind, "url");
  assert.ok(ref.url.startsWith("graph://media/"));
  assert.deepEqual([ref.mime_type, ref.size_bytes, ref.filename], ["text/plain", data.length, "notes.txt"]);
  for (const locator of [ref, ref.url, ref.url.slice("graph://media/".length)]) {
    assert.deepEqual(await client.media.get(locator), data);
  }
  await assert.rejects(client.media.get("0".repeat(64)), APINotFoundError);
  await assert.rejects(client.media.get("https://example.com/a.png"), ClientError);
});

test("mediaKey: a ref, its url or its key; anything else throws before a request", () => {
  const key = "a".repeat(64);
  assert.equal(mediaKey(key), key);
  assert.equal(mediaKey(`graph://media/${key}`), key);
  assert.equal(mediaKey({ kind: "url", url: `graph://media/${key}` }), key);
  assert.throws(() => mediaKey({ kind: "url", url: key }), ClientError); // a ref's url must be graph://media/
  assert.throws(() => mediaKey("graph://media/../x"), /not a media reference/);
  assert.throws(() => mediaKey({ kind: "data", data_base64: "eA==" }), ClientError);
});
