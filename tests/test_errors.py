"""The error contract: one root, the tree written in ``tenxgraph/errors.py``, HTTP statuses.

``test_the_package_raises_no_builtin_exception`` scans the package so a new
bare ``raise ValueError(...)`` fails ``make check``; the few places that must
raise a builtin (pydantic validator helpers) are listed, with their reason.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import inspect
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from tenxgraph import errors
from tenxgraph.core import Agent, StateGraph
from tenxgraph.core.graph._interrupt import interrupt
from tenxgraph.core.graph._tools import Tool
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.state import (
    AgentState,
    AppState,
    CharEstimateCounter,
    Message,
    SlidingWindowContextManager,
    SummaryContextManager,
    truncate_largest_tool_results,
)
from tenxgraph.core.state.message_block import TextBlock
from tenxgraph.core.state.reducers import MessageIndex
from tenxgraph.errors import (
    ConfigError,
    GraphRunError,
    ModelError,
    StateError,
    TenxGraphError,
    ThreadBusyError,
    ToolArgumentsError,
    UsageError,
    http_status,
)
from tenxgraph.storage.checkpointer import InMemoryCheckpointer, SqliteCheckpointer

PACKAGE = Path(__file__).resolve().parents[1] / "tenxgraph"
BUILTIN_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)

ALLOWED_BUILTIN_RAISES = {
    ("core/state/message_block.py", "check_base64"): (
        "called only from MediaRef/DataBlock model validators: pydantic turns the "
        "ValueError into a ValidationError naming the field"
    ),
    ("core/state/message_block.py", "_valid_text"): "after-validator of the Text field type",
    ("core/state/json_policy.py", "check_json_data"): (
        "body of the JSON-data field validators; parse_tool_arguments catches it"
    ),
    ("core/state/json_policy.py", "json_text"): (
        "like json.dumps; each caller raises its own error naming what held the value"
    ),
    ("core/state/json_policy.py", "_no_constant"): (
        "json.loads parse_constant hook: parse_json raises ValueError as json.loads does"
    ),
    **{
        (module, hook): "NotImplementedError of a suite's hook the user's test class overrides"
        for module, hook in [
            ("testing/_checkpointer_base.py", "make_checkpointer"),
            ("testing/chat_models.py", "model"),
            ("testing/chat_models.py", "queue_text"),
            ("testing/chat_models.py", "queue_tool_call"),
            ("testing/chat_models.py", "queue_error"),
        ]
    },
}
"""(module under tenxgraph/, function) -> why it raises a builtin exception."""

VALIDATOR_DECORATORS = frozenset({"field_validator", "model_validator"})
"""Pydantic turns a ValueError raised in these into a ValidationError naming the field."""

ALLOWED_EXCEPTION_CLASSES = {
    ("errors.py", "TenxGraphError"): "the root itself",
    ("core/graph/_interrupt.py", "GraphInterrupt"): (
        "not an error: the signal interrupt() uses to pause; the runtime always catches it"
    ),
    ("core/llm/_convert_openai.py", "_Unsupported"): "private, caught in its own module",
}
"""Exception classes outside the TenxGraphError tree, with why."""


def _decorator_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute):
            names.add(target.attr)
        elif isinstance(target, ast.Name):
            names.add(target.id)
    return names


class _RaiseScanner(ast.NodeVisitor):
    """Collects ``raise <builtin exception>`` sites with their innermost function."""

    def __init__(self) -> None:
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.found: list[tuple[int, str, ast.FunctionDef | ast.AsyncFunctionDef | None]] = []

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node)
        self.generic_visit(node)
        self.functions.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Raise(self, node: ast.Raise) -> None:
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(raised, ast.Attribute) and isinstance(raised.value, ast.Name):
            name = raised.attr if raised.value.id == "builtins" else ""
        else:
            name = raised.id if isinstance(raised, ast.Name) else ""
        if name in BUILTIN_EXCEPTIONS:
            self.found.append((node.lineno, name, self.functions[-1] if self.functions else None))
        self.generic_visit(node)


def _builtin_raises() -> list[tuple[str, int, str, ast.FunctionDef | ast.AsyncFunctionDef | None]]:
    sites = []
    for path in sorted(PACKAGE.rglob("*.py")):
        scanner = _RaiseScanner()
        scanner.visit(ast.parse(path.read_text(), str(path)))
        module = path.relative_to(PACKAGE).as_posix()
        sites += [(module, line, name, function) for line, name, function in scanner.found]
    return sites


def _allowed(
    module: str, name: str, function: ast.FunctionDef | ast.AsyncFunctionDef | None
) -> bool:
    if function is None:
        return False
    if function.name == "__getattr__" and name == "AttributeError":
        return True  # the module/attribute protocol requires exactly this exception
    if name == "ValueError" and _decorator_names(function) & VALIDATOR_DECORATORS:
        return True
    return (module, function.name) in ALLOWED_BUILTIN_RAISES


def test_the_package_raises_no_builtin_exception() -> None:
    bare = [
        f"tenxgraph/{module}:{line}: raise {name} in {function.name if function else '<module>'}"
        for module, line, name, function in _builtin_raises()
        if not _allowed(module, name, function)
    ]
    assert not bare, (
        "raise a tenxgraph.errors class instead (ConfigError for a bad option or argument, "
        "UsageError for a call in the wrong place...):\n" + "\n".join(bare)
    )


def test_every_allowlisted_builtin_raise_still_exists() -> None:
    used = {(module, function.name) for module, _, _, function in _builtin_raises() if function}
    stale = sorted(set(ALLOWED_BUILTIN_RAISES) - used)
    assert not stale, f"remove these from ALLOWED_BUILTIN_RAISES: {stale}"


def test_the_scan_finds_a_bare_raise() -> None:
    scanner = _RaiseScanner()
    scanner.visit(
        ast.parse(
            "def f(x):\n    if x:\n        raise ValueError('no')\n    raise builtins.TypeError\n"
            "def g():\n    raise ConfigError('fine')\n"
        )
    )
    assert [(line, name) for line, name, _ in scanner.found] == [
        (3, "ValueError"),
        (4, "TypeError"),
    ]
    assert not _allowed("x.py", "ValueError", scanner.found[0][2])


def test_every_exception_class_of_the_package_is_under_the_root() -> None:
    library = {name for name in errors.__all__ if name[0].isupper()} | {"TenxGraphError"}
    outside = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {base.id for base in node.bases if isinstance(base, ast.Name)}
            known = (module, node.name) in ALLOWED_EXCEPTION_CLASSES
            if bases & BUILTIN_EXCEPTIONS and not bases & library and not known:
                outside.append(f"tenxgraph/{module}: class {node.name}")
    assert not outside, "derive these from a tenxgraph.errors class:\n" + "\n".join(outside)


def _written_tree() -> dict[str, str]:
    """Each class of the tree at the top of errors.py -> its parent there."""
    doc = errors.__doc__ or ""
    lines = doc.split("\n\n")[1].splitlines()
    assert lines[0].strip() == "TenxGraphError"
    parents: dict[str, str] = {}
    path = ["TenxGraphError"]
    for line in lines[1:]:
        if "── " not in line:
            continue  # a description running on
        depth = line.index("── ") // 4
        name = line.split("── ", 1)[1].split()[0]
        del path[depth:]
        parents[name] = path[-1]
        path.append(name)
    return parents


def test_the_written_tree_matches_the_classes() -> None:
    written = _written_tree()
    actual = {
        name: cls.__bases__[0].__name__
        for name, cls in vars(errors).items()
        if inspect.isclass(cls) and issubclass(cls, TenxGraphError) and cls is not TenxGraphError
    }
    assert written == actual
    assert set(written) | {"TenxGraphError"} == {n for n in errors.__all__ if n[0].isupper()} - {
        "HTTP_STATUS"
    }


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.ConfigError("x"), 400),
        (errors.InvalidIdError("x"), 400),
        (errors.StateError("x"), 422),
        (errors.ToolArgumentsError("x"), 422),
        (errors.ThreadNotFoundError("x"), 404),
        (errors.ConflictError("t", 1, 2), 409),
        (errors.ThreadBusyError("t"), 409),
        (errors.RateLimitError("x"), 429),
        (errors.ModelError("x"), 502),
        (errors.AuthenticationError("x"), 502),
        (errors.OutputValidationError("x"), 502),
        (errors.ModelTimeoutError("x"), 504),
        (errors.StorageUnavailableError("x"), 503),
        (errors.StorageError("x"), 500),
        (errors.CorruptRecordError("x"), 500),
        (errors.NodeError("n", "x"), 500),
        (errors.GraphBuildError("x"), 500),
        (errors.UsageError("x"), 500),
        (errors.TenxGraphError("x"), 500),
        (KeyError("x"), 500),
    ],
)
def test_http_status_of_each_error(error: BaseException, status: int) -> None:
    assert http_status(error) == status


def test_http_status_walks_the_mro_of_user_subclasses() -> None:
    class TenantMissing(errors.ThreadNotFoundError):
        pass

    class SlowModel(errors.ModelTimeoutError):
        pass

    assert http_status(TenantMissing("x")) == 404
    assert http_status(SlowModel("x")) == 504  # the closest class wins over ModelError's 502


def test_library_errors_keep_their_builtin_bases() -> None:
    assert issubclass(ConfigError, ValueError)
    assert issubclass(StateError, ValueError)
    assert issubclass(ToolArgumentsError, ValueError)
    assert issubclass(UsageError, RuntimeError)
    assert issubclass(ThreadBusyError, errors.ConflictError)
    busy = ThreadBusyError("t1", "run r2 holds the lease")
    assert (busy.thread_id, busy.expected, busy.actual) == ("t1", None, None)
    assert str(busy) == "thread 't1' is busy: another run holds it: run r2 holds the lease"


# The sites that raised builtins before, as a caller meets them.


def test_bad_options_raise_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="keep_checkpoints"):
        InMemoryCheckpointer(keep_checkpoints=0)
    with pytest.raises(ConfigError, match="keep_checkpoints"):
        SqliteCheckpointer(tmp_path / "db.sqlite", keep_checkpoints=0)
    with pytest.raises(ConfigError, match="window_size"):
        SlidingWindowContextManager(window_size=0)
    with pytest.raises(ConfigError, match="summary_prompt"):
        SummaryContextManager(model="gemini-2.5-flash", summary_prompt="  ")
    with pytest.raises(ConfigError, match="chars_per_token"):
        CharEstimateCounter(0)
    with pytest.raises(ConfigError, match="keep_ratio"):
        truncate_largest_tool_results([], keep_ratio=1.5)
    with pytest.raises(ConfigError, match="hand_over"):
        MessageIndex([Message.text_message("hi")]).hand_over([])


def test_a_bad_page_raises_config_error() -> None:
    saver = InMemoryCheckpointer()
    with pytest.raises(ConfigError, match="offset"):
        asyncio.run(saver.alist_threads(offset=-1))
    with pytest.raises(ConfigError, match="limit"):
        asyncio.run(saver.alist_threads(limit=-1))


def test_a_file_too_large_to_inline_raises_config_error(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("x" * 100)
    with pytest.raises(ConfigError, match="inline limit"):
        Message.from_file(big, max_inline_bytes=10)


def test_app_state_refuses_non_json_with_state_error_and_validation_error() -> None:
    with pytest.raises(StateError, match="not JSON-serializable"):
        AppState().set("when", object())
    with pytest.raises(ValidationError, match="'ratio' is not JSON-serializable"):
        AppState.model_validate({"ratio": float("nan")})


def test_interrupt_outside_a_node_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="inside a running graph node"):
        interrupt("approve?")


def test_tool_validate_raises_tool_arguments_error() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(ToolArgumentsError, match="invalid arguments for tool 'add'"):
        Tool(add).validate({"a": "one"})


class _DeltasOnly(ChatModel):
    """A custom model that breaks the contract: deltas, never the complete message."""

    provider = "custom"
    model = "deltas-only"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        yield Message(role="assistant", content=[TextBlock(text="hal")], delta=True)


def test_a_stream_without_a_complete_message_is_a_model_error() -> None:
    model = _DeltasOnly()
    with pytest.raises(ModelError, match=r"_DeltasOnly\.stream ended without a complete message"):
        asyncio.run(model.complete(ModelRequest(messages=[Message.text_message("hi")])))

    graph = StateGraph(AgentState)
    graph.add_node("main", Agent(model=model))
    graph.set_entry_point("main")
    with pytest.raises(ModelError, match="'deltas-only' returned no complete message"):
        graph.compile().invoke({"messages": [Message.text_message("hi")]})


def test_graph_run_error_is_the_run_failure_base() -> None:
    assert issubclass(errors.RunStoppedError, GraphRunError)
    assert issubclass(errors.WorkersExhaustedError, GraphRunError)
