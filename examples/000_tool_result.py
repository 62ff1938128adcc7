"""State and messages: a tool that updates state by returning a ToolResult.

The model is a ScriptedModel (offline): it asks for the tool, then answers.
Run: python examples/000_tool_result.py
"""

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, ToolResult
from tenxgraph.core.state.message_block import ToolCallBlock


class MyState(AgentState):
    selected_city: str = ""


def select_city(city: str) -> ToolResult:
    """Set the currently selected city in the workflow."""
    return ToolResult(
        message=f"City updated to '{city}'.",  # returned to the model
        state={"selected_city": city},  # updates MyState.selected_city
    )


model = ScriptedModel(
    [
        ToolCallBlock(id="call_1", name="select_city", args={"city": "Lisbon"}),
        "Done: Lisbon is your city.",
    ]
)
app = create_agent(model, [select_city], state=MyState)
result = app.invoke({"messages": [Message.text_message("Pick Lisbon for me")]})

for message in result["messages"]:
    print(f"{message.role:>9}: {message.text() or message.tool_calls()[0].name + '(...)'}")
print("selected_city =", result["state"].selected_city)
assert result["state"].selected_city == "Lisbon"
# What the model saw on its second call: the tool result message.
print("model saw:", model.requests[1].messages[-1].text())
