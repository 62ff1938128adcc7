"""Strands' conversation history and initial messages, in tenxgraph.

Run: python examples/004_conversation_history.py
"""

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import Message
from tenxgraph.storage.checkpointer import InMemoryCheckpointer


def answer(request: ModelRequest) -> str:
    names = [m.text() for m in request.messages if "my name is" in m.text()]
    return f"You told me: {names[-1]}" if names else "Hello!"


agent = create_agent(FunctionModel(answer), checkpointer=InMemoryCheckpointer())

# Send a message and read the conversation history of the thread
config = {"thread_id": "history"}
agent.invoke({"messages": [Message.text_message("Hello!")]}, config)
print([f"{m.role}: {m.text()}" for m in agent.get_state(config).context])

# Start a thread from existing messages (checked: tool calls must have their results)
config = {"thread_id": "prefilled"}
agent.create_thread(
    config,
    [
        Message.text_message("Hello, my name is Strands!"),
        Message.text_message("Hi there! How can I help you today?", role="assistant"),
    ],
)
result = agent.invoke({"messages": [Message.text_message("What's my name?")]}, config)
print(result["messages"][-1].text())
