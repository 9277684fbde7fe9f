"""Small builders shared by the engine tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memops.memory import Claim, Evidence, StateMemory

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def claim(
    value: str,
    kind: str = "code-change",
    *,
    commit: str | None = None,
    day: int = 0,
    entity: str = "database",
    slot: str = "engine",
    branch: str = "main",
    env: str = "production",
    source: str | None = None,
) -> Claim:
    return Claim(
        entity=entity,
        slot=slot,
        value=value,
        branch=branch,
        env=env,
        evidence=Evidence(type=kind, commit=commit, source=source or f"s-{value}-{kind}-{day}"),
        at=T0 + timedelta(days=day),
    )


def state(mem: StateMemory) -> tuple[list, list]:
    """Memory state with transitions grouped per key, for comparing across orderings."""
    transitions = sorted(mem.transitions, key=lambda t: t.key)
    return list(mem.entries()), transitions
