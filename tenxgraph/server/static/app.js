// The page: pick a thread, chat with the graph (streamed), inspect the thread,
// answer interrupts, and run browser-side tools when a run calls them.

import { Api, ApiError } from "./api.js";
import { runBrowserTool } from "./browser_tools.js";
import { el, messageItem, normalize, windowOf } from "./messages.js";
import { renderInspector } from "./inspector.js";

const api = new Api();
const $ = (id) => document.getElementById(id);
const page = { assistantId: "", threadId: "", running: false };

function setStatus(text, kind = "") {
  $("status").textContent = text;
  $("status").dataset.kind = kind;
}

function setRunning(running) {
  page.running = running;
  for (const id of ["send", "new-thread", "interrupt-submit"]) $(id).disabled = running;
  document.body.dataset.running = running ? "true" : "false";
}

/** Report a failure; a 401/403 opens the API key form. */
function fail(error) {
  if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
    $("auth").hidden = false;
    $("api-key").focus();
    setStatus(api.apiKey ? "The API key was refused." : "This server needs an API key.", "error");
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
  $("thread-list").replaceChildren(
    ...threads.map((thread) => {
      const button = el(
        "button",
        { type: "button", "data-testid": "thread", "data-thread-id": thread.thread_id },
        el("span", { class: "thread-id" }, thread.thread_id.slice(0, 8)),
        el("span", { class: `badge ${thread.status}` }, thread.status),
      );
      if (thread.thread_id === page.threadId) button.setAttribute("aria-current", "true");
      button.addEventListener("click", () => selectThread(thread.thread_id).catch(fail));
      return el("li", {}, button);
    }),
  );
}

async function selectThread(threadId) {
  page.threadId = threadId;
  history.replaceState(null, "", threadId ? `#${threadId}` : "#");
  $("thread-title").textContent = threadId ? `Thread ${threadId}` : "New conversation";
  for (const button of $("thread-list").querySelectorAll("button")) {
    button.toggleAttribute("aria-current", button.dataset.threadId === threadId);
  }
  await refreshThread();
}

/** Show the thread as stored: the chat (full log), the inspector, a pending interrupt. */
async function refreshThread() {
  if (!page.threadId) {
    $("messages").replaceChildren();
    renderInspector(null, null);
    showInterrupt(null);
    return;
  }
  const [state, log] = await Promise.all([api.state(page.threadId), api.log(page.threadId).catch(() => null)]);
  const messages = log ? log.map((entry) => normalize(entry.message ?? entry)) : windowOf(state.values);
  $("messages").replaceChildren(...messages.map(messageItem));
  renderInspector(state, log);
  showInterrupt(state.interrupts?.[0] ?? null);
}

function showInterrupt(pending) {
  const form = $("interrupt");
  form.hidden = !pending;
  if (!pending) return;
  const value = pending.value;
  $("interrupt-question").textContent =
    typeof value === "string" ? value : value?.question ?? JSON.stringify(value);
  $("interrupt-answer").value = "";
  $("interrupt-answer").focus();
}

/** Stream one run: show text as it arrives, run browser tools it calls, then show the stored thread. */
async function run(body) {
  setRunning(true);
  setStatus("Running…");
  const streaming = el("li", { class: "message assistant streaming", "data-testid": "streaming" });
  const answered = new Set();
  let runId = "";
  let failed = false;
  try {
    const events = api.stream(page.threadId, { assistant_id: page.assistantId, stream_mode: ["messages-tuple"], ...body });
    for await (const event of events) {
      const kind = event.event.split("|")[0];
      if (kind === "metadata") runId = event.data.run_id;
      else if (kind === "messages" || kind.startsWith("messages/")) {
        const raw = Array.isArray(event.data) ? event.data[0] : event.data;
        const message = normalize(raw);
        if (message.delta && message.text) {
          if (!streaming.isConnected) $("messages").append(streaming);
          streaming.textContent += message.text;
        } else if (!message.delta) {
          streaming.remove();
          streaming.textContent = "";
          $("messages").append(messageItem(message));
          await answerRemoteCalls(message.calls.filter((c) => c.remote), runId, answered);
        }
      } else if (kind === "remote_tool_call") {
        await answerRemoteCalls([{ ...event.data, remote: true }], runId, answered);
      } else if (kind === "error") {
        failed = true;
        setStatus(`Run failed: ${event.data?.message ?? JSON.stringify(event.data)}`, "error");
      }
    }
    if (!failed) setStatus("Done.");
  } catch (error) {
    fail(error);
  } finally {
    streaming.remove();
    await Promise.all([refreshThread(), loadThreads()]).catch(fail);
    setRunning(false);
  }
}

/** Run each remote call once in the browser and post its result; the run then goes on. */
async function answerRemoteCalls(calls, runId, answered) {
  for (const call of calls) {
    if (answered.has(call.id)) continue;
    answered.add(call.id);
    const result = await runBrowserTool(call);
    setStatus(`Ran browser tool ${call.name}.`);
    await api.toolResults(page.threadId, runId, result);
  }
}

async function send(text) {
  if (!page.threadId) {
    const thread = await api.createThread();
    await selectThread(thread.thread_id);
  }
  $("messages").append(messageItem({ id: "", role: "user", text, calls: [], results: [] }));
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
  $("interrupt").addEventListener("submit", (event) => {
    event.preventDefault();
    if (page.running) return;
    $("interrupt").hidden = true;
    run({ command: { resume: $("interrupt-answer").value } }).catch(fail);
  });
  $("new-thread").addEventListener("click", () => selectThread("").catch(fail));
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
    setStatus("Ready.");
    await loadThreads();
    await selectThread(decodeURIComponent(location.hash.slice(1)));
  } catch (error) {
    fail(error);
  }
}

wire();
start();
