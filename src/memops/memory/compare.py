"""The symbolic compare rule (docs/design.md §4): how two claims relate, and which one should win.

``first`` is the claim already in memory, ``second`` the incoming one. The winner follows the
update rule's order (evidence score, then recency) and is ``none`` on an exact tie, where only
a judge could decide.
"""

from __future__ import annotations

from typing import Literal

from memops.memory.claims import Claim

Relation = Literal["equivalent", "conflicting", "different_scope", "unrelated"]
Winner = Literal["first", "second", "none"]
RELATIONS: tuple[Relation, ...] = ("equivalent", "conflicting", "different_scope", "unrelated")
WINNERS: tuple[Winner, ...] = ("first", "second", "none")


def compare(first: Claim, second: Claim) -> tuple[Relation, Winner]:
    keys = scope(first, second)
    if keys is not None:
        return keys, "none"
    if first.norm_value == second.norm_value:
        return "equivalent", "none"
    return "conflicting", order(first, second)


def scope(first: Claim, second: Claim) -> Relation | None:
    """The relation the claims' keys decide alone (another slot, another branch or env), or
    None when they share a key and only their values can tell."""
    if (first.entity, first.slot) != (second.entity, second.slot):
        return "unrelated"
    if (first.branch, first.env) != (second.branch, second.env):
        return "different_scope"
    return None


def order(first: Claim, second: Claim) -> Winner:
    """Which of two claims at one key wins were their values to conflict: the higher evidence
    score, then the more recent; ``none`` on an exact tie."""
    if first.score != second.score:
        return "first" if first.score > second.score else "second"
    if first.at != second.at:
        return "first" if first.at > second.at else "second"
    return "none"


def open_answers(first: Claim, second: Claim) -> tuple[tuple[Relation, Winner], ...]:
    """The answers the rule leaves open for two claims: what remains once their fields have said
    all they can. Keys that differ decide alone; at one key only whether the two values are one
    value is left (``equivalent``, or ``conflicting`` with the winner ``order`` gives), which is
    the judgment the normaliser makes by rule and a model makes by reading."""
    keys = scope(first, second)
    if keys is not None:
        return ((keys, "none"),)
    return ("equivalent", "none"), ("conflicting", order(first, second))
