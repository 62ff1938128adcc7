"""The messages API: inspecting a response, block by block.

The agent's model is scripted (offline): it calls a tool, then answers.
Run: python examples/002_inspecting_a_response.py
"""

import asyncio

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import ToolCallBlock


def get_weather(location: str) -> str:
    """Get the current weather for a location."""
    return f"Sunny in {location}"


app = create_agent(
    ScriptedModel(
        [
            ToolCallBlock(id="call_1", name="get_weather", args={"location": "London"}),
            "It is sunny in London.",
        ]
    ),
    [get_weather],
)


async def main() -> None:
    result = await app.ainvoke({"messages": [Message.text_message("Hello")]})

    for msg in result["messages"]:
        for block in msg.content:
            if block.type == "text":
                print(block.text)
            elif block.type == "tool_call":
                print(f"Called {block.name}({block.args})")


asyncio.run(main())
