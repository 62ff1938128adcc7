// The page: pick a thread, chat with the graph (streamed), inspect the thread,
// answer interrupts, and run browser-side tools when a run calls them.

import { Api, ApiError } from "./api.js";
import { runBrowserTool } from "./browser_tools.js";
import { el, messageItem, normalize, windowOf } from "./messages.js";
import { inspect, renderInspector } from "./inspector.js";
import { renderTrace } from "./trace.js";

const api = new Api();
const $ = (id) => document.getElementById(id);
const page = {
  assistantId: "",
  threadId: "",
  running: false,
  runId: "",
  stopping: false,
  failed: false, // the thread's last turn failed: it is retried before anything else
  interrupt: null, // what a paused thread waits for
  remote: false, // the pause is the server's for browser tool calls (its kind), not a question
  answered: new Set(), // browser tool calls this page answered
  decisions: [], // the person's answers to a tool-approval pause, one per call
};

function setStatus(text, kind = "") {
  $("status").textContent = text;
  $("status").dataset.kind = kind;
}

function setRunning(running) {
  page.running = running;
  $("messages").setAttribute("aria-busy", running ? "true" : "false"); // read out once complete
  updateControls();
}

/** A paused thread takes an answer and a failed one a retry, not a new message (the server refuses one). */
function updateControls() {
  const paused = page.interrupt !== null || page.failed;
  for (const id of ["new-thread", "interrupt-submit", "retry"]) $(id).disabled = page.running;
  for (const button of document.querySelectorAll(".discard")) button.disabled = page.running;
  $("failed").hidden = !page.failed;
  $("send").disabled = page.running || paused;
  $("stop").hidden = !page.running;
  $("message-input").disabled = paused;
  $("message-input").placeholder = paused
    ? `${page.failed ? "Retry the turn" : "Answer the question"} above first`
    : "Message (Enter sends, Shift+Enter for a new line)";
}

/** Report a failure; a 401/403 opens the API key form. */
function fail(error) {
  if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
    $("auth").hidden = false;
    $("api-key").focus();
    setStatus(api.apiKey ? "The API key was refused." : "This server needs an API key.", "error");
    api.apiKey = ""; // a refused key is not sent again
  } else {
    setStatus(String(error.message ?? error), "error");
  }
}

async function loadAssistants() {
  const assistants = await api.assistants();
  const select = $("assistant");
  select.replaceChildren(
    ...assistants.map((a) => el("option", { value: a.assistant_id }, a.name || a.graph_id || a.assistant_id)),
  );
  page.assistantId = select.value;
}

async function loadThreads() {
  const threads = await api.threads();
  if (!threads.length) {
    const hint = "No threads for this user yet. Threads saved with another user_id show only to " +
      "that user: serve with --api-key KEY=USER and use that key here.";
    $("thread-list").replaceChildren(el("li", { class: "hint", "data-testid": "no-threads" }, hint));
    return;
  }
  $("thread-list").replaceChildren(
    ...threads.map((thread) => {
      const asked = windowOf(thread.values).filter((m) => m.role === "user").at(-1);
      const button = el(
        "button",
        { type: "button", "data-testid": "thread", "data-thread-id": thread.thread_id, title: thread.thread_id },
        el("span", { class: "thread-id" }, thread.thread_id.slice(0, 8)),
        el("span", { class: `badge ${thread.status}` }, thread.status),
        el("span", { class: "preview" }, asked?.text || "(no message yet)"),
      );
      markCurrent(button, page.threadId);
      button.addEventListener("click", () => page.running || selectThread(thread.thread_id).catch(fail));
      return el("li", {}, button);
    }),
  );
}

function markCurrent(button, threadId) {
  if (button.dataset.threadId === threadId) button.setAttribute("aria-current", "true");
  else button.removeAttribute("aria-current");
}

