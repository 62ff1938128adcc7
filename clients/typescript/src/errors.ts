// Errors of the client, mirroring tenxgraph.errors.ClientError and its subclasses.

/** A call to a tenxgraph server failed. */
export class ClientError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The server answered with an HTTP error status; `detail` is its own explanation. */
export class APIStatusError extends ClientError {
  readonly status: number;
  readonly detail: string;
  readonly method: string;
  readonly path: string;

  constructor(status: number, detail: string, method = "", path = "") {
    super(`${method || path ? `${method} ${path} ` : ""}answered ${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
    this.method = method;
    this.path = path;
  }
}

/** 401 or 403: the API key is missing, wrong, or not allowed this call. */
export class APIUnauthorizedError extends APIStatusError {}

/** 404: the thread, run or assistant does not exist (for this API key). */
export class APINotFoundError extends APIStatusError {}

/** 409: the thread is busy with another run (`multitask_strategy: "reject"`). */
export class APIConflictError extends APIStatusError {}

/** The server could not be reached, or a dropped stream could not be resumed. */
export class APIConnectionError extends ClientError {}

/** The run ended with an error; `detail` is what the server reported. */
export class RunFailedError extends ClientError {
  readonly detail: string;
  readonly runId: string | undefined;

  constructor(detail: string, runId?: string) {
    super(runId ? `run ${runId} failed: ${detail}` : `run failed: ${detail}`);
    this.detail = detail;
    this.runId = runId;
  }
}

const BY_STATUS: Record<number, typeof APIStatusError> = {
  401: APIUnauthorizedError,
  403: APIUnauthorizedError,
  404: APINotFoundError,
  409: APIConflictError,
};

/** The error for an HTTP error response, with the server's `detail`. */
export async function statusError(response: Response, method: string, path: string): Promise<APIStatusError> {
  const text = await response.text().catch(() => "");
  const Cls = BY_STATUS[response.status] ?? APIStatusError;
  return new Cls(response.status, detailOf(text) || response.statusText, method, path);
}

/** `detail` of a JSON body (FastAPI's field; validation errors joined), else the text. */
export function detailOf(body: string): string {
  let data: unknown;
  try {
    data = JSON.parse(body);
  } catch {
    return body.trim().slice(0, 2000);
  }
  const detail = isObject(data) && "detail" in data ? data.detail : data;
  if (Array.isArray(detail)) {
    return detail.map(validationLine).join("; ");
  }
  return typeof detail === "string" ? detail : JSON.stringify(detail);
}

function validationLine(item: unknown): string {
  if (isObject(item) && typeof item.msg === "string") {
    const where = Array.isArray(item.loc) ? item.loc.join(".") : "";
    return where ? `${where}: ${item.msg}` : item.msg;
  }
  return JSON.stringify(item);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
