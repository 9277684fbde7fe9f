"""The budgeted renderer: sections, priorities under pressure, coupled-slot grouping."""

from __future__ import annotations

from memory import StateMemory
from memory.renderer import CONTESTED, CURRENT, TRANSITIONS
from tests.memory.helpers import claim


def sample() -> StateMemory:
    mem = StateMemory()
    for c in [
        claim("MySQL 8", "human-note"),
        claim("PostgreSQL 15", "code-change", commit="a684a3609", day=1),
        claim("SQLAlchemy 2", "code-change", commit="a684a3609", day=1, entity="orm", slot="library"),
        claim("MySQL 5", "stale-observation", day=2),
        claim("fly.io", "config-observation", day=3, entity="deployment", slot="platform"),
        claim("render.com", "code-change", commit="cafe123", day=4, entity="deployment", slot="platform"),
        claim("2 vCPU", "runtime-observation", day=4, entity="compute", slot="size"),
    ]:
        mem.apply(c)
    return mem


def test_full_document_layout() -> None:
    doc = sample().render(budget=10_000)
    lines = doc.splitlines()
    assert lines[0] == CURRENT
    assert "database.engine [main/production] = PostgreSQL 15 (a684a3609, 2026-03-02, code-change)" in lines
    assert lines.index(TRANSITIONS) < lines.index(CONTESTED)
    transitions = lines[lines.index(TRANSITIONS) + 1 : lines.index(CONTESTED)]
    assert [t.split()[0] for t in transitions] == ["2026-03-05", "2026-03-02"]  # newest first
    assert any("MySQL 5 vs current PostgreSQL 15" in line for line in lines)


def test_output_is_deterministic() -> None:
    assert sample().render(800) == sample().render(800)


def test_under_pressure_oldest_extras_go_first_and_current_stays() -> None:
    mem = sample()
    full = mem.render(budget=10_000)
    current_block = full.split(TRANSITIONS)[0].rstrip("\n")
    newest = next(line for line in full.splitlines() if line.startswith("2026-03-05"))
    budget = len(current_block) + len(TRANSITIONS) + len(newest) + 2
    doc = mem.render(budget=budget)
    assert doc == f"{current_block}\n{TRANSITIONS}\n{newest}"
    assert len(doc) <= budget


def test_coupled_slots_share_a_line_when_current_state_does_not_fit() -> None:
    mem = sample()
    plain = mem.render(10_000).split(f"\n{TRANSITIONS}")[0]
    doc = mem.render(budget=len(plain) - 1)
    assert len(doc) <= len(plain) - 1
    assert "database.engine=PostgreSQL 15; orm.library=SQLAlchemy 2 [main/production]" in doc
    assert "compute.size=2 vCPU; deployment.platform=render.com [main/production]" in doc


def test_tiny_budget_counts_what_was_cut() -> None:
    doc = sample().render(budget=40)
    assert doc.startswith(CURRENT) and len(doc) <= 40
    assert doc.endswith("more keys)")
    assert sample().render(budget=5) == ""
