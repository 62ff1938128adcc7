// Tools that run in the browser. When a run calls one (a remote tool call),
// the run pauses; the page runs the tool here and posts its result, and the
// run goes on. Register more by adding entries: name -> async function(args).

export const browserTools = {
  /** The browser's clock and time zone: something only the browser knows. */
  async get_browser_time() {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    return `${new Date().toISOString()} (${zone})`;
  },
};

/** Run one call; an unknown tool or a failure is an error result, not an exception. */
export async function runBrowserTool(call) {
  const tool = browserTools[call.name];
  if (!tool) return { call_id: call.id, output: `no browser tool named ${call.name}`, is_error: true };
  try {
    return { call_id: call.id, output: await tool(call.args ?? {}), is_error: false };
  } catch (error) {
    return { call_id: call.id, output: `${call.name} failed: ${error}`, is_error: true };
  }
}
