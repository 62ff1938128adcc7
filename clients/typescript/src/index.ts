// @tenxgraph/client: the TypeScript client of a tenxgraph server.

export { Assistants } from "./assistants.js";
export type { ToolSpec } from "./assistants.js";
export { Client, Runs, Threads } from "./client.js";
export type {
  ClientOptions,
  ContextWindow,
  JoinStreamOptions,
  Json,
  LogPage,
  RawBody,
  RunOptions,
  StreamOptions,
  ThreadState,
  ToolHandler,
  ToolResult,
} from "./client.js";
export {
  APIConflictError,
  APIConnectionError,
  APINotFoundError,
  APIStatusError,
  APIUnauthorizedError,
  ClientError,
  RunFailedError,
} from "./errors.js";
export { REMOTE_CALLS_KIND, REMOTE_CALLS_TYPE, messagesIn, parsePart, remoteCalls } from "./events.js";
export type {
  EndPart,
  ErrorPart,
  MessagePart,
  MetadataPart,
  OtherPart,
  RemoteToolCallPart,
  StreamPart,
  UpdatesPart,
  ValuesPart,
} from "./events.js";
export { Media, mediaKey } from "./media.js";
export type * from "./message.js";
export { SSEParser, readEvents } from "./sse.js";
export type { ServerSentEvent } from "./sse.js";
