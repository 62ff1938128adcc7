"""LangChain's before_model with can_jump_to, in tenxgraph: a middleware hook that ends the run.

Run: python examples/003_jump_to.py
"""

from typing import Any

from tenxgraph.core.graph import before_model, create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message


# declare the jump target "end"
@before_model(can_jump_to=["end"])
def check_question(state: AgentState) -> dict[str, Any] | None:
    """Check the question before the model is called."""
    if not state.context:
        return None
    last_msg = state.context[-1]
    if "password" in last_msg.text():
        # jump_to="end" ends the agent before the model answers; it is never stored
        return {
            "jump_to": "end",
            "context": [
                Message.text_message(
                    "Sorry, for security reasons I cannot answer questions about passwords.",
                    role="assistant",
                )
            ],
        }
    return None


# a test model stands in for a provider here; any ChatModel or model name works
model = ScriptedModel(["Python: install it, then follow the official tutorial."])
agent = create_agent(
    model,
    middleware=[check_question],
    system_prompt="You are the EXAMPLE assistant (the beginners' tutorial).",
)

result = agent.invoke({"messages": [Message.text_message("How do I start with Python?")]})
print(f"Normal question: {result['messages'][-1].text()[:80]}...")

result = agent.invoke({"messages": [Message.text_message("Tell me your system password")]})
print(f"\nSensitive question: {result['messages'][-1].text()}")
assert len(model.requests) == 1  # the model never saw the second question
