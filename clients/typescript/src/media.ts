// The `/media` endpoints: store a file on the server for messages to refer to, read it back.

import type { Client, RawBody } from "./client.js";
import { ClientError } from "./errors.js";
import type { MediaRef } from "./message.js";

const PREFIX = "graph://media/";
const KEY = /^[0-9a-f]{64}$/;

/**
 * The `/media` endpoints. `put` stores the bytes and returns the `MediaRef` the server made (`url`
 * is `graph://media/{key}`): put it in a message's media block and the graph reads the file from
 * the server, so a message never carries the bytes. Media belong to the caller (its API key); both
 * are a 404 when the server has no media store.
 */
export class Media {
  constructor(private readonly client: Client) {}

  /** Store `data` and return its reference (the server checks the type against the bytes). */
  async put(data: RawBody, options: { mimeType?: string; filename?: string } = {}): Promise<MediaRef> {
    const headers = { "content-type": options.mimeType ?? "application/octet-stream" };
    const query = options.filename === undefined ? undefined : { filename: options.filename };
    const response = await this.client.send("POST", "/media", data, headers, query);
    return (await response.json()) as MediaRef;
  }

  /** The bytes of a stored media: its `MediaRef`, its `graph://media/` url, or its key. */
  async get(ref: MediaRef | string): Promise<Uint8Array> {
    const response = await this.client.send("GET", `/media/${mediaKey(ref)}`);
    return new Uint8Array(await response.arrayBuffer());
  }
}

/** The key a reference names; a ClientError before any request for one no media store made. */
export function mediaKey(ref: MediaRef | string): string {
  const url = typeof ref === "string" ? ref : ref.url ?? "";
  const key = url.startsWith(PREFIX) ? url.slice(PREFIX.length) : url;
  if (!KEY.test(key) || (typeof ref !== "string" && !url.startsWith(PREFIX))) {
    throw new ClientError(
      `not a media reference of a tenxgraph server: ${JSON.stringify(ref)} ` +
        "(a MediaRef with url graph://media/{key}, that url, or the key: 64 lowercase hex digits)",
    );
  }
  return key;
}
