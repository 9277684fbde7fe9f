"""Evidence types, their trust weights and the claim score.

This module is the only place the weight table lives: the engine, the data builders and
the prompts all read it from here, so a change of policy is a one-line change.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from memops.memory.lines import OneLine

EVIDENCE_WEIGHTS: dict[str, int] = {
    "code-change": 60,
    "incident-hotfix": 60,
    "config-observation": 45,
    "runtime-observation": 40,
    "branch-experiment": 25,
    "human-note": 12,
    "stale-observation": 4,
}
"""Trust of each evidence type; a claim backed by a commit earns ``COMMIT_BONUS`` on top."""

EVIDENCE_TYPES: tuple[str, ...] = tuple(EVIDENCE_WEIGHTS)
CHANGE_EVIDENCE: tuple[str, ...] = ("code-change", "incident-hotfix")
"""The types of a change a commit made: what a commit's own diff is evidence of."""
WITNESS_EVIDENCE: tuple[str, ...] = tuple(t for t in EVIDENCE_TYPES if t not in CHANGE_EVIDENCE)
"""The types a note with no commit may carry: it saw or was told of a value, and a change a
commit made is a commit's to show (no claim of a note without one is a change in any gold)."""
COMMIT_BONUS = 40

_HEX = re.compile(r"[0-9a-f]{4,40}")


class UnknownEvidenceType(ValueError):
    """Raised for an evidence type outside the table, so typos never get a silent weight."""


def check_evidence_type(value: str) -> str:
    if value not in EVIDENCE_WEIGHTS:
        raise UnknownEvidenceType(
            f"unknown evidence type {value!r}; expected one of: {', '.join(EVIDENCE_TYPES)}"
        )
    return value


def _check_commit(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().lower()
    if not _HEX.fullmatch(value):
        raise ValueError(f"commit must be 4-40 hex digits, got {value!r}")
    return value


EvidenceTypeName = Annotated[str, AfterValidator(check_evidence_type)]


class Evidence(BaseModel):
    """Why a claim is believed: what kind of observation, and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: EvidenceTypeName
    commit: Annotated[str | None, AfterValidator(_check_commit)] = None
    source: OneLine | None = Field(default=None, min_length=1)
    files: tuple[OneLine, ...] = ()

    @property
    def score(self) -> int:
        return evidence_score(self.type, self.commit)


def evidence_score(evidence_type: str, commit: str | None) -> int:
    """``s(z) = w(type) + 40·[commit is not null]`` (docs/design.md §3)."""
    return EVIDENCE_WEIGHTS[evidence_type] + (COMMIT_BONUS if commit is not None else 0)
