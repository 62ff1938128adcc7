"""State and messages: creating messages, extracting text, token usage.

Run: python examples/000_create_messages.py
"""

from tenxgraph.core.state import (
    ImageBlock,
    MediaRef,
    Message,
    TextBlock,
    ToolResultBlock,
)
from tenxgraph.core.state.message import TokenUsages

# Plain text user message
msg = Message.text_message("Hello!")
print("text message:", msg.role, repr(msg.text()))

# Tool result message, linked to the call by call_id
msg = Message.tool_message(
    content=[ToolResultBlock(call_id="call_123", output="Sunny, 22C", status="completed")],
)
print("tool message:", msg.role, repr(msg.text()))  # text() includes tool outputs

# Multimodal message built from explicit blocks
msg = Message(
    role="user",
    content=[
        TextBlock(text="What is this?"),
        ImageBlock(
            media=MediaRef(kind="url", url="https://example.com/img.png", mime_type="image/png")
        ),
    ],
)
text = msg.text()  # only the TextBlock counts; the image is ignored
print("multimodal message:", [block.type for block in msg.content], repr(text))

# Token usage, as a provider adapter fills it in
msg.usages = TokenUsages(completion_tokens=150, prompt_tokens=320, total_tokens=470)
print("usage:", msg.usages.total_tokens, "tokens")
