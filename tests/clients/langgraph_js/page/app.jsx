// A small chat on `useStream` from @langchain/langgraph-sdk/react, as a LangGraph frontend
// would write it, for Selenium to drive against `tenxgraph serve` (tests/clients/langgraph/
// test_use_stream.py). Everything the test reads is in the DOM under data-testid attributes;
// every error (a thrown render, an onError, a failed search) is shown in [data-testid=errors].
import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

const params = new URLSearchParams(location.search);
const API = params.get("api");
const GRAPH = "agent";
const errors = [];
const showError = (where, error) => {
  errors.push(`${where}: ${error?.message ?? error}`);
  const list = document.querySelector("[data-testid=errors]");
  if (list) list.textContent = errors.join("\n");
};
window.addEventListener("error", (event) => showError("window", event.error ?? event.message));
window.addEventListener("unhandledrejection", (event) => showError("promise", event.reason));

function text(message) {
  if (typeof message.content === "string") return message.content;
  return (message.content ?? []).map((block) => block.text ?? "").join("");
}

function Message({ message, stream, index }) {
  const meta = stream.getMessagesMetadata(message, index);
  const parent = meta?.firstSeenState?.parent_checkpoint;
  const options = meta?.branchOptions ?? [];
  const at = options.indexOf(meta?.branch);
  return (
    <li data-testid="message" data-type={message.type} data-branches={options.length}>
      <span data-testid="text">{text(message)}</span>
      {(message.tool_calls ?? []).map((call) => (
        <span key={call.id} data-testid="tool-call">{`${call.name}(${JSON.stringify(call.args)})`}</span>
      ))}
      {message.type === "ai" && (
        <button data-testid="regenerate" onClick={() => stream.submit(undefined, { checkpoint: parent })}>
          regenerate
        </button>
      )}
      {message.type === "human" && (
        <button
          data-testid="edit"
          onClick={() => {
            const edited = { ...message, id: undefined, content: `${text(message)} (edited)` };
            stream.submit({ messages: [edited] }, { checkpoint: parent });
          }}
        >
          edit
        </button>
      )}
      {options.length > 1 && (
        <button data-testid="previous-branch" onClick={() => stream.setBranch(options[(at + options.length - 1) % options.length])}>
          {`branch ${at + 1}/${options.length}`}
        </button>
      )}
    </li>
  );
}

function Threads({ stream }) {
  const [threads, setThreads] = useState([]);
  useEffect(() => {
    stream.client.threads
      .search({ metadata: { graph_id: GRAPH }, limit: 100 })
      .then(setThreads, (error) => showError("threads.search", error));
  }, [stream.client, stream.isLoading]);
  return (
    <ul data-testid="threads">
      {threads.map((t) => <li key={t.thread_id} data-testid="thread" data-thread-id={t.thread_id} />)}
    </ul>
  );
}

// Each handler makes useStream ask for its stream mode, as Agent Chat UI's onCustomEvent does;
// what arrives is kept by mode in [data-testid=seen] (custom data as it came, others by kind).
function useSeen() {
  const [seen, setSeen] = useState({});
  const add = (mode, item) => setSeen((was) => ({ ...was, [mode]: [...(was[mode] ?? []), item] }));
  const handlers = {
    onCustomEvent: (data) => add("custom", data),
    onCheckpointEvent: (data) => add("checkpoints", data.config?.configurable?.checkpoint_id),
    onTaskEvent: (data) => add("tasks", data.name),
    onToolEvent: (data) => add("tools", data.event),
    onLangChainEvent: (data) => add("events", data.event),
    onDebugEvent: (data) => add("debug", data.type),
  };
  return [seen, handlers];
}

function App() {
  const [threadId, setThreadId] = useState(params.get("thread"));
  const [draft, setDraft] = useState("");
  const [seen, handlers] = useSeen();
  const stream = useStream({
    apiUrl: API,
    assistantId: GRAPH,
    messagesKey: "messages",
    threadId,
    onThreadId: setThreadId,
    fetchStateHistory: true,
    callerOptions: { maxRetries: 0 },
    onError: (error) => showError("onError", error),
    ...handlers,
  });
  const interrupt = stream.interrupt;
  return (
    <main>
      <div data-testid="thread-id">{threadId ?? ""}</div>
      <div data-testid="loading">{String(stream.isLoading)}</div>
      <pre data-testid="errors"></pre>
      <pre data-testid="seen">{JSON.stringify(seen)}</pre>
      <ol data-testid="messages">
        {stream.messages.map((m, i) => <Message key={m.id ?? i} message={m} stream={stream} index={i} />)}
      </ol>
      {interrupt && (
        <div data-testid="interrupt">
          <span data-testid="question">{JSON.stringify(interrupt.value)}</span>
          <button data-testid="resume" onClick={() => stream.submit(undefined, { command: { resume: "Ada" } })}>
            answer Ada
          </button>
        </div>
      )}
      <input data-testid="input" value={draft} onChange={(e) => setDraft(e.target.value)} />
      <button
        data-testid="send"
        onClick={() => {
          stream.submit({ messages: [{ type: "human", content: draft }] });
          setDraft("");
        }}
      >
        send
      </button>
      <button data-testid="stop" onClick={() => stream.stop()}>stop</button>
      <Threads stream={stream} />
    </main>
  );
}

class Boundary extends React.Component {
  state = { failed: null };
  static getDerivedStateFromError(error) {
    return { failed: error };
  }
  componentDidCatch(error) {
    showError("render", error);
  }
  render() {
    if (this.state.failed) return <pre data-testid="errors">{errors.join("\n")}</pre>;
    return this.props.children;
  }
}

createRoot(document.getElementById("root")).render(<Boundary><App /></Boundary>);
