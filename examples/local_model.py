"""The real local model (SmolLM2 via llama.cpp): a forced tool call, then a streamed answer.

Small local models rarely decide to call tools, so the first Agent forces
the call with ``tool_choice`` (the model still writes the arguments); the
second Agent answers from the tool result, and its tokens are printed as
they stream. Offline; about five seconds on two cores.
Run: python examples/local_model.py
"""

from tenxgraph.core.graph import Agent, MessageEvent, StateGraph, ToolNode
from tenxgraph.core.llm import LocalLlamaModel
from tenxgraph.core.state import AgentState, Message


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name.
    """
    return f"It is sunny and 21C in {city}."


model = LocalLlamaModel(n_ctx=1024, temperature=0.0)
graph = StateGraph(AgentState)
graph.add_node("pick", Agent(model, tools=[get_weather], tool_choice="get_weather", max_tokens=32))
graph.add_node("tools", ToolNode([get_weather]))
graph.add_node("answer", Agent(model, system_prompt="Answer in one sentence.", max_tokens=32))
graph.set_entry_point("pick")
graph.add_edge("pick", "tools")
graph.add_edge("tools", "answer")
app = graph.compile()

question = Message.text_message("What is the weather in Rome?")
for event in app.stream({"messages": [question]}):
    if not isinstance(event, MessageEvent):
        continue
    message = event.message
    if message.delta:
        print(message.text(), end="", flush=True)  # tokens as they arrive
    elif message.tool_calls():
        call = message.tool_calls()[0]
        print(f"[{event.node}] forced tool call: {call.name}({call.args})")
    elif message.role == "tool":
        print(f"[{event.node}] tool result: {message.text()}")
    else:
        print(f"\n[{event.node}] complete answer, {message.usages.completion_tokens} tokens")
