// The client of a tenxgraph server (the LangGraph server API): threads, runs, streams,
// and tenxgraph's own routes (the whole log, the window, direct tool calls, rollback, media).

import {
  APIConflictError,
  APIConnectionError,
  APINotFoundError,
  APIStatusError,
  RunFailedError,
  isObject,
  statusError,
} from "./errors.js";
import { Assistants } from "./assistants.js";
import { messagesIn, parsePart, remoteCalls, type StreamPart } from "./events.js";
import { Media } from "./media.js";
import type { Message, RemoteToolCallBlock, ToolResultBlock } from "./message.js";
import { readEvents } from "./sse.js";

/** A remote tool: receives the call's arguments (and the call), returns JSON data. */
export type ToolHandler = (args: Record<string, unknown>, call: RemoteToolCallBlock) => unknown;

export interface ClientOptions {
  /** Sent as `x-api-key`. */
  apiKey?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /**
   * Called before each request: the W3C trace headers (`traceparent`, `tracestate`) of the
   * caller's current span, which the server's run continues. With OpenTelemetry:
   * `() => { const c = {}; propagation.inject(context.active(), c); return c; }`.
   */
  traceHeaders?: () => Record<string, string> | undefined;
}

export interface RunOptions {
  input?: unknown;
  /** `{resume: value}` answers an interrupt. */
  command?: Record<string, unknown>;
  streamMode?: string | string[];
  /** What to do when the thread is busy: "reject", "enqueue", "interrupt", "rollback". */
  multitaskStrategy?: string;
  /** "create" makes the thread on first use. */
  ifNotExists?: string;
  config?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

export interface StreamOptions extends RunOptions {
  /** Handlers for remote tools, by tool name. */
  tools?: Record<string, ToolHandler>;
  /** Reconnect attempts in a row without a new event before giving up (default 5). */
  maxReconnects?: number;
  /** Stop reading (the run goes on on the server). */
  signal?: AbortSignal;
}

export interface JoinStreamOptions {
  lastEventId?: string;
  maxReconnects?: number;
  signal?: AbortSignal;
}

/** A thread's state as the server reports it. */
export interface ThreadState {
  values: Record<string, unknown>;
  next: string[];
  checkpoint?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  created_at?: string;
  [key: string]: unknown;
}

export type Json = Record<string, unknown>;

/** A page of a thread's whole log: every message ever added, oldest first. */
export interface LogPage {
  /** How many messages the log holds now. */
  log_length: number;
  /** The log position of the page's first message. */
  offset: number;
  /** The page's messages, in log order. */
  messages: Message[];
  /** The log position of each message (`seqs[i]` is `messages[i]`'s). */
  seqs: number[];
  /** The `offset` of the next page; null when this page reaches the log's end. */
  next_offset: number | null;
}

/** What the model sees next: log ranges, their messages, and the summary of what was cut. */
export interface ContextWindow {
  /** How many messages the log holds now. */
  log_length: number;
  /** The log ranges `[start, end)` the window is made of, in order. */
  window: Array<[number, number]>;
  /** The window's messages (a state's `messages`). */
  messages: Message[];
  /** The summary that replaced the messages cut from the window, if any. */
  context_summary: string | null;
}

/** The body types sent as they are (media); any other body is sent as JSON. */
export type RawBody = Uint8Array | ArrayBuffer | Blob;

function isRaw(body: unknown): body is RawBody {
  return body instanceof Uint8Array || body instanceof ArrayBuffer || (typeof Blob !== "undefined" && body instanceof Blob);
}

interface StreamRequest {
  method: string;
  path: string;
  body?: unknown;
  threadId: string;
  runId?: string;
  lastEventId?: string;
  maxReconnects: number;
  signal?: AbortSignal;
}

const seg = encodeURIComponent;

/** The run's URL path (`/threads/{t}/runs/{r}`, then `/action`), each id one path segment. */
function runPath(threadId: string, runId: string, action?: string): string {
  const path = `/threads/${seg(threadId)}/runs/${seg(runId)}`;
  return action ? `${path}/${action}` : path;
}

/** Answers to a resume that mean "try again soon", like a dropped connection. */
const TRANSIENT = new Set([429, 502, 503, 504]);

/** Talks to a tenxgraph server. */
export class Client {
  readonly url: string;
  readonly assistants: Assistants;
  readonly threads: Threads;
  readonly runs: Runs;
  readonly media: Media;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: typeof fetch;
  private readonly traceHeaders?: () => Record<string, string> | undefined;

