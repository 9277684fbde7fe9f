"""Table-driven tests of the update rule (docs/design.md §3), one row per branch of the rule."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from memops.memory import Claim, StateMemory, Status, compare
from tests.memory.helpers import claim


@dataclass
class Case:
    name: str
    claims: list[Claim]
    actions: list[str]
    current: str
    contested: list[str] = field(default_factory=list)
    transitions: list[tuple[str, str]] = field(default_factory=list)


CASES = [
    Case("add to an empty key", [claim("PostgreSQL 15")], ["add"], "PostgreSQL 15"),
    Case(
        "same value after norm merges",
        [claim("PostgreSQL 15"), claim(" “postgresql   15.” ", "human-note", day=1)],
        ["add", "merge"],
        "PostgreSQL 15",
    ),
    Case(
        "higher evidence score supersedes",
        [claim("MySQL 8", "human-note"), claim("PostgreSQL 15", "code-change", day=1)],
        ["add", "supersede"],
        "PostgreSQL 15",
        transitions=[("MySQL 8", "PostgreSQL 15")],
    ),
    Case(
        "a commit adds 40 to the score",
        [claim("MySQL 8", "code-change"), claim("PostgreSQL 15", "human-note", commit="abc1234", day=-1)],
        ["add", "contested"],
        "MySQL 8",
        contested=["PostgreSQL 15"],
    ),
    Case(
        "stale observation after a code change is contested, not dropped",
        [
            claim("PostgreSQL 15", "code-change", commit="a684a36"),
            claim("MySQL 8", "stale-observation", day=5),
        ],
        ["add", "contested"],
        "PostgreSQL 15",
        contested=["MySQL 8"],
    ),
    Case(
        "rollback then restore (incident-hotfix, then code-change)",
        [
            claim(
                "v2 approvals", "code-change", commit="aaaa111", entity="permissions_flow", slot="approvals"
            ),
            claim(
                "v1 approvals",
                "incident-hotfix",
                commit="bbbb222",
                day=1,
                entity="permissions_flow",
                slot="approvals",
            ),
            claim(
                "v2 approvals",
                "code-change",
                commit="cccc333",
                day=2,
                entity="permissions_flow",
                slot="approvals",
            ),
        ],
        ["add", "supersede", "supersede"],
        "v2 approvals",
        transitions=[("v2 approvals", "v1 approvals"), ("v1 approvals", "v2 approvals")],
    ),
    Case(
        "equal score: the later claim wins",
        [claim("redis 6", "runtime-observation"), claim("redis 7", "runtime-observation", day=1)],
        ["add", "supersede"],
        "redis 7",
        transitions=[("redis 6", "redis 7")],
    ),
    Case(
        "equal score: an older claim is contested",
        [claim("redis 7", "runtime-observation", day=1), claim("redis 6", "runtime-observation")],
        ["add", "contested"],
        "redis 7",
        contested=["redis 6"],
    ),
    Case(
        "exact tie: the default judge keeps the current value",
        [claim("redis 6", "runtime-observation"), claim("redis 7", "runtime-observation")],
        ["add", "contested"],
        "redis 6",
        contested=["redis 7"],
    ),
    Case(
        "duplicate claim merges without duplicating evidence",
        [claim("PostgreSQL 15"), claim("PostgreSQL 15")],
        ["add", "merge"],
        "PostgreSQL 15",
    ),
    Case(
        "a contested value seen again merges into the contested item",
        [
            claim("PostgreSQL 15", "code-change", commit="a684a36"),
            claim("MySQL 8", "stale-observation", day=1),
            claim("mysql 8", "human-note", day=2),
        ],
        ["add", "contested", "merge"],
        "PostgreSQL 15",
        contested=["mysql 8"],  # the better-backed wording is shown
    ),
    Case(
        "a contested value backed strongly later is promoted, not duplicated",
        [
            claim("PostgreSQL 15", "human-note"),
            claim("MySQL 8", "stale-observation", day=1),
            claim("MySQL 8", "code-change", commit="dddd444", day=2),
        ],
        ["add", "contested", "supersede"],
        "MySQL 8",
        transitions=[("PostgreSQL 15", "MySQL 8")],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_update_rule(case: Case) -> None:
    mem = StateMemory()
    actions = [mem.apply(c).action for c in case.claims]
    assert actions == case.actions
    current = mem.current("database", "engine") or mem.current("permissions_flow", "approvals")
    assert current is not None and current.value == case.current
    key = case.claims[0].key
    assert [c.value for c in mem.contested(*key)] == case.contested
    assert [(t.old, t.new) for t in mem.transitions] == case.transitions


def test_duplicate_keeps_one_evidence_record() -> None:
    mem = StateMemory()
    mem.apply(claim("PostgreSQL 15"))
    mem.apply(claim("PostgreSQL 15"))
    mem.apply(claim("postgresql 15", "human-note", day=1))
    entry = mem.entry(claim("x").key)
    assert entry is not None and len(entry.items) == 1
    assert [c.evidence.type for c in entry.items[0].claims] == ["code-change", "human-note"]


def test_contested_merge_appends_provenance_to_the_contested_item() -> None:
    mem = StateMemory()
    mem.apply(claim("PostgreSQL 15", commit="a684a36"))
    mem.apply(claim("MySQL 8", "stale-observation", day=1, source="s1"))
    mem.apply(claim("MySQL 8", "human-note", day=2, source="s2"))
    (item,) = mem.entry(claim("x").key).contested()
    assert [c.evidence.source for c in item.claims] == ["s1", "s2"]
    assert item.status is Status.CONTESTED


def test_exact_tie_calls_the_judge_with_current_then_incoming() -> None:
    seen: list[tuple[str, str]] = []

    def judge(first: Claim, second: Claim) -> str:
        seen.append((first.value, second.value))
        return "second"

    mem = StateMemory(judge=judge)
    mem.apply(claim("redis 6", "runtime-observation"))
    decision = mem.apply(claim("redis 7", "runtime-observation"))
    assert seen == [("redis 6", "redis 7")]
    assert decision.action == "supersede" and "judge" in decision.reason
    assert mem.current("database", "engine").value == "redis 7"


def test_judge_not_called_when_rules_decide() -> None:
    def judge(first: Claim, second: Claim) -> str:
        raise AssertionError("the judge may only be called on exact ties")

    mem = StateMemory(judge=judge)
    mem.apply(claim("redis 6", "runtime-observation"))
    mem.apply(claim("redis 7", "runtime-observation", day=1))
    mem.apply(claim("redis 5", "stale-observation"))
    assert mem.current("database", "engine").value == "redis 7"


def test_branch_and_env_divergence_are_separate_keys() -> None:
    mem = StateMemory()
    d1 = mem.apply(claim("PostgreSQL 15"))
    d2 = mem.apply(claim("SQLite", "branch-experiment", branch="exp/sqlite", day=1))
    d3 = mem.apply(claim("PostgreSQL 16", "config-observation", env="staging", day=2))
    assert [d1.action, d2.action, d3.action] == ["add", "add", "add"]
    assert mem.current("database", "engine").value == "PostgreSQL 15"
    assert mem.current("database", "engine", branch="exp/sqlite").value == "SQLite"
    assert mem.current("database", "engine", env="staging").value == "PostgreSQL 16"
    assert len(mem) == 3 and not mem.transitions


def test_transition_carries_provenance() -> None:
    mem = StateMemory()
    mem.apply(claim("v1", "human-note"))
    incoming = claim("v2", "incident-hotfix", commit="BEEF123", day=3, source="session-7")
    mem.apply(incoming)
    (t,) = mem.transitions
    assert (t.key, t.old, t.new, t.commit, t.at, t.source) == (
        incoming.key,
        "v1",
        "v2",
        "beef123",
        incoming.at,
        "session-7",
    )
    assert "score" in t.reason


def test_rollback_keeps_superseded_history_and_never_revives_an_item() -> None:
    mem = StateMemory()
    for c in CASES[5].claims:
        mem.apply(c)
    entry = mem.entry(CASES[5].claims[0].key)
    statuses = [(i.value, i.status) for i in entry.items]
    assert statuses == [
        ("v2 approvals", Status.SUPERSEDED),
        ("v1 approvals", Status.SUPERSEDED),
        ("v2 approvals", Status.CONFIRMED),
    ]
    assert entry.current is entry.items[2]


def test_decision_reports_previous_current() -> None:
    mem = StateMemory()
    first = claim("v1", "human-note")
    mem.apply(first)
    decision = mem.apply(claim("v2", "code-change", day=1))
    assert decision.previous == first
    assert decision.key == first.key


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (claim("a"), claim("b", entity="cache"), ("unrelated", "none")),
        (claim("a"), claim("b", slot="version"), ("unrelated", "none")),
        (claim("a"), claim("b", env="staging"), ("different_scope", "none")),
        (claim("a"), claim("b", branch="exp/x"), ("different_scope", "none")),
        (claim("PostgreSQL 15"), claim("postgresql 15.", "stale-observation"), ("equivalent", "none")),
        (claim("a", "code-change"), claim("b", "human-note", day=9), ("conflicting", "first")),
        (claim("a", "human-note"), claim("b", "human-note", commit="abcd123"), ("conflicting", "second")),
        (
            claim("a", "runtime-observation", day=2),
            claim("b", "runtime-observation", day=1),
            ("conflicting", "first"),
        ),
        (
            claim("a", "runtime-observation"),
            claim("b", "runtime-observation", day=1),
            ("conflicting", "second"),
        ),
        (claim("a", "runtime-observation"), claim("b", "runtime-observation"), ("conflicting", "none")),
    ],
)
def test_compare_rule(first: Claim, second: Claim, expected: tuple[str, str]) -> None:
    assert compare(first, second) == expected


def test_the_update_rule_judges_values_by_the_judgment_it_is_given() -> None:
    """The rule's one judgment of values (``same``) decides between merge and the order's answer:
    a value judged the current one merges whatever its standing; one judged another supersedes
    when it wins, is contested when it loses, and merges into a contested value judged its own."""
    from memops.memory.state import rule

    memory = StateMemory()
    memory.apply(claim("a", "code-change"))
    memory.apply(claim("b", "human-note", day=1))  # weaker: contested
    entry = memory.entry(claim("a").key)
    assert entry is not None and [i.value for i in entry.contested()] == ["b"]
    weaker = claim("B.", "human-note", day=2)
    stronger = claim("c", "incident-hotfix", day=2)  # the current one's score, and newer
    assert rule(entry, weaker, same=lambda item, _: True)[0] == "merge"
    assert rule(entry, weaker, same=lambda item, _: False)[0] == "contested"
    assert rule(entry, weaker, same=lambda item, _: item.value == "b")[0] == "merge"
    assert rule(entry, stronger, same=lambda item, _: item.value == "b")[0] == "supersede"
    assert rule(entry, stronger, same=lambda item, _: item is entry.current)[0] == "merge"
