"""No import cycles between tenxgraph's modules.

A cycle works only while the import order happens to suit it and breaks on
the next innocent import; it also means two modules cannot be understood
apart. Module-level imports count (those under ``if TYPE_CHECKING:`` do
not, nor imports inside functions). ``from package import name`` depends on
``package.name`` when that is a module, else on the package.

The layers of DESIGN.md ("Imports point downward only") are checked on the
same graph: ``server`` over ``graph`` over ``llm`` and ``storage``, both
over ``state``, and ``llm`` and ``storage`` apart.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import tenxgraph

ROOT = Path(tenxgraph.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.Module) -> Iterator[tuple[str, str | None]]:
    """(module, name) pairs of the module-level tenxgraph imports."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tenxgraph"):
            yield from ((str(node.module), alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from ((a.name, None) for a in node.names if a.name.startswith("tenxgraph"))


def import_graph() -> dict[str, set[str]]:
    trees = {module_name(path): ast.parse(path.read_text()) for path in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, tree in trees.items():
        targets = set()
        for module, member in imported(tree):
            submodule = f"{module}.{member}"
            targets.add(submodule if submodule in trees else module)
        graph[name] = {target for target in targets if target in trees and target != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path (first module repeated at the end), or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for target in sorted(graph[module]):
            cycle = visit(target, [*path, module])
            if cycle is not None:
                return cycle
        done.add(module)
        return None

    for module in sorted(graph):
        cycle = visit(module, [])
        if cycle is not None:
            return cycle
    return None


def test_no_module_imports_itself_through_others() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_graph_holds_the_real_imports() -> None:
    graph = import_graph()
    assert "tenxgraph.core.graph._session" in graph["tenxgraph.core.graph._compiled"]
    compiled = graph["tenxgraph.core.graph._compiled"]
    assert "tenxgraph.core.graph._builder" not in compiled  # imported for typing only


FORBIDDEN = {
    "tenxgraph.core.state": ("core.graph", "core.llm", "storage", "server"),
    "tenxgraph.core.llm": ("core.graph", "storage", "server"),
    "tenxgraph.storage": ("core.graph", "core.llm", "server"),
    "tenxgraph.core.graph": ("server",),
}
"""Each layer and the packages (under ``tenxgraph.``) it must not import."""


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """``module -> target`` for each import that points up or sideways between layers."""
    found = []
    for module, targets in sorted(graph.items()):
        for layer, forbidden in FORBIDDEN.items():
            if module != layer and not module.startswith(layer + "."):
                continue
            bad = [f"tenxgraph.{name}" for name in forbidden]
            found += [
                f"{module} -> {target}"
                for target in sorted(targets)
                if any(target == b or target.startswith(b + ".") for b in bad)
            ]
    return found


def test_imports_point_downward() -> None:
    violations = layer_violations(import_graph())
    assert not violations, "imports against the layers:\n" + "\n".join(violations)


def test_the_layer_check_finds_an_upward_import() -> None:
    graph = {"tenxgraph.core.llm.x": {"tenxgraph.storage.longterm.embedding"}}
    assert layer_violations(graph) == [
        "tenxgraph.core.llm.x -> tenxgraph.storage.longterm.embedding"
    ]
    assert layer_violations({"tenxgraph.storage.y": {"tenxgraph.core.state.z"}}) == []


def test_the_check_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_data_model_imports_no_upper_layer_even_for_typing_or_inside_functions() -> None:
    """``core.state`` is the bottom floor: its every import counts, not only module-level ones.

    (``core.llm`` is left out: the summary context manager still calls a model.)
    """
    upper = ("tenxgraph.storage", "tenxgraph.core.graph", "tenxgraph.server")
    found = []
    for path in sorted((ROOT / "core" / "state").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            found += [
                f"{module_name(path)} -> {module}"
                for module in modules
                if any(module == name or module.startswith(name + ".") for name in upper)
            ]
    assert not found, "the data model imports upward:\n" + "\n".join(found)
