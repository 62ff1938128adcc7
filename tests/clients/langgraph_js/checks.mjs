// One check per method of the official JS SDK (@langchain/langgraph-sdk), run against a live
// `tenxgraph serve` of tests/clients/langgraph/graph.py.
//
//   node checks.mjs SERVER_URL SCHEMA_JSON
//
// SCHEMA_JSON is the JSON Schema that ts-json-schema-generator made from the SDK's own .d.ts
// types (src/sdk_types.ts names them): every answer is validated against the type its method
// declares. Prints one JSON line per check: {"name", "ok", "reason"}. A check never stops the
// others: each makes its own threads, and its failure is reported with the reason.
import { readFileSync } from "node:fs";
import { Client } from "@langchain/langgraph-sdk";
import { Ajv } from "ajv";

const [url, schemaPath] = process.argv.slice(2);
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addSchema(JSON.parse(readFileSync(schemaPath, "utf8")), "sdk");
const client = new Client({ apiUrl: url, callerOptions: { maxRetries: 0 } });
const GRAPH = "agent";
const checks = [];
const RUN = crypto.randomUUID(); // marks this run's threads: the server may hold others
process.on("unhandledRejection", (error) => console.error("unhandled:", error?.message ?? error));

function check(name, run) {
  checks.push([name, run]);
}

/**
 * Check that `value` is of the SDK type `type` (its JSON Schema from the .d.ts). A mismatch is
 * noted and the check goes on, so one missing field does not hide what else the check finds;
 * the check fails at its end with every mismatch noted.
 */
let mismatches = [];
function shape(type, value, where = type) {
  const validate = ajv.getSchema(`sdk#/definitions/${type}`);
  if (!validate(value)) {
    const errors = ajv.errorsText(validate.errors, { dataVar: where });
    mismatches.push(`not a ${type}: ${errors}; got ${JSON.stringify(value).slice(0, 200)}`);
  }
  return value;
}

function expect(condition, what) {
  if (!condition) throw new Error(what);
}

/** Input as OpenAI-style dicts, which LangGraph takes beside LangChain's own (see "input.human"). */
function user(text) {
  return { messages: [{ role: "user", content: text }] };
}

/** A new thread (its shape is the business of the threads.create checks alone). */
async function thread(metadata) {
  return client.threads.create(metadata ? { metadata } : undefined);
}

/** A thread with one finished turn ("hi"): its state has a human and an ai message. */
async function talked(text = "hi") {
  const t = await thread();
  await client.runs.wait(t.thread_id, GRAPH, { input: user(text) });
  return t;
}

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

function textOf(message) {
  if (typeof message.content === "string") return message.content;
  return message.content.map((block) => block.text ?? "").join("");
}

async function waitStatus(threadId, runId, statuses) {
  for (let i = 0; i < 200; i++) {
    const run = await client.runs.get(threadId, runId);
    if (statuses.includes(run.status)) return run;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`run ${runId} never reached ${statuses}`);
}