async function selectThread(threadId) {
  page.threadId = threadId;
  history.replaceState(null, "", threadId ? `#${threadId}` : "#");
  $("thread-title").textContent = threadId ? `Thread ${threadId}` : "New conversation";
  for (const button of $("thread-list").querySelectorAll("button")) markCurrent(button, threadId);
  await refreshThread();
}

/** Show the thread as stored: the chat (full log), the inspector, a pending interrupt. */
async function refreshThread() {
  page.interrupt = null;
  page.remote = false;
  page.failed = false;
  if (!page.threadId) {
    $("messages").replaceChildren();
    renderInspector(null);
    renderTrace(null, "Choose a thread to see its last run.");
    showInterrupt();
    return;
  }
  // The log and window endpoints are tenxgraph's additions: without them, show the state's window.
  const [thread, state, log, windowInfo] = await Promise.all([
    api.thread(page.threadId),
    api.state(page.threadId),
    api.log(page.threadId).catch(() => null),
    api.window(page.threadId).catch(() => null),
  ]);
  const inspected = inspect(state, log, windowInfo);
  $("messages").replaceChildren(...(inspected.log ?? inspected.window).map(messageItem));
  renderInspector(inspected);
  page.interrupt = state.interrupts?.[0]?.value ?? null;
  page.remote = state.interrupts?.[0]?.kind === "remote_tool_calls";
  page.failed = thread.status === "error";
  showInterrupt();
  scrollToEnd();
  showLastTrace(page.threadId).catch(() => renderTrace(null, "This server keeps no traces (tenxgraph serve --traces N)."));
}

/** The waterfall of the thread's latest run, once its own span ended (just after its last event). */
async function showLastTrace(threadId) {
  const [latest] = await api.runs(threadId);
  if (!latest) return renderTrace(null, "No run yet.");
  for (let tries = 0; tries < 20; tries += 1) {
    const trace = await api.trace(threadId, latest.run_id);
    if (page.threadId !== threadId) return;
    renderTrace(trace);
    if (trace.spans[0].end !== null) return;
    await new Promise((done) => setTimeout(done, 250));
  }
}

function scrollToEnd() {
  $("messages").lastElementChild?.scrollIntoView({ block: "end" });
}

/** The remote (browser) tool calls the pause waits for; [] for a question (whatever its value). */
function remoteCalls(value) {
  return page.remote && value !== null ? value.calls.map((entry) => entry.call) : [];
}

/** The tool calls a HumanApproval pause asks about (its value's type); [] for any other pause. */
function approvalCalls(value) {
  return !page.remote && value?.type === "tool_approval" && Array.isArray(value.calls) ? value.calls : [];
}

function showInterrupt() {
  const value = page.interrupt;
  const remote = remoteCalls(value);
  const approval = approvalCalls(value);
  updateControls();
  $("interrupt").hidden = value === null;
  $("interrupt").dataset.kind = remote.length ? "remote" : approval.length ? "approval" : "question";
  $("interrupt-answer-row").hidden = remote.length > 0 || approval.length > 0;
  $("interrupt-submit").hidden = approval.length > 0;
  $("approval").hidden = approval.length === 0;
  page.decisions = approval.map(() => null);
  $("approval").replaceChildren(...approval.map((call, index) => approvalItem(value, call, index)));
  if (value === null) return;
  $("interrupt-question").textContent = remote.length
    ? `Waiting for browser tools: ${remote.map((call) => call.name).join(", ")}`
    : approval.length ? approvalQuestion(value)
    : typeof value === "string" ? value : value?.question ?? JSON.stringify(value);
  $("interrupt-submit").textContent = remote.length ? "Run them" : "Answer";
  $("interrupt-answer").value = "";
  if (!remote.length && !approval.length) $("interrupt-answer").focus();
}

function approvalQuestion(value) {
  const asked = value.description ?? `Approve ${value.calls.length === 1 ? "this tool call" : "these tool calls"}?`;
  return value.error ? `${asked} (${value.error})` : asked;
}

