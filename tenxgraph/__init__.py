"""tenxgraph: AI agents as graphs over typed, durable conversation state."""

from tenxgraph.core.state import AgentState, Message, ToolResult
from tenxgraph.utils.constants import END, START

__all__ = ["END", "START", "AgentState", "Message", "ToolResult"]
__version__ = "0.1.0"
