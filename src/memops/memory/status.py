"""The status lattice of a memory item.

Every status change goes through :func:`advance`, so an engine bug that would, say,
resurrect a superseded value fails loudly instead of corrupting history.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    PROPOSED = "proposed"
    CONFIRMED = "confirmed"
    CONTESTED = "contested"
    SUPERSEDED = "superseded"


ALLOWED: dict[Status, frozenset[Status]] = {
    Status.PROPOSED: frozenset({Status.CONFIRMED, Status.CONTESTED}),
    Status.CONTESTED: frozenset({Status.CONFIRMED, Status.SUPERSEDED}),
    Status.CONFIRMED: frozenset({Status.SUPERSEDED}),
    Status.SUPERSEDED: frozenset(),
}


class IllegalTransition(RuntimeError):
    pass


def advance(current: Status, target: Status) -> Status:
    if target not in ALLOWED[current]:
        allowed = ", ".join(sorted(ALLOWED[current])) or "nothing (terminal)"
        raise IllegalTransition(f"{current} -> {target} is not allowed; {current} may go to {allowed}")
    return target
