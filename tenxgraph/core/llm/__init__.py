"""The model boundary: the ChatModel interface, provider adapters and test models."""

from tenxgraph.core.llm.base import ChatModel, ModelRequest, ToolChoice, ToolSpec

__all__ = ["ChatModel", "ModelRequest", "ToolChoice", "ToolSpec"]
