// The waterfall of a run: its spans (nodes, model calls with tokens, tools) as
// bars on one time axis, from the trace the server keeps (GET .../runs/{id}/trace).

import { el } from "./messages.js";

/** What kind of step a span is, for its bar's color: node, chat, tool, or other. */
function kindOf(span) {
  const operation = span.attributes["gen_ai.operation.name"];
  if (operation === "chat") return "chat";
  if (operation === "execute_tool") return "tool";
  if (operation === "invoke_agent") return "run";
  return span.attributes["tenxgraph.node"] !== undefined && !span.name.startsWith("tenxgraph.") ? "node" : "other";
}

/** Spans in tree order (each after its parent), with their depth. */
function ordered(spans) {
  const children = new Map();
  for (const span of spans.slice(1)) {
    if (!children.has(span.parent_id)) children.set(span.parent_id, []);
    children.get(span.parent_id).push(span);
  }
  const rows = [];
  const walk = (span, depth) => {
    rows.push({ span, depth });
    for (const child of children.get(span.span_id) ?? []) walk(child, depth + 1);
  };
  walk(spans[0], 0);
  return rows;
}

function milliseconds(nanoseconds) {
  const ms = nanoseconds / 1e6;
  return ms < 1000 ? `${ms.toFixed(1)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

function details(span) {
  const a = span.attributes;
  const parts = [];
  if (a["gen_ai.usage.input_tokens"] !== undefined) {
    parts.push(`${a["gen_ai.usage.input_tokens"]} in / ${a["gen_ai.usage.output_tokens"] ?? 0} out tokens`);
  }
  if (a["error.type"]) parts.push(`error ${a["error.type"]}`);
  return parts.join(", ");
}

/** Draw `trace` (null: none kept, with `hint` saying why) in the inspector's waterfall. */
export function renderTrace(trace, hint) {
  const list = document.getElementById("trace-list");
  document.getElementById("trace-hint").textContent = trace ? `Run ${trace.run_id}` : hint;
  if (!trace) {
    list.replaceChildren();
    return;
  }
  const start = trace.spans[0].start;
  const end = Math.max(...trace.spans.map((span) => span.end ?? span.start));
  const total = Math.max(end - start, 1);
  list.replaceChildren(
    ...ordered(trace.spans).map(({ span, depth }) => {
      const took = (span.end ?? end) - span.start;
      const bar = el("span", { class: "span-bar" });
      bar.style.left = `${((span.start - start) / total) * 100}%`;
      bar.style.width = `${Math.max((took / total) * 100, 0.5)}%`;
      const label = el("span", { class: "label" }, span.name);
      label.style.paddingLeft = `${depth * 0.7}rem`;
      const extra = details(span);
      const row = el(
        "li",
        { "data-testid": "span", "data-kind": kindOf(span), "data-name": span.name, title: `${span.name}: ${milliseconds(took)}` },
        label,
        el("span", { class: "track" }, bar),
        el("span", { class: "took" }, span.end === null ? "running" : milliseconds(took)),
      );
      if (extra) row.append(el("span", { class: "extra", "data-testid": "span-details" }, extra));
      if (span.status === "error") row.classList.add("error");
      return row;
    }),
  );
}
