"""Render the memory as a budgeted text document for a reader (an agent's context window).

Priority under a character budget: current state always comes first; then transitions, newest
first; then contested observations, newest first, so under pressure contested lines and the
oldest transitions go first (docs/design.md §3). Lines are compact, so that history keeps a share of the
budget: the scope is shown only off main/production, and a transition to the current value reads
``-> current``. If the current state alone does not fit, coupled slots share a line, and only then
are keys cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memops.memory.claims import DEFAULT_BRANCH, DEFAULT_ENV, Claim, Key
from memops.memory.lines import escape_line

if TYPE_CHECKING:
    from memops.memory.state import StateMemory

COUPLED: tuple[frozenset[str], ...] = (
    frozenset({"database", "orm"}),
    frozenset({"deployment", "compute", "hosting"}),
)
"""Entities whose slots are read together; under pressure they are rendered on one line."""

CURRENT, TRANSITIONS, CONTESTED = "## Current state", "## Transitions", "## Contested"


def provenance(claim: Claim) -> str:
    parts = [claim.evidence.commit[:9]] if claim.evidence.commit else []
    parts += [claim.at.date().isoformat(), claim.evidence.type]
    return ", ".join(parts)


def label(key: Key) -> str:
    """``entity.slot``, with ``[branch/env]`` only off the default scope: most keys live on
    main/production, and repeating it on every line would spend the budget history needs."""
    scope = "" if (key.branch, key.env) == (DEFAULT_BRANCH, DEFAULT_ENV) else f" [{key.branch}/{key.env}]"
    return f"{key.entity}.{key.slot}{scope}"


def current_line(claim: Claim) -> str:
    return f"{label(claim.key)} = {escape_line(claim.value)} ({provenance(claim)})"


def _group_of(key: Key) -> tuple[int, str, str, str]:
    for index, group in enumerate(COUPLED):
        if key.entity in group:
            return (index, "", key.branch, key.env)
    return (len(COUPLED), f"{key.entity}.{key.slot}", key.branch, key.env)


def grouped_lines(claims: list[Claim]) -> list[tuple[str, int]]:
    """Lines with the number of keys each holds; coupled slots of one scope share a line."""
    groups: dict[tuple[int, str, str, str], list[Claim]] = {}
    for claim in claims:
        groups.setdefault(_group_of(claim.key), []).append(claim)
    lines = []
    for members in groups.values():
        if len(members) == 1:
            lines.append((current_line(members[0]), 1))
            continue
        newest = max(members, key=lambda c: c.at)
        pairs = "; ".join(f"{c.entity}.{c.slot}={escape_line(c.value)}" for c in members)
        lines.append((f"{pairs} [{newest.branch}/{newest.env}] ({provenance(newest)})", len(members)))
    return sorted(lines)


@dataclass
class _Page:
    """A document under construction that knows its length and refuses to overflow."""

    budget: int
    length: int = -1  # the first line has no newline before it

    def fits(self, *lines: str) -> bool:
        return self.length + sum(len(line) + 1 for line in lines) <= self.budget

    def take(self, *lines: str) -> None:
        self.length += sum(len(line) + 1 for line in lines)


def _fit_current(page: _Page, claims: list[Claim]) -> list[str]:
    plain = sorted(current_line(c) for c in claims)
    if page.fits(CURRENT, *plain):
        page.take(CURRENT, *plain)
        return [CURRENT, *plain]
    grouped = grouped_lines(claims)
    lines = [line for line, _ in grouped]
    if page.fits(CURRENT, *lines):
        page.take(CURRENT, *lines)
        return [CURRENT, *lines]
    if not page.fits(CURRENT):
        return []
    page.take(CURRENT)
    kept, left = [CURRENT], len(claims)
    for line, keys in grouped:
        marker = [f"(+{left - keys} more keys)"] if left > keys else []
        if not page.fits(line, *marker):
            if page.fits(f"(+{left} more keys)"):
                page.take(f"(+{left} more keys)")
                kept.append(f"(+{left} more keys)")
            break
        page.take(line)
        kept.append(line)
        left -= keys
    return kept


class BudgetTooSmall(ValueError):
    """Not even the header and the count of cut keys fit: an empty page would read as an empty memory."""


def smallest_budget(keys: int) -> int:
    return len(CURRENT) + 1 + len(f"(+{keys} more keys)")


def render(mem: StateMemory, budget: int = 1700) -> str:
    if budget < 0:
        raise ValueError(f"render budget {budget}: must be 0 or more characters")
    page = _Page(budget)
    claims = [e.current.best for e in mem.entries() if e.current is not None]
    out = _fit_current(page, claims)
    if claims and len(out) <= 1:
        raise BudgetTooSmall(
            f"render budget {budget} fits no line of a memory with {len(claims)} keys; "
            f"it needs at least {smallest_budget(len(claims))} characters"
        )
    if len(out) <= 1:
        return "\n".join(out)

    # History under pressure: compact lines, every transition (newest first) before any
    # contested observation, so the most recent changes survive where the current state is long.
    currents = {e.key: e.current.value for e in mem.entries() if e.current is not None}
    transitions = []
    for t in sorted(mem.transitions, key=lambda t: (t.at, str(t.key), t.new), reverse=True):
        new = "current" if currents.get(t.key) == t.new else escape_line(t.new)
        commit = f" ({t.commit[:9]})" if t.commit else ""
        transitions.append(f"{t.at.date().isoformat()} {label(t.key)}: {escape_line(t.old)} -> {new}{commit}")
    observed = [(item.at, entry.key, item) for entry in mem.entries() for item in entry.contested()]
    contested = [
        f"{label(key)}: {escape_line(item.value)} ({provenance(item.best)})"
        for _, key, item in sorted(observed, key=lambda x: (x[0], str(x[1]), x[2].value), reverse=True)
    ]

    for section, lines in ((TRANSITIONS, transitions), (CONTESTED, contested)):
        kept = []
        for line in lines:
            needed = [line] if kept else [section, line]
            if not page.fits(*needed):
                break
            page.take(*needed)
            kept.append(line)
        if kept:
            out += [section, *kept]
    return "\n".join(out)
