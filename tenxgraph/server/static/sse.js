// Server-sent events read from a fetch() response body. EventSource only does
// GET, and a run is started with a POST, so the page parses the stream itself
// (https://html.spec.whatwg.org/multipage/server-sent-events.html).

/** Yield {event, data, id} for each event of `response`'s body; `data` is parsed JSON when it is JSON. */
export async function* readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let pending = { event: "", data: [], id: null };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    // A chunk may end between "\r" and "\n": keep a trailing "\r" for the next one.
    const lines = buffer.split(/\r\n|\n|\r(?!$)/);
    buffer = lines.pop();
    for (const line of lines) {
      if (line === "") {
        if (pending.data.length) yield finish(pending);
        pending = { event: "", data: [], id: pending.id };
      } else if (!line.startsWith(":")) {
        readField(pending, line);
      }
    }
  }
  if (pending.data.length) yield finish(pending);
}

function readField(pending, line) {
  const colon = line.indexOf(":");
  const field = colon < 0 ? line : line.slice(0, colon);
  const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
  if (field === "event") pending.event = value;
  else if (field === "data") pending.data.push(value);
  else if (field === "id") pending.id = value;
}

function finish(pending) {
  const text = pending.data.join("\n");
  let data = text;
  try {
    data = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { event: pending.event || "message", data, id: pending.id };
}