  constructor(url: string, options: ClientOptions = {}) {
    this.url = url.replace(/\/+$/, "");
    // tenxgraph's message JSON: the server's LangGraph routes default to LangChain's format
    const given = { ...(options.headers ?? {}) };
    const chosen = Object.keys(given).some((name) => name.toLowerCase() === "x-message-format");
    this.headers = chosen ? given : { "x-message-format": "tenxgraph", ...given };
    if (options.apiKey !== undefined) this.headers["x-api-key"] = options.apiKey;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.traceHeaders = options.traceHeaders;
    this.assistants = new Assistants(this);
    this.threads = new Threads(this);
    this.runs = new Runs(this);
    this.media = new Media(this);
  }

  /** The server's `GET /info` (its version and capabilities). */
  info(): Promise<Json> {
    return this.request("GET", "/info");
  }

  /** Send one request; returns the decoded JSON body (null when empty). */
  async request<T = unknown>(method: string, path: string, body?: unknown, query?: Record<string, string>): Promise<T> {
    const response = await this.send(method, path, body, {}, query);
    const text = await response.text();
    return (text ? JSON.parse(text) : null) as T;
  }

  /** Send one request; an error status throws the matching APIStatusError. A `RawBody` is sent as is. */
  async send(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    query?: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<Response> {
    const search = query ? `?${new URLSearchParams(query).toString()}` : "";
    const trace = this.traceHeaders?.() ?? {};
    const init: RequestInit = { method, headers: { ...this.headers, ...trace, ...headers } };
    if (isRaw(body)) {
      init.body = body as BodyInit;
    } else if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)["content-type"] = "application/json";
    }
    if (signal) init.signal = signal;
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.url}${path}${search}`, init);
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new APIConnectionError(`${method} ${this.url}${path} failed: ${String(error)}`);
    }
    if (!response.ok) throw await statusError(response, method, path);
    return response;
  }

  /** A run's events once each, resumed with Last-Event-ID after a drop, until it ends. */
  async *streamRun(request: StreamRequest): AsyncGenerator<StreamPart> {
    const seen = new Set<string>();
    let failures = 0;
    let first = true;
    for (;;) {
      let ended = false;
      try {
        for await (const part of this.readOnce(request, first, seen)) {
          failures = 0;
          ended ||= part.kind === "end" || part.kind === "error";
          yield part;
        }
        if (ended || !request.runId || !(await this.stillRunning(request))) return;
      } catch (error) {
        // A drop, or a resume answered by a server restarting or overloaded, is tried again.
        const transient = error instanceof APIStatusError && !first && TRANSIENT.has(error.status);
        const dropped = error instanceof APIConnectionError && request.runId !== undefined;
        if (!(transient || dropped) || request.signal?.aborted) throw error;
      }
      first = false;
      failures += 1;
      if (failures > request.maxReconnects) {
        throw new APIConnectionError(
          `the stream of run ${request.runId} dropped ${failures} times in a row without a new event; ` +
            `gave up after event ${request.lastEventId}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 100 * 2 ** (failures - 1))));
    }
  }

  private async *readOnce(request: StreamRequest, first: boolean, seen: Set<string>): AsyncGenerator<StreamPart> {
    const headers: Record<string, string> = { accept: "text/event-stream", "cache-control": "no-store" };
    if (request.lastEventId) headers["last-event-id"] = request.lastEventId;
    const resume = runPath(request.threadId, request.runId ?? "", "stream");
    const [method, path, body] = first ? [request.method, request.path, request.body] : ["GET", resume, undefined];
    const response = await this.send(method, path, body, headers, undefined, request.signal);
    learnRun(request, response.headers.get("content-location"));
    if (!response.body) return;
    try {
      for await (const sse of readEvents(response.body)) {
        if (sse.id) {
          if (seen.has(sse.id)) continue; // already yielded before the drop
          seen.add(sse.id);
          request.lastEventId = sse.id;
        }
        const part = parsePart(sse.event, sse.data, sse.id);
        if (part.kind === "metadata" && part.runId && !request.runId) request.runId = part.runId;
        yield part;
      }
    } catch (error) {
      if (request.signal?.aborted || error instanceof SyntaxError) throw error;
      throw new APIConnectionError(`the stream of run ${request.runId} dropped: ${String(error)}`);
    }
  }

  private async stillRunning(request: StreamRequest): Promise<boolean> {
    try {
      const run = await this.request<Json>("GET", runPath(request.threadId, request.runId ?? ""));
      return run.status === "pending" || run.status === "running";
    } catch (error) {
      if (error instanceof APIConnectionError) return true;
      throw error;
    }
  }
}

