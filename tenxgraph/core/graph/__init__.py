"""The graph runtime: builder, run loop, Agent and ToolNode."""
