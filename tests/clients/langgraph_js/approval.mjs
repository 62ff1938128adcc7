// Tool approval through the official JS SDK (@langchain/langgraph-sdk), against a live
// `tenxgraph serve` of tests/server/approval_graph.py.
//
//   node approval.mjs SERVER_URL GRAPH_ID
//
// Pauses at HumanApproval's interrupt, reads it from the stream's __interrupt__ and the thread's
// interrupts, then resumes with an edit, and a second thread with a rejection. Prints one JSON
// line with what the SDK saw, for tests/clients/langgraph/test_approval_js_sdk.py to judge.
import { Client } from "@langchain/langgraph-sdk";

const [url, graph] = process.argv.slice(2);
const client = new Client({ apiUrl: url, callerOptions: { maxRetries: 0 } });

function textOf(message) {
  if (typeof message.content === "string") return message.content;
  return message.content.map((block) => block.text ?? "").join("");
}

/** A thread paused before deleting `path`: its id, the streamed interrupt, the thread's view. */
async function paused(path) {
  const thread = await client.threads.create();
  const input = { messages: [{ role: "user", content: `delete ${path}` }] };
  const values = [];
  const parts = client.runs.stream(thread.thread_id, graph, { input, streamMode: "updates" });
  for await (const part of parts) {
    if (part.event === "updates" && part.data.__interrupt__) {
      values.push(part.data.__interrupt__[0].value);
    }
  }
  const state = await client.threads.getState(thread.thread_id);
  const { status } = await client.threads.get(thread.thread_id);
  return { id: thread.thread_id, streamed: values, kept: state.interrupts[0]?.value, status };
}

async function resumed(id, decision) {
  const values = await client.runs.wait(id, graph, {
    command: { resume: { decisions: [decision] } },
  });
  const { status } = await client.threads.get(id);
  const messages = values.messages.map((m) => ({
    type: m.type,
    text: textOf(m),
    status: m.status ?? null,
    args: m.tool_calls?.[0]?.args ?? null,
  }));
  return { status, messages };
}

const edited = await paused("important.txt");
const call = edited.streamed[0].calls[0];
const edit = { type: "edit", call_id: call.id, args: { path: "scratch.txt" } };
const rejected = await paused("thesis.tex");
const reject = { type: "reject", message: "I still need it" };
console.log(
  JSON.stringify({
    edited: { ...edited, after: await resumed(edited.id, edit) },
    rejected: { ...rejected, after: await resumed(rejected.id, reject) },
  }),
);