async function runTool(tools: Record<string, ToolHandler>, call: RemoteToolCallBlock): Promise<ToolResult> {
  const handler = Object.prototype.hasOwnProperty.call(tools, call.name) ? tools[call.name] : undefined;
  if (handler === undefined) {
    const known = Object.keys(tools).sort().join(", ") || "none";
    return { call_id: call.id, output: `no handler for remote tool "${call.name}" in this client (has: ${known})`, is_error: true };
  }
  try {
    return { call_id: call.id, output: (await handler(call.args ?? {}, call)) ?? null, is_error: false };
  } catch (error) {
    const name = error instanceof Error ? error.name : "Error";
    const message = error instanceof Error ? error.message : String(error);
    return { call_id: call.id, output: `${name}: ${message}`, is_error: true };
  }
}

/** Posts results to a run waiting for them; false when it waits for none (answer by resume). */
export type PostResults = (runId: string, results: ToolResult[]) => Promise<boolean>;

/** A remote tool's result as the server takes it. */
export interface ToolResult {
  call_id: string;
  output: unknown;
  is_error: boolean;
}

/**
 * A run's parts, its remote calls answered, until none is left.
 *
 * The server streams one `remote_tool_call` part per call and waits: the
 * handler runs and its result is posted to `.../tool_results`; the same run
 * goes on. A run that ends paused instead (its `values`/`updates` carry an
 * `__interrupt__` of kind "remote_tool_calls" not answered in the stream) is
 * resumed with `command: {resume: {tool_results}}`, and the next run's parts
 * follow; the paused run's `end` is skipped. Without handlers nothing is
 * answered: the calls are shown and the run waits for `runs.toolResults`.
 */
export async function* withRemoteTools(
  openRun: (command: Json | undefined) => AsyncGenerator<StreamPart>,
  tools: Record<string, ToolHandler> | undefined,
  post: PostResults,
): AsyncGenerator<StreamPart> {
  const taken = new Set<string>();
  const take = (call: RemoteToolCallBlock): boolean => {
    if (taken.has(call.id)) return false;
    taken.add(call.id);
    return true;
  };
  let command: Json | undefined;
  for (;;) {
    const announced = new Map<string, RemoteToolCallBlock>();
    const resume: ToolResult[] = [];
    let runId = "";
    for await (const part of openRun(command)) {
      if (part.kind === "metadata") runId = part.runId;
      if (part.kind === "remote_tool_call") {
        yield part; // the server waits for this call in the stream
        if (tools && take(part.call)) {
          const results = [await runTool(tools, part.call)];
          if (!(await post(runId, results))) resume.push(...results);
        }
        continue;
      }
      if (part.kind === "values") announced.clear(); // the state now: an older pause may have moved on
      for (const call of remoteCalls(part)) if (!announced.has(call.id)) announced.set(call.id, call);
      if (part.kind === "end" && tools) {
        const left = [...announced.values()].filter(take);
        for (const call of left) yield { kind: "remote_tool_call", event: "remote_tool_call", id: undefined, data: call, call };
        resume.push(...(await Promise.all(left.map((call) => runTool(tools, call)))));
        if (resume.length) continue; // the exchange goes on in the next run
      }
      yield part;
    }
    if (!resume.length) return;
    command = { resume: { tool_results: resume } };
  }
}

