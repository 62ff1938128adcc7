// The `/assistants` endpoints: the one graph a tenxgraph server serves, and its tools.

import type { Client, Json } from "./client.js";

/** A tool as the model is told about it: what a direct call (`threads.callTool`) must fit. */
export interface ToolSpec {
  name: string;
  description: string;
  /** The JSON Schema of the arguments (an `object` schema). */
  parameters: Json;
}

/** The `/assistants` endpoints. A server has one assistant: its id is the graph's id. */
export class Assistants {
  constructor(private readonly client: Client) {}

  /** The assistants matching the filters (`assistant_id`, `graph_id`, `name`...). */
  search(options: { graphId?: string; metadata?: Json; limit?: number; offset?: number } = {}): Promise<Json[]> {
    const body: Json = { limit: options.limit ?? 10, offset: options.offset ?? 0 };
    if (options.graphId !== undefined) body.graph_id = options.graphId;
    if (options.metadata !== undefined) body.metadata = options.metadata;
    return this.client.request("POST", "/assistants/search", body);
  }

  /** The assistant's tools: name, description and the JSON Schema of their arguments. */
  async getTools(assistantId: string): Promise<ToolSpec[]> {
    const tools = await this.client.request<Json[]>("GET", `/assistants/${encodeURIComponent(assistantId)}/tools`);
    return (tools ?? []).map((tool) => ({
      name: String(tool.name),
      description: String(tool.description ?? ""),
      parameters: (tool.parameters ?? {}) as Json,
    }));
  }
}
