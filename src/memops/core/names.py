"""Names that become folders under ``outputs/`` (folds, holdouts, runs, models), checked before
any work starts: an unknown name should fail in a second, not after a build, and no name may
climb out of ``outputs/``."""

from __future__ import annotations

import re
from collections.abc import Iterable

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def safe_name(field: str, value: str) -> str:
    if not SAFE_NAME.fullmatch(value):
        raise ValueError(
            f"{field}={value!r}: a name here becomes a folder, so it takes letters, digits, '.', '_' "
            "and '-' only, starting with a letter or digit"
        )
    return value


def safe_path(field: str, value: str) -> str:
    """A relative folder path of safe names (``run=tiny-hf/folds/patch-guardrails``, as the Slurm
    eval jobs name their part of a run): no ``..``, no absolute path."""
    for part in value.split("/"):
        if not SAFE_NAME.fullmatch(part):
            raise ValueError(
                f"{field}={value!r}: each part of it becomes a folder, so it takes letters, digits, "
                "'.', '_' and '-' only, starting with a letter or digit, parts joined by '/'"
            )
    return value


def known_names(field: str, values: Iterable[str], allowed: Iterable[str]) -> None:
    allowed = list(allowed)
    if unknown := [v for v in values if v not in allowed]:
        raise ValueError(f"{field}: unknown {unknown}; expected some of {', '.join(allowed)}")