function learnRun(request: StreamRequest, location: string | null): void {
  const match = location ? /\/threads\/([^/]+)\/runs\/([^/?#]+)/.exec(location) : null;
  if (match && !request.runId) request.runId = decodeURIComponent(match[2]);
}

function runBody(assistantId: string, options: RunOptions): Json {
  const body: Json = { assistant_id: assistantId };
  const fields: Record<string, unknown> = {
    input: options.input,
    command: options.command,
    stream_mode: options.streamMode,
    multitask_strategy: options.multitaskStrategy,
    if_not_exists: options.ifNotExists,
    config: options.config,
    metadata: options.metadata,
  };
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) body[key] = value;
  return body;
}

/** With tools, a stream mode that announces the pause ("updates" added if neither it nor "values"). */
function modesForTools(modes: string | string[] | undefined, tools: Record<string, ToolHandler> | undefined) {
  if (modes === undefined) return undefined;
  const chosen = typeof modes === "string" ? [modes] : [...modes];
  if (tools && !chosen.includes("values") && !chosen.includes("updates")) chosen.push("updates");
  return chosen;
}

function values(result: unknown): Json {
  if (isObject(result) && isObject(result.__error__)) {
    const error = result.__error__;
    throw new RunFailedError(`${String(error.error ?? "Error")}: ${String(error.message ?? "")}`);
  }
  return isObject(result) ? result : { values: result };
}

/** The `/threads` endpoints. */
export class Threads {
  constructor(private readonly client: Client) {}

  /** Create a thread (the server picks the id unless given). */
  create(options: { threadId?: string; metadata?: Json; ifExists?: string } = {}): Promise<Json> {
    const body: Json = {};
    if (options.threadId !== undefined) body.thread_id = options.threadId;
    if (options.metadata !== undefined) body.metadata = options.metadata;
    if (options.ifExists !== undefined) body.if_exists = options.ifExists;
    return this.client.request("POST", "/threads", body);
  }

  get(threadId: string): Promise<Json> {
    return this.client.request("GET", `/threads/${seg(threadId)}`);
  }

  async delete(threadId: string): Promise<void> {
    await this.client.request("DELETE", `/threads/${seg(threadId)}`);
  }

  search(options: { metadata?: Json; status?: string; limit?: number; offset?: number } = {}): Promise<Json[]> {
    const body: Json = { limit: options.limit ?? 10, offset: options.offset ?? 0 };
    if (options.metadata !== undefined) body.metadata = options.metadata;
    if (options.status !== undefined) body.status = options.status;
    return this.client.request("POST", "/threads/search", body);
  }

  /** The thread's current state; `messages` are its messages (typed). */
  async getState(threadId: string): Promise<ThreadState & { messages: Message[] }> {
    const state = await this.client.request<ThreadState>("GET", `/threads/${seg(threadId)}/state`);
    const vals = isObject(state.values) ? state.values : {};
    return { ...state, values: vals, messages: messagesIn(vals) };
  }

  /** Write `values` into the thread's state as if `asNode` had returned them. */
  updateState(threadId: string, values: Json, asNode?: string): Promise<Json> {
    const body: Json = { values };
    if (asNode !== undefined) body.as_node = asNode;
    return this.client.request("POST", `/threads/${seg(threadId)}/state`, body);
  }

  /** The thread's past states, newest first. */
  getHistory(threadId: string, limit = 10): Promise<ThreadState[]> {
    return this.client.request("POST", `/threads/${seg(threadId)}/history`, { limit });
  }

  /**
   * A page of the thread's whole log from position `offset` (`limit` <= 1000). The log keeps every
   * message ever added, also those trimmed or summarized out of the window; `next_offset` is where
   * the next page starts.
   */
  async getLog(threadId: string, options: { offset?: number; limit?: number } = {}): Promise<LogPage> {
    const query = { offset: String(options.offset ?? 0), limit: String(options.limit ?? 100) };
    const page = await this.client.request<Json>("GET", `/threads/${seg(threadId)}/messages`, undefined, query);
    const items = Array.isArray(page.messages) ? (page.messages as Array<Message & { seq: number }>) : [];
    const logLength = Number(page.log_length ?? 0);
    const offset = Number(page.offset ?? 0);
    const seqs = items.map((item) => Number(item.seq));
    const end = seqs.length ? (seqs.at(-1) as number) + 1 : offset;
    const messages = items.map(({ seq: _seq, ...message }) => message as Message);
    return { log_length: logLength, offset, messages, seqs, next_offset: end < logLength ? end : null };
  }

  /** The context window: what the model sees next, as log ranges and messages. */
  async getWindow(threadId: string): Promise<ContextWindow> {
    const data = await this.client.request<Json>("GET", `/threads/${seg(threadId)}/window`);
    return {
      log_length: Number(data.log_length ?? 0),
      window: (Array.isArray(data.window) ? data.window : []).map(([start, end]) => [Number(start), Number(end)]),
      messages: Array.isArray(data.messages) ? (data.messages as Message[]) : [],
      context_summary: typeof data.context_summary === "string" ? data.context_summary : null,
    };
  }

  /**
   * Call the graph's tool `name` directly, outside the model loop; its result. With `record`
   * (default) the call and its result are a turn of the thread (after `note`, a user message
   * saying why); without, the tool only runs. A failing tool gives a result with `is_error`;
   * arguments that do not fit are refused (422) before anything is recorded.
   */
  callTool(
    threadId: string,
    name: string,
    args: Json = {},
    options: { record?: boolean; note?: string } = {},
  ): Promise<ToolResultBlock> {
    const body: Json = { args, record: options.record ?? true };
    if (options.note !== undefined) body.note = options.note;
    return this.client.request("POST", `/threads/${seg(threadId)}/tools/${seg(name)}`, body);
  }

  /**
   * Discard the thread's unfinished turn (failed, stopped or paused); true if one was. A completed
   * last turn stays (false). While a run is on the thread the server answers 409: cancel it with
   * `runs.cancel(..., {action: "rollback"})`, which stops it and discards its turn.
   */
  async rollback(threadId: string): Promise<boolean> {
    const answer = await this.client.request<Json>("POST", `/threads/${seg(threadId)}/rollback`, {});
    return answer.discarded === true;
  }
}

/** The `/threads/{threadId}/runs` endpoints. */
export class Runs {
  constructor(private readonly client: Client) {}

  /** Start a run and iterate its parts; remote tool calls go to `options.tools` (see withRemoteTools). */
  stream(threadId: string, assistantId: string, options: StreamOptions = {}): AsyncGenerator<StreamPart> {
    const modes = modesForTools(options.streamMode, options.tools);
    const openRun = (command: Json | undefined): AsyncGenerator<StreamPart> => {
      const first = command === undefined;
      const body = runBody(assistantId, {
        ...options,
        streamMode: modes,
        input: first ? options.input : undefined,
        command: first ? options.command : command,
      });
      const request: StreamRequest = {
        method: "POST",
        path: `/threads/${seg(threadId)}/runs/stream`,
        body,
        threadId,
        maxReconnects: options.maxReconnects ?? 5,
      };
      if (options.signal) request.signal = options.signal;
      return this.client.streamRun(request);
    };
    const post: PostResults = async (runId, results) => {
      try {
        await this.toolResults(threadId, runId, results);
        return true;
      } catch (error) {
        if (error instanceof APIConflictError || error instanceof APINotFoundError) return false; // resume instead
        throw error;
      }
    };
    return withRemoteTools(openRun, options.tools, post);
  }

  /** Follow a run already going, from after `lastEventId` (from its start if none). */
  joinStream(threadId: string, runId: string, options: JoinStreamOptions = {}): AsyncGenerator<StreamPart> {
    const request: StreamRequest = {
      method: "GET",
      path: runPath(threadId, runId, "stream"),
      threadId,
      runId,
      maxReconnects: options.maxReconnects ?? 5,
    };
    if (options.lastEventId) request.lastEventId = options.lastEventId;
    if (options.signal) request.signal = options.signal;
    return this.client.streamRun(request);
  }

  /** Run to the end and return the final state values (RunFailedError if it failed). */
  async wait(threadId: string, assistantId: string, options: RunOptions = {}): Promise<Json> {
    return values(await this.client.request("POST", `/threads/${seg(threadId)}/runs/wait`, runBody(assistantId, options)));
  }

  /** Start a background run; returns it at once (`run_id`, `status`...). */
  create(threadId: string, assistantId: string, options: RunOptions = {}): Promise<Json> {
    return this.client.request("POST", `/threads/${seg(threadId)}/runs`, runBody(assistantId, options));
  }

  get(threadId: string, runId: string): Promise<Json> {
    return this.client.request("GET", runPath(threadId, runId));
  }

  /** The thread's runs, newest first. */
  list(threadId: string, limit = 10): Promise<Json[]> {
    return this.client.request("GET", `/threads/${seg(threadId)}/runs`, undefined, { limit: String(limit) });
  }

  /** Wait for a run to finish and return the final state values. */
  async join(threadId: string, runId: string): Promise<Json> {
    return values(await this.client.request("GET", runPath(threadId, runId, "join")));
  }

  /** Answer remote tool calls a run waits for; it goes on once all are answered. */
  toolResults(threadId: string, runId: string, results: ToolResult[]): Promise<Json> {
    return this.client.request("POST", runPath(threadId, runId, "tool_results"), { results });
  }

  /** Cancel a run; `wait` until it stopped. */
  async cancel(threadId: string, runId: string, options: { wait?: boolean; action?: string } = {}): Promise<void> {
    const query = { wait: options.wait ? "true" : "false", action: options.action ?? "interrupt" };
    await this.client.request("POST", runPath(threadId, runId, "cancel"), undefined, query);
  }
}