const DECISION_LABELS = { approve: "Approve", edit: "Run with these arguments", reject: "Reject" };

/** One call to approve: its arguments (editable when edits are allowed), a reason for a rejection, a button per decision. */
function approvalItem(value, call, index) {
  const allowed = value.allowed ?? ["approve", "edit", "reject"];
  const args = el("textarea", { "data-testid": "approval-args", rows: "3", "aria-label": `Arguments of ${call.name}` });
  args.value = JSON.stringify(call.args ?? {}, null, 2);
  args.readOnly = !allowed.includes("edit");
  const reason = el("input", { "data-testid": "approval-reason", placeholder: "Why not (the model reads it)", "aria-label": `Why ${call.name} is rejected` });
  reason.hidden = !allowed.includes("reject");
  const item = el("li", { "data-testid": "approval-call", "data-call-id": call.id }, el("code", {}, call.name), args, reason);
  for (const kind of allowed) {
    const button = el("button", { type: "button", class: kind === "approve" ? "" : "secondary", "data-testid": `approval-${kind}` }, DECISION_LABELS[kind] ?? kind);
    button.addEventListener("click", () => decide(item, index, kind, args, reason).catch(fail));
    item.append(button);
  }
  return item;
}

/** Record the decision for one call; once every call has one, resume the thread with them. */
async function decide(item, index, kind, args, reason) {
  if (page.running) return;
  const decision = { type: kind, call_id: item.dataset.callId };
  if (kind === "edit") {
    try {
      decision.args = JSON.parse(args.value);
    } catch (error) {
      setStatus(`The arguments are not JSON: ${error.message}`, "error");
      return;
    }
  } else if (kind === "reject" && reason.value.trim()) {
    decision.message = reason.value.trim();
  }
  page.decisions[index] = decision;
  item.dataset.decision = kind;
  if (page.decisions.some((d) => d === null)) return;
  $("interrupt").hidden = true;
  await run({ command: { resume: { decisions: page.decisions } } });
}

/** Start a run on the thread and follow it. */
function run(body) {
  const request = { assistant_id: page.assistantId, stream_mode: ["messages-tuple"], ...body };
  return follow(() => api.stream(page.threadId, request));
}

/** Follow a run's stream: show text as it arrives and the stored thread after it; then answer browser tools it waits for. */
async function follow(openStream) {
  setRunning(true);
  setStatus("Running…");
  const streaming = el("li", { class: "message assistant streaming", "data-testid": "streaming" });
  const stream = { runId: "", failed: false };
  page.stopping = false;
  let outcome = ""; // said once the page shows the stored thread
  try {
    for await (const event of openStream()) await onEvent(event, stream, streaming);
    if (!stream.failed) outcome = page.stopping ? "Stopped." : "Done.";
  } catch (error) {
    fail(error);
  } finally {
    streaming.remove();
    try {
      await Promise.all([refreshThread(), loadThreads()]);
      if (outcome) setStatus(outcome);
    } catch (error) {
      fail(error);
    }
    setRunning(false);
  }
  const calls = remoteCalls(page.interrupt).filter((call) => !page.answered.has(call.id));
  if (calls.length) await answerPending(calls);
}

async function onEvent(event, stream, streaming) {
  const kind = event.event.split("|")[0];
  if (kind === "metadata") stream.runId = page.runId = event.data.run_id;
  else if (kind === "messages") {
    const message = normalize(Array.isArray(event.data) ? event.data[0] : event.data);
    if (message.delta) {
      if (!streaming.isConnected) $("messages").append(streaming);
      streaming.textContent += message.text;
    } else {
      streaming.remove();
      streaming.textContent = "";
      $("messages").append(messageItem(message));
    }
    scrollToEnd();
  } else if (kind === "remote_tool_call") {
    // The server waits for the result inside this stream: post it, and the run goes on.
    if (page.answered.has(event.data.id)) return;
    page.answered.add(event.data.id);
    const result = await runBrowserTool(event.data);
    setStatus(`Ran browser tool ${event.data.name}.`);
    try {
      await api.toolResults(page.threadId, stream.runId, [result]);
    } catch (error) {
      page.answered.delete(event.data.id); // answered once the stream ends
      fail(error);
    }
  } else if (kind === "error") {
    stream.failed = true;
    setStatus(`Run failed: ${event.data?.message ?? JSON.stringify(event.data)}`, "error");
  }
}

