from __future__ import annotations

import asyncio
import threading
import time
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from tenxgraph.core.graph import StateGraph, Tool, ToolNode, create_agent, interrupt, tool
from tenxgraph.core.graph._tools import _parse_docstring
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import (
    AgentState,
    Message,
    ToolCallBlock,
    ToolResult,
    ToolResultBlock,
    append_items,
)
from tenxgraph.errors import NodeError, ToolError
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.utils import END


def calls(*items: tuple[str, str, dict[str, Any]]) -> Message:
    return Message(
        role="assistant",
        content=[ToolCallBlock(id=i, name=n, args=a) for i, n, a in items],
    )


def run_tools(
    tools: list[Any], message: Message, state: AgentState | None = None, **kw: Any
) -> Any:
    graph = StateGraph(state or AgentState)
    graph.add_node("tools", ToolNode(tools, **kw))
    graph.set_entry_point("tools")
    return graph.compile().invoke(
        {"messages": [Message.text_message("go"), message]}, **kw.get("invoke", {})
    )


def results(output: dict[str, Any]) -> list[ToolResultBlock]:
    found = []
    for message in output["messages"]:
        assert message.role == "tool"
        assert len(message.content) == 1
        block = message.content[0]
        assert isinstance(block, ToolResultBlock)
        found.append(block)
    return found


class MyState(AgentState):
    selected_city: str = ""


def select_city(city: str) -> ToolResult:
    """Set the currently selected city in the workflow."""
    return ToolResult(
        message=f"City updated to '{city}'.",  # returned to the model
        state={"selected_city": city},  # updates MyState.selected_city
    )


def test_tool_result_example_persists_on_the_thread() -> None:
    checkpointer = InMemoryCheckpointer()
    model = ScriptedModel([calls(("c1", "select_city", {"city": "Paris"})), "Paris it is."])
    app = create_agent(model, [select_city], state=MyState, checkpointer=checkpointer)
    config = {"thread_id": "cities"}
    result = app.invoke({"messages": [Message.text_message("Choose Paris")]}, config)
    model.assert_consumed()
    assert result["state"].selected_city == "Paris"
    saved = checkpointer.get_state(config, MyState)  # a checkpointer knows no graph's class
    assert isinstance(saved, MyState)
    assert saved.selected_city == "Paris"
    tool_message = saved.context[2]
    assert tool_message.role == "tool"
    block = tool_message.content[0]
    assert isinstance(block, ToolResultBlock)
    assert block.call_id == "c1"
    assert block.output == "City updated to 'Paris'."
    assert block.status == "completed"
    assert not block.is_error
    # the model saw the tool result on its second call
    assert model.requests[1].messages[-1].content[0] == block


class Address(BaseModel):
    street: str
    zip_code: str


def test_schema_from_hints_and_docstrings() -> None:
    def google(city: str, days: int = 3, address: Address | None = None) -> str:
        """Get the forecast.

        Args:
            city: Name of the city.
            days (int): How many days,
                at most 10.
            address: Where exactly.

        Returns:
            The forecast text.
        """
        return city

    def numpy_style(query: str, limit: int) -> str:
        """Search the catalogue.

        Parameters
        ----------
        query : str
            Words to look for.
        limit : int
            Maximum number of hits.
        """
        return query

    spec = Tool(google).spec()
    assert spec.description == "Get the forecast."
    props = spec.parameters["properties"]
    assert props["city"]["description"] == "Name of the city."
    assert props["days"]["description"] == "How many days, at most 10."
    assert props["days"]["default"] == 3
    assert spec.parameters["required"] == ["city"]
    assert "Address" in str(spec.parameters)
    numpy_spec = Tool(numpy_style).spec()
    assert numpy_spec.parameters["properties"]["limit"]["description"] == "Maximum number of hits."
    assert numpy_spec.description == "Search the catalogue."
    assert _parse_docstring("Just a summary.") == ("Just a summary.", {})


def test_injected_parameters_are_hidden_and_filled() -> None:
    seen: dict[str, Any] = {}

    def inspect_all(
        label: str,
        state: AgentState,
        config: dict[str, Any],
        tool_call_id: str,
        invocation_state: dict[str, Any],
    ) -> str:
        seen.update(
            label=label,
            last=state.context[-1].role,
            thread=config["thread_id"],
            call=tool_call_id,
            user=invocation_state["user_id"],
        )
        invocation_state["touched"] = True
        return "ok"

    spec = Tool(inspect_all).spec()
    assert list(spec.parameters["properties"]) == ["label"]
    graph = StateGraph(AgentState)
    graph.add_node("tools", ToolNode([inspect_all]))
    graph.set_entry_point("tools")
    shared = {"user_id": "u-1"}
    out = graph.compile().invoke(
        {"messages": [calls(("c9", "inspect_all", {"label": "x"}))]},
        {"thread_id": "t-5"},
        invocation_state=shared,
    )
    assert seen == {"label": "x", "last": "assistant", "thread": "t-5", "call": "c9", "user": "u-1"}
    assert out["invocation_state"] is shared
    assert shared["touched"] is True


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"days": "many"}, "invalid arguments for tool 'forecast': city: Field required"),
        ({"city": "Oslo", "days": "many"}, "days: Input should be a valid integer"),
        ({"city": "Oslo", "bogus": 1}, "bogus: Extra inputs are not permitted"),
    ],
)
def test_invalid_arguments_become_error_results(args: dict[str, Any], expected: str) -> None:
    def forecast(city: str, days: int = 1) -> str:
        """Forecast."""
        return f"{city} {days}"

    (block,) = results(run_tools([forecast], calls(("c1", "forecast", args))))
    assert block.is_error
    assert block.status == "failed"
    assert expected in str(block.output)


