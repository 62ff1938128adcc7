// A Server-Sent Events parser (the WHATWG event-stream format) over a fetch body.
//
// Events are dispatched on a blank line; an event cut off by a dropped
// connection is never dispatched, so a resume with Last-Event-ID gets it again.

/** One event: its name (default "message"), its data lines joined by "\n", its id. */
export interface ServerSentEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/** Parses event-stream text fed in arbitrary chunks. */
export class SSEParser {
  private buffer = "";
  private event = "";
  private data: string[] = [];
  private id: string | undefined = undefined;
  private hasField = false;

  /** Feed a chunk of text; returns the events it completed. */
  feed(chunk: string): ServerSentEvent[] {
    this.buffer += chunk;
    const events: ServerSentEvent[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (match === null) break;
      // A lone "\r" at the end may be the first half of "\r\n": wait for more.
      if (match[0] === "\r" && match.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const event = this.line(line);
      if (event !== undefined) events.push(event);
    }
    return events;
  }

  private line(line: string): ServerSentEvent | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined; // a comment (keep-alive ping)
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    this.hasField = true;
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.id = value;
    return undefined;
  }

  private dispatch(): ServerSentEvent | undefined {
    const complete = this.hasField && (this.data.length > 0 || this.event !== "");
    const event = { event: this.event || "message", data: this.data.join("\n"), id: this.id };
    this.event = "";
    this.data = [];
    this.hasField = false;
    return complete ? event : undefined;
  }
}

/** The events of a fetch response body, in order. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SSEParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.feed(decoder.decode(value, { stream: true }));
    }
    yield* parser.feed(decoder.decode());
  } finally {
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
