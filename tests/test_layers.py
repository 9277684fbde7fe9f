"""Imports run only downward: a package may import the engine and the packages below it, never
one above it, so each layer can be read, tested and replaced without the ones that use it."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import PACKAGE

LAYERS = ("memory", "core", "operators", "data", "train", "eval", "slurm", "track", "cli")
"""Lowest first: the engine, the shared records and layout, the operators, the data builders,
training, the evaluation harness (which trains what it lacks), the Slurm submitter, the memory
as a component, and the ``memops`` command on top. A package's ``__main__.py`` is an entry
point, not part of its layer."""


def imported_layers(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    parts = [m.split(".") for m in modules]
    return {p[1] for p in parts if len(p) > 1 and p[0] == "memops" and p[1] in LAYERS}


def test_every_package_of_memops_has_a_layer() -> None:
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages == set(LAYERS)


def test_no_package_imports_one_above_its_layer() -> None:
    upward = []
    for rank, package in enumerate(LAYERS):
        for path in sorted((PACKAGE / package).rglob("*.py")):
            if path.name == "__main__.py":
                continue
            above = [p for p in imported_layers(path) if LAYERS.index(p) > rank]
            upward += [f"{path.relative_to(PACKAGE)} imports {p}" for p in sorted(above)]
    assert not upward, "\n".join(upward)


def test_nothing_is_installed_outside_the_memops_namespace() -> None:
    """Only ``memops`` is a top-level package: no ``data`` or ``train`` lands in a user's env."""
    top = {p.name for p in PACKAGE.parent.iterdir() if (p / "__init__.py").exists() or p.suffix == ".py"}
    assert top == {"memops"}
