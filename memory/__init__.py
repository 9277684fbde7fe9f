"""The symbolic memory engine. Pure Python: no ML library is imported here."""

from memory.checker import Finding, Violation, check
from memory.claims import DEFAULT_BRANCH, DEFAULT_ENV, ENVS, Claim, Key, norm
from memory.compare import RELATIONS, WINNERS, compare
from memory.evidence import (
    COMMIT_BONUS,
    EVIDENCE_TYPES,
    EVIDENCE_WEIGHTS,
    Evidence,
    UnknownEvidenceType,
    evidence_score,
)
from memory.state import ACTIONS, Decision, Entry, Item, StateMemory, Transition, keep_current
from memory.status import IllegalTransition, Status, advance

__all__ = [
    "ACTIONS",
    "COMMIT_BONUS",
    "DEFAULT_BRANCH",
    "DEFAULT_ENV",
    "ENVS",
    "EVIDENCE_TYPES",
    "EVIDENCE_WEIGHTS",
    "RELATIONS",
    "WINNERS",
    "Claim",
    "Decision",
    "Entry",
    "Evidence",
    "Finding",
    "IllegalTransition",
    "Item",
    "Key",
    "StateMemory",
    "Status",
    "Transition",
    "UnknownEvidenceType",
    "Violation",
    "advance",
    "check",
    "compare",
    "evidence_score",
    "keep_current",
    "norm",
]
