"""The model boundary: the ChatModel interface, provider adapters and test models.

Adapters import their SDK lazily, so ``import tenxgraph.core.llm`` needs no extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tenxgraph.core.llm.base import ChatModel, ModelRequest, ToolChoice, ToolSpec

if TYPE_CHECKING:
    from tenxgraph.core.llm.anthropic import AnthropicModel
    from tenxgraph.core.llm.google import GoogleModel
    from tenxgraph.core.llm.local import LocalLlamaModel
    from tenxgraph.core.llm.media import FileIdCache, MediaLimits, MediaResolver, ProviderFile
    from tenxgraph.core.llm.openai import OpenAIChatModel
    from tenxgraph.core.llm.openai_responses import OpenAIResponsesModel
    from tenxgraph.core.llm.resolve import resolve_model
    from tenxgraph.core.llm.retry import RetryingModel, RetryPolicy
    from tenxgraph.core.llm.testing import FunctionModel, ScriptedModel

__all__ = [
    "AnthropicModel",
    "ChatModel",
    "FileIdCache",
    "FunctionModel",
    "GoogleModel",
    "LocalLlamaModel",
    "MediaLimits",
    "MediaResolver",
    "ModelRequest",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "ProviderFile",
    "RetryPolicy",
    "RetryingModel",
    "ScriptedModel",
    "ToolChoice",
    "ToolSpec",
    "resolve_model",
]

_LAZY = {
    "AnthropicModel": "anthropic",
    "GoogleModel": "google",
    "LocalLlamaModel": "local",
    "FileIdCache": "media",
    "MediaLimits": "media",
    "MediaResolver": "media",
    "ProviderFile": "media",
    "OpenAIChatModel": "openai",
    "OpenAIResponsesModel": "openai_responses",
    "resolve_model": "resolve",
    "RetryPolicy": "retry",
    "RetryingModel": "retry",
    "FunctionModel": "testing",
    "ScriptedModel": "testing",
}


def __getattr__(name: str) -> Any:
    """Import an adapter module on first use of one of its names."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
