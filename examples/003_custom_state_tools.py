"""LangGraph's custom state and InjectedState tools, in tenxgraph: a shopping cart.

Tools ask for the state by naming a parameter ``state``; they change it by
returning a ToolResult whose ``state`` dict is merged into the graph state.

Run: python examples/003_custom_state_tools.py
"""

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, ToolCallBlock, ToolResult


class ShoppingAgentState(AgentState):
    """Shopping assistant state."""

    cart: list[str] = []
    total_price: float = 0.0


def add_to_cart(item: str, price: float, state: ShoppingAgentState) -> ToolResult:
    """Add a product to the cart.

    Args:
        item: product name
        price: product price
    """
    return ToolResult(
        message=f"Added {item} ({price:.2f}).",
        state={"cart": [*state.cart, item], "total_price": state.total_price + price},
    )


def view_cart(state: ShoppingAgentState) -> str:
    """Show the cart."""
    if not state.cart:
        return "The cart is empty"
    return f"Cart: {', '.join(state.cart)}, total: {state.total_price:.2f}"


call = ToolCallBlock(id="c1", name="add_to_cart", args={"item": "Python tutorial", "price": 49.9})
model = ScriptedModel(
    [Message(role="assistant", content=[call]), "Added the Python tutorial (49.90) to your cart."]
)
agent = create_agent(
    model,
    [add_to_cart, view_cart],
    state=ShoppingAgentState,
    system_prompt="You are the EXAMPLE shop assistant.",
)
result = agent.invoke(
    {
        "messages": [Message.text_message("Add a Python tutorial to the cart, price 49.9")],
        "state": {"cart": [], "total_price": 0.0},
    }
)
print(f"Cart: {result['state'].cart}")
print(f"Total: {result['state'].total_price:.2f}")
print(f"Answer: {result['messages'][-1].text()}")
print("schema the model saw:", model.requests[0].tools[0].parameters["properties"].keys())
