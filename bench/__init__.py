"""Benchmarks for the budgets of DESIGN.md; each module has ``run() -> dict``."""