// ---- assistants ----
check("assistants.get", async () => {
  const a = shape("Assistant", await client.assistants.get(GRAPH));
  expect(a.graph_id === GRAPH, `graph_id ${a.graph_id}`);
});
check("assistants.getGraph", async () => {
  shape("AssistantGraph", await client.assistants.getGraph(GRAPH));
});
check("assistants.getSchemas", async () => {
  shape("GraphSchema", await client.assistants.getSchemas(GRAPH));
});
check("assistants.getSubgraphs", async () => {
  const subgraphs = await client.assistants.getSubgraphs(GRAPH);
  expect(subgraphs && typeof subgraphs === "object", `not an object: ${subgraphs}`);
  for (const [name, schema] of Object.entries(subgraphs)) shape("GraphSchema", schema, name);
});
check("assistants.search", async () => {
  const found = await client.assistants.search({ graphId: GRAPH });
  expect(Array.isArray(found) && found.length >= 1, `found ${JSON.stringify(found)}`);
  found.forEach((a) => shape("Assistant", a));
});
check("assistants.search(includePagination)", async () => {
  const page = await client.assistants.search({ graphId: GRAPH, includePagination: true });
  expect(Array.isArray(page.assistants), `no assistants: ${JSON.stringify(page)}`);
  page.assistants.forEach((a) => shape("Assistant", a));
});
check("assistants.count", async () => {
  const n = await client.assistants.count({ graphId: GRAPH });
  expect(typeof n === "number" && n >= 1, `count ${n}`);
});
check("assistants.create", async () => {
  const a = shape("Assistant", await client.assistants.create({ graphId: GRAPH, name: "made" }));
  expect(a.graph_id === GRAPH, `graph_id ${a.graph_id}`);
});
check("assistants.update", async () => {
  // the served graph's own assistant never changes: a made one
  const a = await client.assistants.create({ graphId: GRAPH, name: "changed" });
  shape("Assistant", await client.assistants.update(a.assistant_id, { metadata: { k: "v" } }));
});
check("assistants.delete", async () => {
  const a = await client.assistants.create({ graphId: GRAPH, name: "gone" });
  await client.assistants.delete(a.assistant_id);
});
check("assistants.getVersions", async () => {
  const versions = await client.assistants.getVersions(GRAPH);
  versions.forEach((v) => shape("AssistantVersion", v));
});
check("assistants.setLatest", async () => {
  shape("Assistant", await client.assistants.setLatest(GRAPH, 1));
});

