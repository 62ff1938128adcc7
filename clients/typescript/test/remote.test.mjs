// The remote-tool loop on its own: a run that ends paused is answered by resuming the thread.
// (The live tests cover the server that waits in the stream.)
import assert from "node:assert/strict";
import { test } from "node:test";

import { withRemoteTools } from "../dist/client.js";
import { parsePart } from "../dist/index.js";

const CALL = { type: "remote_tool_call", id: "c1", name: "clock", args: { tz: "UTC" }, tool_type: "remote" };
const VALUE = { type: "remote_tool_calls", calls: [{ call: CALL }] };
const PAUSE = { __interrupt__: [{ value: VALUE, kind: "remote_tool_calls" }] };
const part = (event, data, id) => parsePart(event, JSON.stringify(data), id);

function run(runId, values) {
  return [part("metadata", { run_id: runId }, "1"), part("values", values, "2"), part("end", null, "3")];
}

async function collect(iterator) {
  const parts = [];
  for await (const item of iterator) parts.push(item);
  return parts;
}

test("a run that ends paused is resumed with the handlers' results", async () => {
  const commands = [];
  const openRun = async function* (command) {
    commands.push(command);
    yield* command === undefined ? run("r1", PAUSE) : run("r2", { done: true });
  };
  const refuse = async () => assert.fail("no call came in the stream: nothing is posted");
  const parts = await collect(withRemoteTools(openRun, { clock: (args) => `noon ${args.tz}` }, refuse));
  assert.deepEqual(commands, [
    undefined,
    { resume: { tool_results: [{ call_id: "c1", output: "noon UTC", is_error: false }] } },
  ]);
  assert.deepEqual(parts.map((p) => p.kind), ["metadata", "values", "remote_tool_call", "metadata", "values", "end"]);
});

test("a streamed call whose post is refused runs once and is answered by resume", async () => {
  const commands = [];
  const posted = [];
  let runs = 0;
  const openRun = async function* (command) {
    commands.push(command);
    if (command === undefined) {
      yield part("metadata", { run_id: "r1" }, "1");
      yield part("remote_tool_call", CALL, "2");
      yield part("values", PAUSE, "3"); // the same call, announced again
    }
    yield part("end", null, "9");
  };
  const refuse = async (runId, results) => {
    posted.push([runId, results]);
    return false;
  };
  const clock = () => {
    runs += 1;
    throw new RangeError("clock is slow");
  };
  const parts = await collect(withRemoteTools(openRun, { clock }, refuse));
  const error = { call_id: "c1", output: "RangeError: clock is slow", is_error: true };
  assert.equal(runs, 1);
  assert.deepEqual(posted, [["r1", [error]]]);
  assert.deepEqual(commands, [undefined, { resume: { tool_results: [error] } }]);
  assert.equal(parts.filter((p) => p.kind === "remote_tool_call").length, 1);
  assert.deepEqual(parts.filter((p) => p.kind === "end").map((p) => p.id), ["9"]);
});

test("without handlers a paused run just ends", async () => {
  const openRun = async function* () {
    yield* run("r1", PAUSE);
  };
  const never = async () => assert.fail("nothing is posted without handlers");
  const parts = await collect(withRemoteTools(openRun, undefined, never));
  assert.deepEqual(parts.map((p) => p.kind), ["metadata", "values", "end"]);
});

test("a pause the final state no longer holds is not answered", async () => {
  const openRun = async function* (command) {
    assert.equal(command, undefined, "no resume");
    yield part("metadata", { run_id: "r1" }, "1");
    yield part("values", PAUSE, "2"); // the thread as the run found it
    yield part("values", { moved: "on" }, "3");
    yield part("end", null, "4");
  };
  const never = async () => assert.fail("nothing is posted");
  const parts = await collect(withRemoteTools(openRun, { clock: () => "never called" }, never));
  assert.deepEqual(parts.map((p) => p.id), ["1", "2", "3", "4"]);
});

test("a user's interrupt shaped like the remote pause is not answered", async () => {
  const openRun = async function* (command) {
    assert.equal(command, undefined, "no resume");
    yield* run("r1", { __interrupt__: [{ value: VALUE, id: "i1", node: "ask", when: "inside" }] });
  };
  const never = async () => assert.fail("nothing is posted");
  const parts = await collect(withRemoteTools(openRun, { clock: () => "never called" }, never));
  assert.deepEqual(parts.map((p) => p.kind), ["metadata", "values", "end"]);
});
