// Typed stream parts: one Server-Sent Event of a run, its JSON data decoded once.

import { isObject } from "./errors.js";
import type { Message, RemoteToolCallBlock } from "./message.js";

interface PartBase {
  /** The SSE event name as sent (`values`, `updates`, `messages`...). */
  event: string;
  /** The SSE id: what a reconnect sends as Last-Event-ID to resume after this part. */
  id: string | undefined;
  /** The event's data, decoded from JSON. */
  data: unknown;
}

/** The first part of a run: which run this stream belongs to. */
export interface MetadataPart extends PartBase { kind: "metadata"; runId: string }
/** The whole state after a step; `messages` is its `messages` (else `context`) field. */
export interface ValuesPart extends PartBase { kind: "values"; values: Record<string, unknown>; messages: Message[] }
/** What one node changed: `{node: update}`. */
export interface UpdatesPart extends PartBase { kind: "updates"; updates: Record<string, unknown> }
/** A message: a streamed chunk (`message.delta`) or a complete one. */
export interface MessagePart extends PartBase { kind: "message"; message: Message; metadata: Record<string, unknown> }
/** The model called a tool the client runs; the run waits for its result. */
export interface RemoteToolCallPart extends PartBase { kind: "remote_tool_call"; call: RemoteToolCallBlock }
/** The run failed; the stream ends after this part. */
export interface ErrorPart extends PartBase { kind: "error"; error: string; message: string }
/** The run's stream is complete. */
export interface EndPart extends PartBase { kind: "end" }
/** An event this client does not know, with its decoded data. */
export interface OtherPart extends PartBase { kind: "other" }

export type StreamPart =
  | MetadataPart
  | ValuesPart
  | UpdatesPart
  | MessagePart
  | RemoteToolCallPart
  | ErrorPart
  | EndPart
  | OtherPart;

/** Build the typed part for one SSE event (its data is JSON text). */
export function parsePart(event: string, data: string, id: string | undefined): StreamPart {
  const decoded: unknown = data.trim() ? JSON.parse(data) : null;
  const base = { event, id, data: decoded };
  const kind = event.split("|", 1)[0];
  if (kind === "metadata" && isObject(decoded)) {
    return { ...base, kind: "metadata", runId: String(decoded.run_id ?? "") };
  }
  if (kind === "values" && isObject(decoded)) {
    return { ...base, kind: "values", values: decoded, messages: messagesIn(decoded) };
  }
  if (kind === "updates" && isObject(decoded)) {
    return { ...base, kind: "updates", updates: decoded };
  }
  if (kind === "messages" || kind.startsWith("messages/")) {
    return messagePart(base, decoded);
  }
  if (kind === "remote_tool_call" && isObject(decoded)) {
    return { ...base, kind: "remote_tool_call", call: decoded as unknown as RemoteToolCallBlock };
  }
  if (kind === "error") {
    const error = isObject(decoded) ? String(decoded.error ?? "") : "";
    const message = isObject(decoded) ? String(decoded.message ?? decoded.detail ?? "") : String(decoded ?? "");
    return { ...base, kind: "error", error, message };
  }
  if (kind === "end") return { ...base, kind: "end" };
  return { ...base, kind: "other" };
}

/** The state's messages (`messages`, else `context`). */
export function messagesIn(values: Record<string, unknown>): Message[] {
  for (const name of ["messages", "context"]) {
    const items = values[name];
    if (Array.isArray(items) && items.every(isMessage)) return items;
  }
  return [];
}

function isMessage(item: unknown): item is Message {
  return isObject(item) && "role" in item && Array.isArray(item.content);
}

function messagePart(base: PartBase, decoded: unknown): StreamPart {
  let item = decoded;
  let metadata: Record<string, unknown> = {};
  if (Array.isArray(decoded) && decoded.length === 2 && isObject(decoded[1])) {
    [item, metadata] = decoded as [unknown, Record<string, unknown>];
  } else if (Array.isArray(decoded) && decoded.length === 1) {
    item = decoded[0];
  }
  if (!isMessage(item)) return { ...base, kind: "other" };
  return { ...base, kind: "message", message: item, metadata };
}

/**
 * The `type` of the value of the server's pause for remote calls
 * (`{type, calls}`). The pause is recognised by its item's `kind`
 * (`REMOTE_CALLS_KIND`), never by this: a user's interrupt may copy it.
 */
export const REMOTE_CALLS_TYPE = "remote_tool_calls";

/**
 * The `kind` of the `__interrupt__` item of the server's pause for remote
 * calls. A user's own interrupt never has it, whatever its value holds.
 */
export const REMOTE_CALLS_KIND = "remote_tool_calls";

/**
 * The remote tool calls a part carries (none for most parts): a
 * `remote_tool_call` event, or the `__interrupt__` item of `values`/`updates`
 * whose `kind` is "remote_tool_calls" (its value:
 * `{type: "remote_tool_calls", calls: [{call}, ...]}`).
 */
export function remoteCalls(part: StreamPart): RemoteToolCallBlock[] {
  if (part.kind === "remote_tool_call") return [part.call];
  if ((part.kind === "values" || part.kind === "updates") && isObject(part.data)) {
    return interruptCalls(part.data.__interrupt__);
  }
  if (part.kind === "message" && !part.message.delta) {
    return part.message.content.filter((b): b is RemoteToolCallBlock => b.type === "remote_tool_call");
  }
  return [];
}

function interruptCalls(interrupts: unknown): RemoteToolCallBlock[] {
  const calls: RemoteToolCallBlock[] = [];
  for (const item of Array.isArray(interrupts) ? interrupts : []) {
    const value = isObject(item) && item.kind === REMOTE_CALLS_KIND ? item.value : undefined;
    if (!isObject(value) || !Array.isArray(value.calls)) continue;
    for (const entry of value.calls) {
      if (isObject(entry) && isObject(entry.call)) calls.push(entry.call as unknown as RemoteToolCallBlock);
    }
  }
  return calls;
}
