// Messages as the page shows them. The server sends tenxgraph's own shape
// (role + typed content blocks); LangChain's shape (type + string content +
// tool_calls) is read too, so the page works with either.

import { browserTools } from "./browser_tools.js";

const ROLES = { human: "user", ai: "assistant", tool: "tool", system: "system" };

/** {id, role, text, calls: [{id, name, args, remote}] (remote: a tool this page runs), results: [{callId, output, isError}], delta} */
export function normalize(raw) {
  const type = String(raw.type ?? "");
  const role = raw.role ?? ROLES[type.replace(/MessageChunk$|Message$/, "").toLowerCase()] ?? type;
  const blocks = typeof raw.content === "string" ? [{ type: "text", text: raw.content }] : raw.content ?? [];
  const calls = [];
  const results = [];
  let text = "";
  for (const block of blocks) {
    if (block.type === "text") text += block.text;
    else if (block.type === "tool_call" || block.type === "remote_tool_call") {
      const remote = block.type === "remote_tool_call" || Object.hasOwn(browserTools, block.name);
      calls.push({ id: block.id, name: block.name, args: block.args ?? {}, remote });
    } else if (block.type === "tool_result") {
      results.push({ callId: block.call_id, output: block.output, isError: Boolean(block.is_error) });
    }
  }
  for (const call of raw.tool_calls ?? []) calls.push({ id: call.id, name: call.name, args: call.args ?? {}, remote: false });
  if (role === "tool" && raw.tool_call_id) {
    results.push({ callId: raw.tool_call_id, output: text, isError: raw.status === "error" });
    text = "";
  }
  return {
    id: String(raw.message_id ?? raw.id ?? ""),
    role,
    text,
    calls,
    results,
    delta: raw.delta === true || type.endsWith("Chunk"),
  };
}

/** The messages of a state's values: tenxgraph's `context`, or LangGraph's `messages`. */
export function windowOf(values) {
  const messages = values?.context ?? values?.messages ?? [];
  return messages.map(normalize);
}

/** Text of a tool result's output, whatever its JSON type. */
export function outputText(output) {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) return output.map((b) => b.text ?? JSON.stringify(b)).join("");
  return JSON.stringify(output);
}

/** A list item showing one message: its role, text, tool calls and tool results. */
export function messageItem(message) {
  const item = el("li", { class: `message ${message.role}`, "data-role": message.role, "data-testid": "message" });
  if (message.id) item.dataset.messageId = message.id;
  item.append(el("span", { class: "role" }, message.role));
  if (message.text) item.append(el("div", { class: "text" }, message.text));
  for (const call of message.calls) {
    const label = `${call.remote ? "browser tool" : "tool"} ${call.name}(${JSON.stringify(call.args)})`;
    item.append(el("div", { class: "tool-call", "data-testid": "tool-call", "data-call-id": call.id }, label));
  }
  for (const result of message.results) {
    const attrs = { class: `tool-result${result.isError ? " error" : ""}`, "data-testid": "tool-result", "data-call-id": result.callId };
    item.append(el("div", attrs, `→ ${outputText(result.output)}`));
  }
  return item;
}

/** A small element builder: tag, attributes, text children. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}
