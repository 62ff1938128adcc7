"""LangChain's state_schema and middleware state_schema, in tenxgraph.

Business fields go on the graph's state class; a middleware's private fields
go on its own ``state_schema`` and are merged in. A field declared by both
with different types is an error when the graph is built.

Run: python examples/003_middleware_state_schema.py
"""

from typing import Any

from pydantic import BaseModel

from tenxgraph.core.graph import AgentMiddleware, create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message


class ShopState(AgentState):
    cart: list[str] = []


class CallCounterState(BaseModel):
    model_calls: int = 0


class CallCounter(AgentMiddleware):
    """Counts model calls in a field of its own."""

    state_schema = CallCounterState

    def before_model(self, state: Any) -> dict[str, Any]:
        return {"model_calls": state.model_calls + 1}


agent = create_agent(ScriptedModel(["Hello!"]), state=ShopState, middleware=[CallCounter()])
result = agent.invoke({"messages": [Message.text_message("hi")], "state": {"cart": ["tea"]}})
state = result["state"]
print(type(state).__name__, "cart:", state.cart, "model calls:", state.model_calls)
