"""What a fresh process loads: packages import their exports on first use, not up front.

Startup time is measured by ``bench/startup.py``, never asserted here. What
is asserted is the cause of slow starts: which modules an import pulls in,
checked in a child process (``sys.modules`` of this one holds everything the
other tests imported). And since the exports are resolved by name at run
time, every lazily exported name must be the object the ``TYPE_CHECKING``
import (what type checkers see) names.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest

import tenxgraph
from tenxgraph.core.state import ThreadKey
from tenxgraph.utils._lazy import lazy_exports

ROOT = Path(tenxgraph.__file__).parent

SDKS = (
    "openai",
    "anthropic",
    "google.genai",
    "llama_cpp",
    "tiktoken",
    "httpx",
    "onnxruntime",
    "onnx",
    "tokenizers",
)
BACKENDS = ("sqlite3", "psycopg", "psycopg_pool", "redis")
OPTIONAL_RUNTIME = (
    "tenxgraph.storage.checkpointer.memory",
    "tenxgraph.storage.checkpointer.sqlite",
    "tenxgraph.storage.checkpointer.postgres",
    "tenxgraph.storage.checkpointer.redis_cache",
    "tenxgraph.storage.sql",
    "tenxgraph.core.state.context.tiktoken_counter",
)


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


def present(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Those of ``names`` (or their submodules) in ``modules``."""
    return sorted(n for n in names if n in modules or any(m.startswith(n + ".") for m in modules))


@pytest.mark.parametrize(
    "code",
    [
        "import tenxgraph",
        "import tenxgraph.core.graph",
        "import tenxgraph.core.state",
        "import tenxgraph.storage.checkpointer",
    ],
)
def test_importing_a_package_loads_no_model_and_no_event_loop(code: str) -> None:
    modules = loaded_after(code)
    assert present(modules, ("pydantic", "asyncio", *BACKENDS, *SDKS)) == []


def test_the_whole_runtime_surface_loads_no_backend_sdk_or_optional_module() -> None:
    modules = loaded_after(
        "from tenxgraph import *\nfrom tenxgraph.core.graph import *\n"
        "from tenxgraph.core.state import ThreadKey\n"
        "from tenxgraph.storage.checkpointer import Checkpointer"
    )
    assert "tenxgraph.core.graph._compiled" in modules  # the probe did load the runtime
    assert present(modules, (*BACKENDS, *SDKS, *OPTIONAL_RUNTIME)) == []


def test_the_message_model_loads_without_the_runtime() -> None:
    modules = loaded_after("from tenxgraph.core.state import Message")
    assert "tenxgraph.core.state.message" in modules
    assert present(modules, ("asyncio", "tenxgraph.core.graph", "tenxgraph.storage")) == []


def test_the_in_memory_checkpointer_does_not_load_sqlite() -> None:
    modules = loaded_after("from tenxgraph.storage.checkpointer import InMemoryCheckpointer")
    assert present(modules, BACKENDS) == []


def test_cli_help_loads_neither_pydantic_nor_asyncio() -> None:
    modules = loaded_after(
        "import contextlib, io\nfrom tenxgraph.cli.main import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])"
    )
    assert "tenxgraph.cli.main" in modules
    assert present(modules, ("pydantic", "asyncio", "tenxgraph.core")) == []


def test_the_default_model_commands_check_their_options_without_the_model_layer() -> None:
    modules = loaded_after(
        "from tenxgraph.cli.options import ChatOptions, check_options\n"
        "check_options(ChatOptions())\ncheck_options(ChatOptions(model='test-echo'))"
    )
    assert present(modules, ("pydantic", "asyncio", "tenxgraph.core")) == []


def lazy_packages() -> dict[str, tuple[dict[str, str], set[str]]]:
    """Each package whose exports load on first use -> ({typed name: module}, eager names).

    The typed names are those its ``if TYPE_CHECKING:`` block imports; the
    eager ones those its other top-level statements define.
    """
    packages: dict[str, tuple[dict[str, str], set[str]]] = {}
    for path in sorted(ROOT.rglob("__init__.py")):
        source = path.read_text()
        if "lazy_exports(" not in source:
            continue
        typed: dict[str, str] = {}
        eager: set[str] = set()
        for node in ast.parse(source).body:
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                for item in node.body:
                    assert isinstance(item, ast.ImportFrom), ast.unparse(item)
                    typed.update((alias.name, str(item.module)) for alias in item.names)
            elif isinstance(node, ast.ImportFrom):
                eager.update(alias.asname or alias.name for alias in node.names)
            elif isinstance(node, ast.Assign):
                eager.update(t.id for t in node.targets if isinstance(t, ast.Name))
        name = ".".join(path.relative_to(ROOT.parent).parent.parts)
        packages[name] = (typed, eager)
    return packages


def test_the_scan_finds_the_lazy_packages() -> None:
    assert {"tenxgraph", "tenxgraph.core.graph", "tenxgraph.core.state"} <= set(lazy_packages())


@pytest.mark.parametrize("package", sorted(lazy_packages()))
def test_each_lazy_export_is_what_type_checkers_see(package: str) -> None:
    typed, eager = lazy_packages()[package]
    module = importlib.import_module(package)
    untyped = sorted(set(module.__all__) - set(typed) - eager)
    assert not untyped, f"{package} exports {untyped} without a TYPE_CHECKING import"
    for name in module.__all__:
        assert name in dir(module)
        if name in typed:
            source = importlib.import_module(typed[name])
            assert getattr(module, name) is getattr(source, name), f"{package}.{name}"


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    with pytest.raises(AttributeError, match=r"'tenxgraph\.core\.graph' has no attribute 'Nope'"):
        _ = importlib.import_module("tenxgraph.core.graph").Nope
    with pytest.raises(ImportError):
        exec("from tenxgraph.core.state import Nope", {})


def test_a_moved_name_warns_once_naming_its_new_home_and_is_the_same_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = types.ModuleType("old_home")
    old.__path__ = []  # a package: the import system reads the name first (_handle_fromlist)
    monkeypatch.setitem(sys.modules, "old_home", old)
    hooks = lazy_exports("old_home", {}, moved={"ThreadKey": "tenxgraph.core.state"})
    old.__dict__.update(zip(("__getattr__", "__dir__"), hooks, strict=True))
    assert "ThreadKey" not in dir(old)
    with pytest.warns(DeprecationWarning, match="moved") as caught:
        from old_home import ThreadKey as first  # type: ignore[import-not-found]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = old.ThreadKey  # a second read: no warning
    assert [str(w.message) for w in caught] == [
        "old_home.ThreadKey moved to tenxgraph.core.state.ThreadKey; "
        "import it from tenxgraph.core.state"
    ]
    assert caught[0].filename == __file__  # the importing line, not the import system
    assert first is again is ThreadKey


@pytest.mark.parametrize("name", ["DEFAULT_USER", "ThreadKey", "run_config"])
def test_the_checkpointer_package_keeps_its_moved_names_as_deprecated_aliases(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = importlib.import_module("tenxgraph.storage.checkpointer")
    monkeypatch.delitem(package.__dict__, name, raising=False)  # as in a fresh process
    namespace: dict[str, object] = {}
    with pytest.warns(DeprecationWarning, match=rf"tenxgraph\.core\.state\.{name}\b"):
        exec(f"from tenxgraph.storage.checkpointer import {name} as value", namespace)
    assert namespace["value"] is getattr(importlib.import_module("tenxgraph.core.state"), name)
    assert name not in package.__all__
