// The thread inspector: the window the model sees (state.context) beside the
// thread's full log, the other state fields, and each tool call with its result.

import { el, normalize, outputText, windowOf } from "./messages.js";

const MESSAGE_FIELDS = new Set(["context", "messages"]);

/**
 * What the inspector shows, from the thread's state and (when the server has
 * them) its log page and window: {values, window, log, logLength, summary}.
 * Log messages carry `seq` and `inWindow` (their position is in a window range).
 */
export function inspect(state, log, window) {
  const ranges = window?.window ?? [];
  const inWindow = (seq) => ranges.some(([start, end]) => start <= seq && seq < end);
  return {
    values: state?.values ?? {},
    window: window ? withSeqs(window.messages.map(normalize), ranges) : windowOf(state?.values),
    log: log ? log.messages.map((raw) => ({ ...normalize(raw), seq: raw.seq, inWindow: inWindow(raw.seq) })) : null,
    logLength: log?.log_length ?? null,
  };
}

/** The window's messages numbered by their log positions (its ranges, in order). */
function withSeqs(messages, ranges) {
  const seqs = ranges.flatMap(([start, end]) => Array.from({ length: end - start }, (_, i) => start + i));
  return seqs.length === messages.length ? messages.map((m, i) => ({ ...m, seq: seqs[i] })) : messages;
}

/** Fill the inspector (`inspected`: from `inspect`, or null when no thread is selected). */
export function renderInspector(inspected) {
  const { values = {}, window = [], log = null, logLength = null } = inspected ?? {};
  section("window", window.length, window.map((m) => line(m, false)));
  section("log", logLength ?? "?", (log ?? []).map((m) => line(m, m.inWindow)));
  document.getElementById("log-hint").textContent = !inspected
    ? "Choose a thread to see its log."
    : !log
    ? "This server does not serve the full log."
    : log.length < logLength
      ? `Highlighted: in the window. Showing the last ${log.length}.`
      : "Highlighted: in the window.";
  fields(values);
  toolCalls(log ?? window);
}

function section(name, count, items) {
  document.getElementById(`${name}-count`).textContent = String(count);
  document.getElementById(`${name}-list`).replaceChildren(...items);
}

function line(message, marked) {
  const summary = message.text || message.calls.map((c) => `${c.name}(…)`).join(", ") ||
    message.results.map((r) => outputText(r.output)).join(" ");
  const item = el("li", { "data-role": message.role }, el("span", { class: "role" }, message.role), " ", summary);
  if (message.seq !== undefined) item.value = message.seq; // numbered by log position
  if (marked) {
    item.classList.add("in-window");
    item.title = "in the window";
  }
  return item;
}

function fields(values) {
  const rows = Object.entries(values)
    .filter(([name]) => !MESSAGE_FIELDS.has(name))
    .flatMap(([name, value]) => [el("dt", {}, name), el("dd", { "data-field": name }, fieldValue(value))]);
  document.getElementById("state-fields").replaceChildren(...rows);
}

/** A short value as it is; a long object folded, its JSON shown when opened. */
function fieldValue(value) {
  if (typeof value === "string" && value) return value;
  const text = JSON.stringify(value);
  if (text.length <= 60) return text;
  const size = Array.isArray(value) ? `${value.length} items` : `${Object.keys(value).length} keys`;
  return el("details", {}, el("summary", {}, size), el("pre", {}, JSON.stringify(value, null, 2)));
}

/** One row per tool call, with the result that answers it (or "waiting"). */
function toolCalls(messages) {
  const results = new Map();
  for (const message of messages) for (const result of message.results) results.set(result.callId, result);
  const rows = messages.flatMap((message) =>
    message.calls.map((call) => {
      const result = results.get(call.id);
      const output = result ? outputText(result.output) : "waiting";
      return el(
        "tr",
        { "data-testid": "tool-row", "data-call-id": call.id },
        el("td", {}, call.remote ? `${call.name} (browser)` : call.name),
        el("td", {}, JSON.stringify(call.args)),
        el("td", { class: result?.isError ? "error" : "" }, output),
      );
    }),
  );
  const none = el("tr", {}, el("td", { colspan: "3", class: "hint" }, "No tool calls."));
  document.getElementById("tool-rows").replaceChildren(...(rows.length ? rows : [none]));
}
