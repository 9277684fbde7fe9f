"""Which optional extra of the package provides a module, read from the package's own metadata.

The base install (``pip install memops``) runs the symbolic path: the engine, the data build,
``loo backend=symbolic``, replays, reports, ``mine`` and ``export-commits``. Training, the ``hf``
and ``vllm`` backends and the models need an extra (``pyproject.toml``'s
``[project.optional-dependencies]``, the one list of them). A command that reaches a module of a
missing extra is ended by the CLI with one line naming it, not a traceback.
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from importlib import metadata

PACKAGE = "memops"


class MissingExtra(RuntimeError):
    """A module this work needs is not installed; the message says which extra brings it."""


@cache
def extra_of_distribution() -> dict[str, str]:
    """Each optional dependency's import name (its distribution name, as an identifier) and the
    first extra that lists it."""
    try:
        requires = metadata.requires(PACKAGE) or []
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return {}
    found: dict[str, str] = {}
    for line in requires:
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", line)
        name = re.match(r"[A-Za-z0-9_.-]+", line)
        if extra and name:
            found.setdefault(name.group().lower().replace("-", "_").replace(".", "_"), extra.group(1))
    return found


def missing_extra(exc: ModuleNotFoundError) -> MissingExtra | None:
    """The one-line error for an import that failed because an extra is not installed, or None
    when the missing module is no extra's (a genuine bug, which keeps its traceback)."""
    root = (exc.name or "").split(".")[0]
    extra = extra_of_distribution().get(root.lower())
    if extra is None:
        return None
    return MissingExtra(
        f"this needs the {extra} extra ({root} is not installed): pip install '{PACKAGE}[{extra}]'"
    )


def installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (torch takes seconds)."""
    return importlib.util.find_spec(module) is not None
