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
    if (first.entity, first.slot) != (second.entity, second.slot):
        return "unrelated", "none"
    if (first.branch, first.env) != (second.branch, second.env):
        return "different_scope", "none"
    if first.norm_value == second.norm_value:
        return "equivalent", "none"
    if first.score != second.score:
        return "conflicting", "first" if first.score > second.score else "second"
    if first.at != second.at:
        return "conflicting", "first" if first.at > second.at else "second"
    return "conflicting", "none"
