"""Imports run only downward: a package may import the engine and the packages below it, never
one above it, so each layer can be read, tested and replaced without the ones that use it."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

LAYERS = ("memory", "core", "operators", "data", "train", "eval", "slurm")
"""Lowest first: the engine, the shared records and layout, the operators, the data builders,
training, the evaluation harness (which trains what it lacks), the Slurm submitter."""


def imported_packages(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names & set(LAYERS)


def test_no_package_imports_one_above_its_layer() -> None:
    upward = []
    for rank, package in enumerate(LAYERS):
        for path in sorted((ROOT / package).rglob("*.py")):
            above = [p for p in imported_packages(path) if LAYERS.index(p) > rank]
            upward += [f"{path.relative_to(ROOT)} imports {p}" for p in sorted(above)]
    assert not upward, "\n".join(upward)
