"""State and messages: how context accumulates across turns.

Run: python examples/000_context_accumulates.py
"""

from tenxgraph.core.state import Message, TextBlock, ToolCallBlock, ToolResultBlock, is_paired

context = [
    Message(role="user", content=[TextBlock(text="What is 2 + 2?")]),
    Message(role="assistant", content=[TextBlock(text="4.")]),
    Message(role="user", content=[TextBlock(text="What is the weather in Tokyo?")]),
    Message(
        role="assistant",
        content=[ToolCallBlock(id="c1", name="get_weather", args={"location": "Tokyo"})],
    ),
    Message(
        role="tool",
        content=[ToolResultBlock(call_id="c1", output="Cloudy, 18C", status="completed")],
    ),
    Message(role="assistant", content=[TextBlock(text="It is cloudy and 18C in Tokyo.")]),
]

for message in context:
    call = message.tool_calls()
    shown = f"{call[0].name}({call[0].args})" if call else message.text()
    print(f"{message.role:>9}: {shown}")
# Every tool call has its result next to it: the invariant every context manager keeps.
print("tool calls paired with results:", is_paired(context))