/**
 * The thread waits for browser tools: run them here, then post the results to
 * the run that waits for them and follow it, or, when no run waits any more
 * (it ended at the pause), resume the thread with them.
 */
async function answerPending(calls) {
  for (const call of calls) page.answered.add(call.id);
  const results = await Promise.all(calls.map(runBrowserTool));
  setStatus(`Ran browser tool ${calls.map((call) => call.name).join(", ")}.`);
  const waiting = await waitingRun();
  if (waiting) {
    await api.toolResults(page.threadId, waiting.run_id, results);
    await follow(() => api.join(page.threadId, waiting.run_id));
  } else {
    await run({ command: { resume: { tool_results: results } } });
  }
}

/** The thread's run still going on (waiting for browser tools), if any. */
async function waitingRun() {
  const runs = await api.runs(page.threadId).catch(() => []);
  return runs.find((r) => r.status === "running" || r.status === "pending");
}

/** Drop the paused or failed turn instead of answering or retrying it. */
async function discard() {
  if (page.running) return;
  const waiting = await waitingRun();
  if (waiting) await api.cancel(page.threadId, waiting.run_id, "rollback", true); // a run waits for browser tools
  else await api.rollback(page.threadId);
  await Promise.all([refreshThread(), loadThreads()]);
  setStatus("Discarded the last turn.");
}

async function send(text) {
  if (!page.threadId) {
    const thread = await api.createThread();
    await selectThread(thread.thread_id);
  }
  $("messages").append(messageItem({ id: "", role: "user", text, calls: [], results: [] }));
  scrollToEnd();
  await run({ input: { messages: [{ role: "user", content: text }] } });
}

function wire() {
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("message-input").value.trim();
    if (!text || page.running) return;
    $("message-input").value = "";
    send(text).catch(fail);
  });
  $("message-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("failed").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!page.running) run({}).catch(fail); // neither input nor command: the thread retries its turn
  });
  for (const button of document.querySelectorAll(".discard")) {
    button.addEventListener("click", () => discard().catch(fail));
  }
  $("interrupt").addEventListener("submit", (event) => {
    event.preventDefault();
    if (page.running) return;
    const remote = remoteCalls(page.interrupt);
    $("interrupt").hidden = true;
    const next = remote.length ? answerPending(remote) : run({ command: { resume: $("interrupt-answer").value } });
    next.catch(fail);
  });
  $("new-thread").addEventListener("click", () => selectThread("").catch(fail));
  $("stop").addEventListener("click", () => {
    if (!page.running || !page.runId) return;
    page.stopping = true;
    setStatus("Stopping…");
    api.cancel(page.threadId, page.runId).catch(fail); // the stream then ends
  });
  window.addEventListener("hashchange", () => {
    const threadId = decodeURIComponent(location.hash.slice(1)); // a link to another thread
    if (threadId !== page.threadId && !page.running) selectThread(threadId).catch(fail);
  });
  $("assistant").addEventListener("change", (event) => (page.assistantId = event.target.value));
  $("auth").addEventListener("submit", (event) => {
    event.preventDefault();
    api.apiKey = $("api-key").value.trim();
    $("api-key").value = "";
    start();
  });
}

async function start() {
  try {
    await loadAssistants();
    $("auth").hidden = true;
    await loadThreads();
    await selectThread(decodeURIComponent(location.hash.slice(1)));
    setStatus("Ready.");
  } catch (error) {
    fail(error);
  }
}

wire();
start();
