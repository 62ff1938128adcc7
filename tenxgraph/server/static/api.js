// The few calls of the server's API (the Agent Protocol / LangGraph server
// paths) that the page makes, with the API key header when one is set.

import { readEvents } from "./sse.js";

const KEY = "tenxgraph.api_key";

/** An HTTP error from the server, with its status and the server's detail. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

export class Api {
  constructor(base = "") {
    this.base = base;
  }

  get apiKey() {
    return sessionStorage.getItem(KEY) || "";
  }

  set apiKey(value) {
    if (value) sessionStorage.setItem(KEY, value);
    else sessionStorage.removeItem(KEY);
  }

  async call(method, path, body, signal) {
    // tenxgraph's message JSON (blocks, media refs): the LangGraph routes default to LangChain's
    const headers = { Accept: "application/json", "X-Message-Format": "tenxgraph" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (this.apiKey) headers["x-api-key"] = this.apiKey;
    const response = await fetch(this.base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    if (!response.ok) throw new ApiError(response.status, await errorDetail(response));
    return response;
  }

  async json(method, path, body) {
    const response = await this.call(method, path, body);
    return response.status === 204 ? null : response.json();
  }

  assistants() {
    return this.json("POST", "/assistants/search", { limit: 50 });
  }

  threads() {
    return this.json("POST", "/threads/search", {
      limit: 50,
      sort_by: "updated_at",
      sort_order: "desc",
    });
  }

  createThread() {
    return this.json("POST", "/threads", {});
  }

  thread(threadId) {
    return this.json("GET", `/threads/${enc(threadId)}`);
  }

  state(threadId) {
    return this.json("GET", `/threads/${enc(threadId)}/state`);
  }

  /** The end of the thread's whole log (up to `limit` messages): {log_length, offset, messages}. */
  async log(threadId, limit = 1000) {
    const path = `/threads/${enc(threadId)}/messages`;
    const first = await this.json("GET", `${path}?limit=${limit}`);
    if (first.log_length <= limit) return first;
    return this.json("GET", `${path}?offset=${first.log_length - limit}&limit=${limit}`);
  }

  /** The context window as log ranges, its messages and the summary of what was cut. */
  window(threadId) {
    return this.json("GET", `/threads/${enc(threadId)}/window`);
  }

  /** Start a run on the thread and yield its stream's events. */
  async *stream(threadId, body, signal) {
    const response = await this.call("POST", `/threads/${enc(threadId)}/runs/stream`, body, signal);
    yield* readEvents(response);
  }

  /** Join a run that is going on: its stream from the start. */
  async *join(threadId, runId, signal) {
    const response = await this.call("GET", `/threads/${enc(threadId)}/runs/${enc(runId)}/stream`, undefined, signal);
    yield* readEvents(response);
  }

  /** Discard the thread's unfinished turn (failed, stopped or paused). */
  rollback(threadId) {
    return this.json("POST", `/threads/${enc(threadId)}/rollback`);
  }

  /** Stop a run: `interrupt` keeps what it did so far, `rollback` discards its turn; `wait` until it ended. */
  cancel(threadId, runId, action = "interrupt", wait = false) {
    const query = `action=${action}&wait=${wait ? 1 : 0}`;
    return this.json("POST", `/threads/${enc(threadId)}/runs/${enc(runId)}/cancel?${query}`);
  }

  /** A run's spans, when the server keeps traces (tenxgraph's own route). */
  trace(threadId, runId) {
    return this.json("GET", `/threads/${enc(threadId)}/runs/${enc(runId)}/trace`);
  }

  /** The thread's runs this server keeps, newest first. */
  runs(threadId) {
    return this.json("GET", `/threads/${enc(threadId)}/runs`);
  }

  /** Post results of remote (browser-side) tool calls to the run that waits for them. */
  toolResults(threadId, runId, results) {
    return this.json("POST", `/threads/${enc(threadId)}/runs/${enc(runId)}/tool_results`, { results });
  }
}

function enc(part) {
  return encodeURIComponent(part);
}

async function errorDetail(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    return typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail ?? body);
  } catch {
    return text || response.statusText;
  }
}
