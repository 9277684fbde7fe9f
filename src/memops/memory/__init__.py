"""The symbolic memory engine. Pure Python: no ML library is imported here."""

from memops.memory.checker import Finding, Violation, check
from memops.memory.claims import DEFAULT_BRANCH, DEFAULT_ENV, ENVS, Claim, Key, norm
from memops.memory.compare import RELATIONS, WINNERS, compare
from memops.memory.evidence import (
    COMMIT_BONUS,
    EVIDENCE_TYPES,
    EVIDENCE_WEIGHTS,
    Evidence,
    UnknownEvidenceType,
    evidence_score,
)
from memops.memory.state import ACTIONS, Decision, Entry, Item, StateMemory, Transition, keep_current
from memops.memory.status import IllegalTransition, Status, advance

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
