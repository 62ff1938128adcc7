"""A tool-calling agent: create_agent loops model -> tools -> model until the model answers.

The model here is a FunctionModel, a few lines of rules standing in for an
LLM (offline and deterministic); swap in ``"gpt-4o"``, ``"claude-..."`` or
``LocalLlamaModel()`` and nothing else changes. It asks for two tools at once
(they run concurrently), one of which fails; the failure reaches the model
as an error result instead of ending the run.
Run: python examples/tool_calling_agent.py
"""

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import ToolCallBlock

FORECASTS = {"paris": "sunny, 24C", "oslo": "rain, 9C"}


def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: City name, e.g. "Paris".
    """
    if city.lower() not in FORECASTS:
        raise LookupError(f"no forecast for {city}")
    return FORECASTS[city.lower()]


def rules(request: ModelRequest) -> str | list[ToolCallBlock]:
    last = request.messages[-1]
    if last.role == "user":  # ask for the weather of every capitalized word
        cities = [w.strip("?,.") for w in last.text().split()[1:] if w[0].isupper()]
        return [
            ToolCallBlock(id=f"call_{n}", name="get_weather", args={"city": city})
            for n, city in enumerate(cities)
        ]
    results = [m.tool_results()[0] for m in request.messages if m.role == "tool"]
    lines = [f"{'could not check' if r.is_error else 'checked'}: {r.output}" for r in results]
    return "Here is what I found:\n" + "\n".join(lines)


model = FunctionModel(rules)
app = create_agent(model, [get_weather], system_prompt="You report the weather.")
result = app.invoke({"messages": [Message.text_message("Weather in Paris, Oslo and Atlantis?")]})

for message in result["messages"]:
    for call in message.tool_calls():
        print(f"model called get_weather({call.args['city']!r})")
    for res in message.tool_results():
        print(f"  -> {'ERROR ' if res.is_error else ''}{res.output}")
print(result["messages"][-1].text())
print("tools offered to the model:", [spec.name for spec in model.requests[0].tools])
assert len(model.requests) == 2  # one call to pick tools, one to answer
