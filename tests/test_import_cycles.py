"""No import cycles between tenxgraph's modules, and no reaching into another package's privates.

A cycle works only while the import order happens to suit it and breaks on
the next innocent import; it also means two modules cannot be understood
apart. Every import counts, those inside functions too (an import put in a
function to dodge a cycle is still the cycle); for cycles, those under
``if TYPE_CHECKING:`` do not, since they never run, while for reaching into
privates they do (a type names its owner as surely as a call). The graph is
grimp's, the library under import-linter, which checks the floors themselves
(``lint-imports``, contracts in pyproject.toml).
"""

from __future__ import annotations

import grimp
import pytest

ALLOWED_PRIVATE_IMPORTS: set[tuple[str, str]] = set()
"""(importer, private module) pairs of ``server`` not yet on a public path."""

KNOWN_CYCLES: list[list[str]] = []
"""Cycles that exist today, sorted as ``cycles`` returns them. Entries leave, none arrive."""


def import_graph(*, typing: bool) -> dict[str, set[str]]:
    """Module -> modules it imports; with ``typing``, imports under TYPE_CHECKING too."""
    built = grimp.build_graph("tenxgraph", cache_dir=None, exclude_type_checking_imports=not typing)
    return {name: set(built.find_modules_directly_imported_by(name)) for name in built.modules}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(typing=False)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import graph's cycles: each strongly connected set of two or more modules, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            part = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(part) > 1:
                found.append(sorted(part))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def private_owner(module: str) -> str | None:
    """The package a module is private to (``a.b._c.d`` -> ``a.b``), or None if it is public."""
    parts = module.split(".")
    for position, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:position])
    return None


def private_imports(graph: dict[str, set[str]], importers: str) -> set[tuple[str, str]]:
    """Imports by modules under ``importers`` of modules private to a package they are not in."""
    found = set()
    for module, targets in graph.items():
        if module != importers and not module.startswith(importers + "."):
            continue
        for target in targets:
            owner = private_owner(target)
            if owner is not None and module != owner and not module.startswith(owner + "."):
                found.add((module, target))
    return found


def test_no_module_imports_itself_through_others(graph: dict[str, set[str]]) -> None:
    found = cycles(graph)
    new = [cycle for cycle in found if cycle not in KNOWN_CYCLES]
    assert not new, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in new)
    gone = [cycle for cycle in KNOWN_CYCLES if cycle not in found]
    assert not gone, f"gone: remove them from KNOWN_CYCLES: {gone}"


def test_the_graph_counts_imports_inside_functions(graph: dict[str, set[str]]) -> None:
    assert "tenxgraph.core.graph._session" in graph["tenxgraph.core.graph._thread_ops"]
    # StateGraph.compile imports CompiledGraph inside the method; the module top only for typing.
    assert "tenxgraph.core.graph._compiled" in graph["tenxgraph.core.graph._builder"]


def test_the_server_reaches_no_private_module_of_another_package() -> None:
    found = private_imports(import_graph(typing=True), "tenxgraph.server")
    assert found - ALLOWED_PRIVATE_IMPORTS == set(), "new private imports"
    assert ALLOWED_PRIVATE_IMPORTS - found == set(), "gone: remove them from the allowed list"


def test_the_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_check_finds_a_private_import() -> None:
    graph = {
        "tenxgraph.server.x": {"tenxgraph.core.graph._y", "tenxgraph.server._z"},
        "tenxgraph.core.graph.w": {"tenxgraph.core.graph._y"},
    }
    assert private_imports(graph, "tenxgraph.server") == {
        ("tenxgraph.server.x", "tenxgraph.core.graph._y")
    }
    assert private_owner("tenxgraph.core.graph._y.z") == "tenxgraph.core.graph"
    assert private_owner("tenxgraph.core.__init__") is None


def test_the_data_model_imports_no_upper_layer_even_for_typing_or_inside_functions() -> None:
    """``core.state`` is the bottom floor: its every import counts, not only module-level ones.

    (``core.llm`` is left out: the summary context manager still resolves a model name.)
    """
    upper = ("tenxgraph.storage", "tenxgraph.core.graph", "tenxgraph.server", "tenxgraph.runs")
    found = [
        f"{module} -> {target}"
        for module, targets in sorted(import_graph(typing=True).items())
        if module.startswith("tenxgraph.core.state")
        for target in sorted(targets)
        if any(target == name or target.startswith(name + ".") for name in upper)
    ]
    assert not found, "the data model imports upward:\n" + "\n".join(found)