def test_unknown_tool_and_raising_tool_do_not_kill_the_run() -> None:
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    blocks = results(run_tools([explode], calls(("a", "missing", {}), ("b", "explode", {}))))
    assert [b.call_id for b in blocks] == ["a", "b"]
    assert "unknown tool 'missing'; available tools: explode" in str(blocks[0].output)
    assert "RuntimeError: disk on fire" in str(blocks[1].output)
    assert all(b.is_error and b.status == "failed" for b in blocks)


def test_timeout_per_tool() -> None:
    async def slow() -> str:
        """Slow."""
        await asyncio.sleep(5)
        return "late"

    fast = Tool(lambda: "quick", name="fast")
    (late, quick) = results(
        run_tools([slow, fast], calls(("s", "slow", {}), ("f", "fast", {})), timeout=0.2)
    )
    assert late.is_error
    assert "timed out after 0.2 seconds" in str(late.output)
    assert quick.output == "quick"


def test_parallel_calls_run_concurrently_and_keep_call_order() -> None:
    threads: set[str] = set()
    barrier = threading.Barrier(2, timeout=5)

    def sync_tool(n: int) -> int:
        """Blocks until its sibling runs too: proves the two run at once."""
        threads.add(threading.current_thread().name)
        barrier.wait()
        return n

    async def async_tool(n: int) -> int:
        """Async."""
        await asyncio.sleep(0.05 * (3 - n))
        return n * 10

    start = time.perf_counter()
    blocks = results(
        run_tools(
            [sync_tool, async_tool],
            calls(
                ("1", "sync_tool", {"n": 1}),
                ("2", "async_tool", {"n": 1}),
                ("3", "sync_tool", {"n": 2}),
                ("4", "async_tool", {"n": 2}),
            ),
        )
    )
    assert [b.call_id for b in blocks] == ["1", "2", "3", "4"]
    assert [b.output for b in blocks] == [1, 10, 2, 20]
    assert len(threads) == 2
    assert time.perf_counter() - start < 4


def test_parallel_updates_to_one_field_merge_in_call_order() -> None:
    class Tagged(AgentState):
        tags: Annotated[list[str], append_items] = []
        last: str = ""

    async def tag(name: str, delay: float) -> ToolResult:
        """Tag."""
        await asyncio.sleep(delay)
        return ToolResult(message="tagged", state={"tags": [name], "last": name})

    out = run_tools(
        [tag],
        calls(
            ("1", "tag", {"name": "first", "delay": 0.06}),
            ("2", "tag", {"name": "second", "delay": 0.0}),
            ("3", "tag", {"name": "third", "delay": 0.03}),
        ),
        Tagged,
    )
    assert out["state"].tags == ["first", "second", "third"]
    assert out["state"].last == "third"


def test_tool_result_with_unknown_field_is_a_clear_error() -> None:
    def bad() -> ToolResult:
        """Bad."""
        return ToolResult(message="x", state={"nonexistent": 1})

    with pytest.raises(NodeError, match=r"tool 'bad' ToolResult.state: unknown state field"):
        run_tools([bad], calls(("1", "bad", {})))


def test_decorator_forms_and_bad_tools() -> None:
    @tool
    def plain(x: int) -> int:
        """Plain."""
        return x

    @tool(name="renamed", description="Custom.", timeout=1.0)
    def original(x: int) -> int:
        return x

    assert isinstance(plain, Tool)
    assert (original.name, original.description, original.timeout) == ("renamed", "Custom.", 1.0)
    with pytest.raises(ToolError, match="two tools are named 'plain'"):
        ToolNode([plain, plain])

    def variadic(*args: int) -> int:
        return 0

    with pytest.raises(ToolError, match=r"\*args/\*\*kwargs"):
        Tool(variadic)


def test_interrupt_inside_a_tool_and_resume_without_rerunning_siblings() -> None:
    runs: list[str] = []

    def approve(action: str) -> str:
        """Needs a human."""
        runs.append("approve")
        answer = interrupt({"approve": action})
        return f"{action}: {answer}"

    def lookup() -> str:
        """Runs once only."""
        runs.append("lookup")
        return "found"

    checkpointer = InMemoryCheckpointer()
    graph = StateGraph(AgentState)
    graph.add_node("tools", ToolNode([approve, lookup]))
    graph.set_entry_point("tools")
    graph.add_edge("tools", END)
    app = graph.compile(checkpointer=checkpointer)
    config = {"thread_id": "approval"}
    first = app.invoke(
        {"messages": [calls(("a", "approve", {"action": "delete"}), ("b", "lookup", {}))]}, config
    )
    assert first["interrupt"].value == {"approve": "delete"}
    done = app.invoke({"resume": "yes"}, config)
    blocks = results(done)
    assert [(b.call_id, b.output) for b in blocks] == [("a", "delete: yes"), ("b", "found")]
    assert runs.count("lookup") == 1
    assert runs.count("approve") == 2
    assert done["state"].execution_meta.tool_ledger == {}


def test_pydantic_model_arguments_arrive_validated() -> None:
    received: list[Any] = []

    def ship(address: Address, express: bool = False) -> str:
        """Ship to an address."""
        received.append(address)
        return address.street

    (block,) = results(
        run_tools([ship], calls(("1", "ship", {"address": {"street": "Main 1", "zip_code": "9"}})))
    )
    assert block.output == "Main 1"
    assert isinstance(received[0], Address)