// ---- threads ----
check("threads.create", async () => {
  const t = shape("Thread", await thread({ owner: "js" }));
  expect(t.metadata?.owner === "js", `metadata ${JSON.stringify(t.metadata)}`);
});
check("threads.create(threadId+ifExists)", async () => {
  const threadId = crypto.randomUUID();
  shape("Thread", await client.threads.create({ threadId }));
  const again = await client.threads.create({ threadId, ifExists: "do_nothing" });
  expect(shape("Thread", again).thread_id === threadId, `thread_id ${again.thread_id}`);
});
check("threads.create(graphId)", async () => {
  const t = shape("Thread", await client.threads.create({ graphId: GRAPH }));
  expect(t.metadata?.graph_id === GRAPH, `metadata ${JSON.stringify(t.metadata)}`);
});
check("threads.create(supersteps)", async () => {
  const t = await client.threads.create({
    supersteps: [{ updates: [{ values: user("seeded"), asNode: "agent" }] }],
  });
  const state = await client.threads.getState(shape("Thread", t).thread_id);
  expect(state.values.messages?.length === 1, `values ${JSON.stringify(state.values)}`);
});
check("threads.get", async () => {
  const t = await talked();
  const got = shape("Thread", await client.threads.get(t.thread_id));
  expect(got.thread_id === t.thread_id, `thread_id ${got.thread_id}`);
  expect(got.values?.messages?.length === 2, `values ${JSON.stringify(got.values)}`);
});
check("threads.update", async () => {
  const t = await thread();
  const updated = await client.threads.update(t.thread_id, { metadata: { tag: "x" } });
  expect(shape("Thread", updated).metadata?.tag === "x", `metadata ${JSON.stringify(updated)}`);
});
check("threads.delete", async () => {
  const t = await thread();
  await client.threads.delete(t.thread_id);
  const left = await client.threads.search({ ids: [t.thread_id] });
  expect(left.length === 0, `still listed: ${JSON.stringify(left)}`);
});
check("threads.search", async () => {
  const t = await thread({ marker: `search-${RUN}` });
  const found = await client.threads.search({ metadata: { marker: `search-${RUN}` }, limit: 10 });
  found.forEach((x) => shape("Thread", x));
  expect(found.map((x) => x.thread_id).includes(t.thread_id), `not found: ${JSON.stringify(found)}`);
});
check("threads.search(metadata.graph_id after a run)", async () => {
  const t = await talked();
  const found = await client.threads.search({ metadata: { graph_id: GRAPH }, limit: 1000 });
  expect(found.some((x) => x.thread_id === t.thread_id), "the run did not set graph_id in metadata");
});
check("threads.count", async () => {
  await thread({ marker: `count-${RUN}` });
  const n = await client.threads.count({ metadata: { marker: `count-${RUN}` } });
  expect(n === 1, `count ${n}`);
});
check("threads.copy", async () => {
  const t = await talked();
  const copy = shape("Thread", await client.threads.copy(t.thread_id));
  expect(copy.thread_id !== t.thread_id, "same id");
  const state = await client.threads.getState(copy.thread_id);
  expect(state.values.messages?.length === 2, `copied values ${JSON.stringify(state.values)}`);
});
check("threads.getState", async () => {
  const t = await talked();
  const state = shape("ThreadState", await client.threads.getState(t.thread_id));
  expect(state.values.messages?.length === 2, `values ${JSON.stringify(state.values)}`);
});
check("threads.getState(checkpoint)", async () => {
  const t = await talked();
  const [latest, older] = await client.threads.getHistory(t.thread_id, { limit: 2 });
  const id = older?.checkpoint?.checkpoint_id ?? latest.checkpoint.checkpoint_id;
  const state = shape("ThreadState", await client.threads.getState(t.thread_id, id));
  expect(state.checkpoint.checkpoint_id === id, `checkpoint ${JSON.stringify(state.checkpoint)}`);
});
check("threads.updateState", async () => {
  const t = await talked();
  const config = await client.threads.updateState(t.thread_id, {
    values: user("added"),
    asNode: "agent",
  });
  // The JS type says {configurable}; the Python SDK's ThreadUpdateStateResponse (and LangGraph's
  // server) answer {checkpoint}: either names the new checkpoint.
  const id = config?.configurable?.checkpoint_id ?? config?.checkpoint?.checkpoint_id;
  expect(id, `no checkpoint: ${JSON.stringify(config)}`);
  const state = await client.threads.getState(t.thread_id);
  expect(state.values.messages?.length === 3, `values ${JSON.stringify(state.values)}`);
});
check("threads.patchState", async () => {
  const t = await talked();
  await client.threads.patchState(t.thread_id, { note: "patched" });
  const state = await client.threads.getState(t.thread_id);
  expect(state.metadata?.note === "patched", `metadata ${JSON.stringify(state.metadata)}`);
});
check("threads.getHistory", async () => {
  const t = await talked();
  const history = await client.threads.getHistory(t.thread_id);
  expect(history.length >= 2, `history ${history.length}`);
  history.forEach((s) => shape("ThreadState", s));
});
check("threads.getHistory(before+limit)", async () => {
  const t = await talked();
  const [latest] = await client.threads.getHistory(t.thread_id, { limit: 1 });
  const before = await client.threads.getHistory(t.thread_id, {
    limit: 1,
    before: { configurable: { checkpoint_id: latest.checkpoint.checkpoint_id } },
  });
  expect(before.length === 1, `got ${before.length}`);
  shape("ThreadState", before[0]);
  const [id, latestId] = [before[0].checkpoint.checkpoint_id, latest.checkpoint.checkpoint_id];
  expect(id !== latestId, `the state before checkpoint ${latestId} is ${id}`);
});
check("threads.joinStream", async () => {
  // The join follows the runs that start after it connected; the SDK gives no sign of that,
  // so the run starts after a head start, longer on each try (a loaded machine is slow to connect).
  const seen = [];
  for (const headStart of [200, 1000, 3000]) {
    const t = await thread();
    const controller = new AbortController();
    const joined = (async () => {
      for await (const part of client.threads.joinStream(t.thread_id, { signal: controller.signal })) {
        seen.push(part);
      }
    })().catch((error) => error);
    await new Promise((resolve) => setTimeout(resolve, headStart));
    await client.runs.wait(t.thread_id, GRAPH, { input: user("hi") });
    setTimeout(() => controller.abort(), 500);
    const ended = await joined;
    if (ended && ended.name !== "AbortError") throw ended;
    if (seen.length > 0) break;
  }
  expect(seen.length > 0, "no event on the thread's stream");
});
check("threads.prune", async () => {
  const t = await talked();
  const result = await client.threads.prune([t.thread_id], { strategy: "delete" });
  expect(result.pruned_count === 1, `result ${JSON.stringify(result)}`);
});
check("threads.stream(commands protocol)", async () => {
  const t = await thread();
  const stream = client.threads.stream(t.thread_id, { assistantId: GRAPH });
  try {
    await stream.submitRun({ input: user("hi") });
    const output = await stream.output;
    expect(output?.messages?.length === 2, `output ${JSON.stringify(output)}`);
  } finally {
    stream.close();
  }
});
check("threads.stream(interrupt then input.respond)", async () => {
  const t = await thread();
  const stream = client.threads.stream(t.thread_id, { assistantId: GRAPH });
  try {
    await stream.run.start({ input: user("ask") });
    const paused = await stream.output;
    expect(stream.interrupted && stream.interrupts.length === 1, `paused at ${JSON.stringify(paused)}`);
    const [asked] = stream.interrupts;
    expect(asked.payload?.question === "your name?", `interrupt ${JSON.stringify(asked)}`);
    await stream.input.respond({ namespace: [], interrupt_id: asked.interruptId, response: "Ada" });
    for (let i = 0; i < 200; i++) {
      const state = await stream.state.get({ namespace: [] });
      const last = state.values.messages?.at(-1);
      if (last?.type === "ai" && textOf(last) === "you answered: Ada") return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error("the resumed run never answered");
  } finally {
    stream.close();
  }
});

// ---- runs ----
check("runs.wait(input as LangChain messages)", async () => {
  const t = await thread();
  const values = await client.runs.wait(t.thread_id, GRAPH, {
    input: { messages: [{ type: "human", content: "hi", id: crypto.randomUUID() }] },
  });
  expect(values.messages?.length === 2, `values ${JSON.stringify(values)}`);
});
check("runs.create", async () => {
  const t = await thread();
  const run = shape("Run", await client.runs.create(t.thread_id, GRAPH, { input: user("hi") }));
  expect(run.thread_id === t.thread_id, `thread_id ${run.thread_id}`);
  await client.runs.join(t.thread_id, run.run_id);
});
check("runs.create(stateless)", async () => {
  const run = shape("Run", await client.runs.create(null, GRAPH, { input: user("hi") }));
  expect(run.run_id, "no run_id");
});
check("runs.createBatch", async () => {
  const runs = await client.runs.createBatch([
    { assistantId: GRAPH, input: user("one") },
    { assistantId: GRAPH, input: user("two") },
  ]);
  expect(runs.length === 2, `runs ${runs.length}`);
  runs.forEach((r) => shape("Run", r));
});
const MODES = ["values", "updates", "messages", "messages-tuple", "custom", "events", "debug",
  "tasks", "checkpoints", "tools", "lifecycle"];
for (const mode of MODES) {
  check(`runs.stream(streamMode=${mode})`, async () => {
    const t = await thread();
    const parts = await collect(client.runs.stream(t.thread_id, GRAPH, {
      input: user(mode === "tools" ? "tool" : "hi"), // a run that calls no tool has no tools event
      streamMode: mode,
    }));
    const events = parts.map((p) => p.event);
    expect(events[0] === "metadata", `first event ${events[0]}`);
    const errors = parts.filter((p) => p.event === "error");
    expect(errors.length === 0, `error event: ${JSON.stringify(errors[0]?.data)}`);
    if (mode !== "custom") {
      const own = parts.filter((p) => p.event === mode || p.event.startsWith(`${mode.split("-")[0]}`));
      expect(own.length > 0, `no ${mode} event in ${[...new Set(events)]}`);
    }
  });
}
check("runs.stream(values: messages are LangChain Messages)", async () => {
  const t = await thread();
  const parts = await collect(client.runs.stream(t.thread_id, GRAPH, {
    input: user("tool"),
    streamMode: "values",
  }));
  const last = parts.filter((p) => p.event === "values").at(-1).data;
  last.messages.forEach((m, i) => shape("Message", m, `messages[${i}]`));
  const types = last.messages.map((m) => m.type).join(",");
  expect(types === "human,ai,tool,ai", `types ${types}`);
  expect(last.messages[1].tool_calls?.[0]?.name === "add", "no add tool call on the ai message");
  expect(last.messages[2].tool_call_id === last.messages[1].tool_calls[0].id, "tool_call_id");
});
check("runs.stream(messages-tuple: chunks are Messages)", async () => {
  const t = await thread();
  const parts = await collect(client.runs.stream(t.thread_id, GRAPH, {
    input: user("hi"),
    streamMode: "messages-tuple",
  }));
  const tuples = parts.filter((p) => p.event === "messages");
  expect(tuples.length > 1, `${tuples.length} messages events`);
  for (const { data } of tuples) {
    expect(Array.isArray(data) && data.length === 2, `not a [message, metadata] pair: ${data}`);
    shape("Message", data[0], "chunk");
  }
  const text = tuples.map(({ data }) => textOf(data[0])).join("");
  expect(text.includes("said: hi w0"), `streamed text ${JSON.stringify(text)}`);
});
check("runs.stream(multiple modes)", async () => {
  const t = await thread();
  const parts = await collect(client.runs.stream(t.thread_id, GRAPH, {
    input: user("hi"),
    streamMode: ["values", "updates"],
  }));
  const kinds = new Set(parts.map((p) => p.event));
  expect(kinds.has("values") && kinds.has("updates"), `events ${[...kinds]}`);
});
check("runs.stream(stateless)", async () => {
  const parts = await collect(client.runs.stream(null, GRAPH, { input: user("hi") }));
  expect(parts.some((p) => p.event === "values"), `events ${parts.map((p) => p.event)}`);
});
check("runs.stream(interrupt then command.resume)", async () => {
  const t = await thread();
  const parts = await collect(client.runs.stream(t.thread_id, GRAPH, {
    input: user("ask"),
    streamMode: "updates",
  }));
  const paused = parts.filter((p) => p.event === "updates" && p.data.__interrupt__);
  expect(paused.length === 1, `no interrupt in ${JSON.stringify(parts.map((p) => p.data))}`);
  shape("Interrupt", paused[0].data.__interrupt__[0]);
  const interrupted = await client.threads.get(t.thread_id);
  expect(interrupted.status === "interrupted", `status ${interrupted.status}`);
  const values = await client.runs.wait(t.thread_id, GRAPH, { command: { resume: "Ada" } });
  const last = values.messages.at(-1);
  expect(textOf(last) === "you answered: Ada", `last ${JSON.stringify(last)}`);
});
check("runs.stream(thread.interrupts)", async () => {
  const t = await thread();
  await client.runs.wait(t.thread_id, GRAPH, { input: user("ask") });
  const got = await client.threads.get(t.thread_id);
  const all = Object.values(got.interrupts ?? {}).flat();
  expect(all.length === 1, `interrupts ${JSON.stringify(got.interrupts)}`);
});
for (const [label, input] of [["null", null], ["{}", {}]]) {
  // Agent Chat UI's Approve button resumes with an empty input beside the command.
  check(`runs.wait(command.resume with input ${label})`, async () => {
    const t = await thread();
    await client.runs.wait(t.thread_id, GRAPH, { input: user("ask") });
    const values = await client.runs.wait(t.thread_id, GRAPH, { input, command: { resume: "Ada" } });
    expect(textOf(values.messages.at(-1)) === "you answered: Ada", "not resumed");
  });
}
check("runs.stream(command.goto)", async () => {
  const t = await talked();
  await client.runs.wait(t.thread_id, GRAPH, { command: { goto: "agent" } });
});
check("runs.stream(checkpoint: regenerate)", async () => {
  const t = await talked("first");
  const history = await client.threads.getHistory(t.thread_id);
  const before = history.find((s) => s.values.messages?.length === 1); // the question, unanswered
  expect(before, "no checkpoint holds the question alone");
  const parts = await collect(client.runs.stream(t.thread_id, GRAPH, {
    input: null,
    checkpoint: { checkpoint_id: before.checkpoint.checkpoint_id, checkpoint_ns: "" },
    streamMode: "values",
  }));
  const errors = parts.filter((p) => p.event === "error");
  expect(errors.length === 0, `error: ${JSON.stringify(errors[0]?.data)}`);
  const after = await client.threads.getHistory(t.thread_id);
  expect(after.length > history.length, "no new checkpoint");
});
check("runs.wait", async () => {
  const t = await thread();
  const values = await client.runs.wait(t.thread_id, GRAPH, { input: user("hi") });
  expect(values.messages?.length === 2, `values ${JSON.stringify(values)}`);
});
check("runs.wait(stateless)", async () => {
  const values = await client.runs.wait(null, GRAPH, { input: user("hi") });
  expect(values.messages?.length === 2, `values ${JSON.stringify(values)}`);
});
check("runs.list", async () => {
  const t = await talked();
  const runs = await client.runs.list(t.thread_id);
  expect(runs.length === 1, `runs ${runs.length}`);
  runs.forEach((r) => shape("Run", r));
});
check("runs.get", async () => {
  const t = await thread();
  const run = await client.runs.create(t.thread_id, GRAPH, { input: user("hi") });
  await client.runs.join(t.thread_id, run.run_id);
  const got = shape("Run", await client.runs.get(t.thread_id, run.run_id));
  expect(got.status === "success", `status ${got.status}`);
});
check("runs.cancel", async () => {
  const t = await thread();
  const run = await client.runs.create(t.thread_id, GRAPH, { input: user("sleep 30") });
  await waitStatus(t.thread_id, run.run_id, ["running"]);
  await client.runs.cancel(t.thread_id, run.run_id, true);
  const got = shape("Run", await client.runs.get(t.thread_id, run.run_id));
  expect(got.status === "interrupted", `status ${got.status}`);
});
check("runs.cancel(action=rollback)", async () => {
  const t = await thread();
  const run = await client.runs.create(t.thread_id, GRAPH, { input: user("sleep 30") });
  await waitStatus(t.thread_id, run.run_id, ["running"]);
  await client.runs.cancel(t.thread_id, run.run_id, true, "rollback");
  const left = await client.runs.list(t.thread_id);
  expect(left.length === 0, `the rolled-back run is still listed: ${JSON.stringify(left)}`);
});
check("runs.cancelMany", async () => {
  const t = await thread();
  const run = await client.runs.create(t.thread_id, GRAPH, { input: user("sleep 30") });
  await waitStatus(t.thread_id, run.run_id, ["running"]);
  await client.runs.cancelMany({ threadId: t.thread_id, runIds: [run.run_id] });
  await waitStatus(t.thread_id, run.run_id, ["interrupted"]);
});
check("runs.join", async () => {
  const t = await thread();
  const run = await client.runs.create(t.thread_id, GRAPH, { input: user("hi") });
  const values = await client.runs.join(t.thread_id, run.run_id);
  expect(values.messages?.length === 2, `values ${JSON.stringify(values)}`);
});
check("runs.joinStream", async () => {
  const t = await thread();
  const run = await client.runs.create(t.thread_id, GRAPH, { input: user("sleep 0.5") });
  const parts = await collect(client.runs.joinStream(t.thread_id, run.run_id));
  expect(parts.some((p) => p.event === "values"), `events ${parts.map((p) => p.event)}`);
});
check("runs.delete", async () => {
  const t = await talked();
  const [run] = await client.runs.list(t.thread_id);
  await client.runs.delete(t.thread_id, run.run_id);
  const left = await client.runs.list(t.thread_id);
  expect(left.length === 0, `left ${left.length}`);
});

// ---- store ----
const NS = ["js", crypto.randomUUID()];
check("store.putItem", async () => {
  await client.store.putItem(NS, "put", { a: 1 });
});
check("store.getItem", async () => {
  await client.store.putItem(NS, "got", { a: 2 });
  const item = shape("Item", await client.store.getItem(NS, "got"));
  expect(item.value.a === 2, `value ${JSON.stringify(item.value)}`);
});
check("store.getItem(missing is null)", async () => {
  const item = await client.store.getItem(NS, "never-put");
  expect(item === null, `got ${JSON.stringify(item)}`);
});
check("store.deleteItem", async () => {
  await client.store.putItem(NS, "deleted", { a: 3 });
  await client.store.deleteItem(NS, "deleted");
  const found = await client.store.searchItems(NS, { filter: { a: 3 } });
  expect(found.items.length === 0, `still there: ${JSON.stringify(found)}`);
});
check("store.searchItems", async () => {
  await client.store.putItem(NS, "searched", { a: 4 });
  const found = shape("SearchItemsResponse", await client.store.searchItems(NS, { filter: { a: 4 } }));
  expect(found.items.length === 1, `found ${JSON.stringify(found)}`);
});
check("store.listNamespaces", async () => {
  await client.store.putItem(NS, "listed", { a: 5 });
  const listed = shape("ListNamespaceResponse", await client.store.listNamespaces({ prefix: ["js"] }));
  expect(listed.namespaces.some((n) => n.join("/") === NS.join("/")), JSON.stringify(listed));
});

// ---- crons ----
check("crons.create", async () => {
  const cron = await client.crons.create(GRAPH, { schedule: "0 0 1 1 *", input: user("hi") });
  expect(cron.cron_id, JSON.stringify(cron));
});
check("crons.createForThread", async () => {
  const t = await thread();
  const cron = await client.crons.createForThread(t.thread_id, GRAPH, { schedule: "0 0 1 1 *" });
  expect(cron.thread_id === t.thread_id, JSON.stringify(cron));
});
check("crons.update", async () => {
  const cron = await client.crons.create(GRAPH, { schedule: "0 0 1 1 *" });
  shape("Cron", await client.crons.update(cron.cron_id, { schedule: "0 0 2 1 *" }));
});
check("crons.delete", async () => {
  const cron = await client.crons.create(GRAPH, { schedule: "0 0 1 1 *" });
  await client.crons.delete(cron.cron_id);
});
check("crons.search", async () => {
  const found = await client.crons.search({ assistantId: GRAPH });
  found.forEach((c) => shape("Cron", c));
});
check("crons.count", async () => {
  const n = await client.crons.count({ assistantId: GRAPH });
  expect(typeof n === "number", `count ${n}`);
});

const only = process.env.CHECKS_ONLY?.split(",");
for (const [name, run] of checks) {
  if (only && !only.includes(name)) continue;
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error("no answer within 60 s")), 60_000);
  });
  mismatches = [];
  try {
    await Promise.race([run(), timeout]);
    const ok = mismatches.length === 0;
    console.log(JSON.stringify({ name, ok, reason: mismatches.join(" | ").slice(0, 800) }));
  } catch (error) {
    const thrown = `${error?.name ?? "Error"}: ${error?.message ?? error}`;
    const reason = [...mismatches, thrown].join(" | ").slice(0, 800);
    console.log(JSON.stringify({ name, ok: false, reason }));
  } finally {
    clearTimeout(timer);
  }
}
process.exit(0);
