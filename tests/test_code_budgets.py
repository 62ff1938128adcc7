"""Size budgets for the package: modules of at most 600 lines, functions of at most 80.

Complexity (at most 12 per function) is ruff's C901, configured in
pyproject.toml; these two limits have no ruff rule, so they are checked here.
A module or function over budget is a sign it holds more than one job.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tenxgraph"
MODULE_LINES = 600
FUNCTION_LINES = 80


def test_modules_and_functions_stay_within_budget() -> None:
    over = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text()
        name = path.relative_to(PACKAGE.parent)
        lines = source.count("\n")
        if lines > MODULE_LINES:
            over.append(f"{name}: {lines} lines (module budget {MODULE_LINES})")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    over.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    assert not over, "over budget:\n" + "\n".join(over)
