"""State and messages: AgentState, the add_messages reducer and the helper methods.

Run: python examples/000_agent_state.py
"""

from tenxgraph.core.state import AgentState, Message, add_messages

# AgentState has three built-in fields: context, context_summary, execution_meta.
state = AgentState()
print("fields:", ", ".join(name for name in AgentState.model_fields if not name.startswith("_")))

# add_messages appends, skips ids already present, and never stores delta chunks.
hello = Message.text_message("Hello!")
chunk = Message.text_message("Hel", role="assistant")
chunk.delta = True
merged = add_messages([hello], [hello, chunk, Message.text_message("Hi!", role="assistant")])
print("merged roles:", [m.role for m in merged])  # the duplicate and the delta were skipped
assert len(merged) == 2

# The helper methods delegate to execution_meta.
state.set_current_node("MAIN")
state.advance_step()
print("running:", state.is_running(), "- interrupted:", state.is_interrupted())
print("stop requested:", state.is_stopped_requested())
state.complete()
print("status after complete():", state.execution_meta.status)
state.error("message")
print("status after error():", state.execution_meta.status, "-", state.execution_meta.error)
print("step:", state.execution_meta.step, "- node:", state.execution_meta.current_node)
