"""A small built-in project history that exercises every branch of the update rule.

Used by ``make engine-demo``, the tests and the README.
"""

from __future__ import annotations

from memops.memory.claims import Claim
from memops.memory.evidence import Evidence


def _c(
    entity: str,
    slot: str,
    value: str,
    kind: str,
    at: str,
    source: str,
    commit: str | None = None,
    branch: str = "main",
    env: str = "production",
) -> Claim:
    return Claim(
        entity=entity,
        slot=slot,
        value=value,
        branch=branch,
        env=env,
        evidence=Evidence(type=kind, commit=commit, source=source),
        at=at,
    )


EXAMPLE: tuple[Claim, ...] = (
    _c("database", "engine", "MySQL 8", "human-note", "2026-02-20T09:00:00-08:00", "s1"),
    _c(
        "database",
        "engine",
        "PostgreSQL 15",
        "code-change",
        "2026-03-08T17:38:00-07:00",
        "s2",
        "a684a3609",
    ),
    _c("orm", "library", "SQLAlchemy 2.0", "code-change", "2026-03-08T17:38:00-07:00", "s2", "a684a3609"),
    _c("database", "engine", "MySQL 8", "stale-observation", "2026-03-10T11:00:00-07:00", "s3"),
    _c(
        "database",
        "engine",
        "PostgreSQL 16",
        "branch-experiment",
        "2026-03-11T10:00:00-07:00",
        "s4",
        branch="exp/pg16",
    ),
    _c(
        "permissions_flow",
        "approvals",
        "per-command approval",
        "code-change",
        "2026-03-12T09:00:00-07:00",
        "s5",
        "e6b93841c",
    ),
    _c(
        "permissions_flow",
        "approvals",
        "granted permissions persist across turns",
        "code-change",
        "2026-03-20T15:30:00-07:00",
        "s6",
        "340f9c9ec",
    ),
    _c(
        "permissions_flow",
        "approvals",
        "per-command approval",
        "incident-hotfix",
        "2026-03-21T08:10:00-07:00",
        "s7",
        "06f82c123",
    ),
    _c(
        "permissions_flow",
        "approvals",
        "granted permissions persist across turns",
        "code-change",
        "2026-03-24T13:00:00-07:00",
        "s8",
        "da3689f0e",
    ),
    _c(
        "deployment",
        "platform",
        "Fly.io",
        "config-observation",
        "2026-03-25T10:00:00-07:00",
        "s9",
        env="staging",
    ),
    _c(
        "compute",
        "size",
        "2 vCPU / 4 GiB",
        "runtime-observation",
        "2026-03-25T10:05:00-07:00",
        "s9",
        env="staging",
    ),
    _c("cache", "backend", "Redis 7", "runtime-observation", "2026-03-26T10:00:00-07:00", "s10"),
    _c("cache", "backend", "Valkey 8", "runtime-observation", "2026-03-26T10:00:00-07:00", "s11"),
    _c("database", "engine", "postgresql 15", "runtime-observation", "2026-03-27T10:00:00-07:00", "s12"),
)
"""Fourteen claims in the order they arrive: a supersede by evidence, a stale and a branch claim
kept apart, a rollback and a restore, two environments, an exact tie and a restated value."""


def example_claims() -> list[Claim]:
    return list(EXAMPLE)
