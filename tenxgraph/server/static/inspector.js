// The thread inspector: the window the model sees (state.context) beside the
// thread's full log, the other state fields, and each tool call with its result.

import { el, normalize, outputText, windowOf } from "./messages.js";

const MESSAGE_FIELDS = new Set(["context", "messages"]);

/** Fill the inspector from a thread state and its log (null: nothing selected or no log endpoint). */
export function renderInspector(state, log) {
  const window = state ? windowOf(state.values) : [];
  const logged = log ? log.map((entry) => normalize(entry.message ?? entry)) : null;
  const inWindow = new Set(window.map((m) => m.id));
  section("window", window.length, window.map((m) => line(m, false)));
  section("log", logged ? logged.length : "?", (logged ?? []).map((m) => line(m, inWindow.has(m.id))));
  document.getElementById("log-hint").textContent = logged
    ? "Highlighted: in the window."
    : "This server does not serve the full log.";
  fields(state?.values ?? {});
  toolCalls(logged ?? window);
}

function section(name, count, items) {
  document.getElementById(`${name}-count`).textContent = String(count);
  document.getElementById(`${name}-list`).replaceChildren(...items);
}

function line(message, marked) {
  const summary = message.text || message.calls.map((c) => `${c.name}(…)`).join(", ") ||
    message.results.map((r) => outputText(r.output)).join(" ");
  const item = el("li", { "data-role": message.role }, el("span", { class: "role" }, message.role), " ", summary);
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
  document.getElementById("tool-rows").replaceChildren(...rows);
}
