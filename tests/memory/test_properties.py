"""Property tests of the engine over random claim streams drawn from a small, colliding domain."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memops.memory import EVIDENCE_TYPES, Claim, Evidence, StateMemory, Status, norm
from memops.memory.renderer import BudgetTooSmall, label, smallest_budget
from tests.memory.helpers import T0, claim, state

claims = st.builds(
    lambda entity, slot, value, branch, env, kind, commit, source, hours: Claim(
        entity=entity,
        slot=slot,
        value=value,
        branch=branch,
        env=env,
        evidence=Evidence(type=kind, commit=commit, source=source),
        at=T0 + timedelta(hours=hours),
    ),
    entity=st.sampled_from(["database", "orm", "deployment", "hosting", "cache"]),
    slot=st.sampled_from(["engine", "version"]),
    value=st.sampled_from(["PostgreSQL 15", "postgresql 15", "MySQL 8", "SQLite", "Redis 7", "v2 flow"]),
    branch=st.sampled_from(["main", "exp/x"]),
    env=st.sampled_from(["production", "staging"]),
    kind=st.sampled_from(EVIDENCE_TYPES),
    commit=st.sampled_from([None, "a684a36", "bbbb222"]),
    source=st.sampled_from(["s1", "s2", "s3"]),
    hours=st.integers(0, 6),
)
streams = st.lists(claims, max_size=40)


def replay(stream: list[Claim]) -> StateMemory:
    mem = StateMemory()
    for c in stream:
        mem.apply(c)
    return mem


@settings(max_examples=300, deadline=None)
@given(streams, st.integers(0, 2500))
def test_render_never_exceeds_budget(stream: list[Claim], budget: int) -> None:
    mem = replay(stream)
    try:
        doc = mem.render(budget=budget)
    except BudgetTooSmall:
        assert budget < smallest_budget(sum(1 for e in mem.entries() if e.current is not None))
        return
    assert len(doc) <= budget


@settings(max_examples=100, deadline=None)
@given(streams)
def test_render_is_complete_when_budget_is_ample(stream: list[Claim]) -> None:
    mem = replay(stream)
    doc = mem.render(budget=10**6)
    for entry in mem.entries():
        assert f"{label(entry.key)} = {entry.current.value}" in doc
    assert doc.count(" -> ") == len(mem.transitions)


@settings(max_examples=200, deadline=None)
@given(streams)
def test_applying_a_claim_twice_equals_applying_it_once(stream: list[Claim]) -> None:
    doubled = [c for c in stream for _ in range(2)]
    assert replay(doubled) == replay(stream)


@settings(max_examples=200, deadline=None)
@given(streams)
def test_claims_at_different_keys_commute(stream: list[Claim]) -> None:
    # a stable sort by key reorders claims across keys and keeps each key's own order
    regrouped = sorted(stream, key=lambda c: c.key)
    assert state(replay(regrouped)) == state(replay(stream))


@settings(max_examples=200, deadline=None)
@given(streams)
def test_superseded_items_never_become_current_again(stream: list[Claim]) -> None:
    mem = StateMemory()
    superseded: set[int] = set()
    for c in stream:
        mem.apply(c)
        for entry in mem.entries():
            assert id(entry.current) not in superseded
            for item in entry.items:
                if id(item) in superseded:
                    assert item.status is Status.SUPERSEDED
                if item.status is Status.SUPERSEDED:
                    superseded.add(id(item))


@settings(max_examples=100, deadline=None)
@given(streams)
def test_json_round_trip(stream: list[Claim]) -> None:
    mem = replay(stream)
    assert StateMemory.from_json(mem.to_json()) == mem


# Characters that change a value: everything but whitespace, quotes and trailing sentence punctuation.
significant = st.sampled_from("abcxyz019+-#/@()=<>*&%~_")


@settings(max_examples=300, deadline=None)
@given(st.text("abc19 .+-", min_size=1, max_size=8), significant, st.integers(0, 8), st.booleans())
def test_values_that_differ_in_a_significant_character_never_merge(
    base: str, char: str, at: int, replace: bool
) -> None:
    """C and C++, 1 and -1: a later claim with such a value supersedes, never merges. The
    character may land anywhere, edges included."""
    at = min(at, len(base))
    changed = base[:at] + char + base[at + replace :]
    if changed == base or not norm(base):  # replaced a character by itself; an empty value
        return
    first, second = claim(base), claim(changed, day=1)
    assert first.norm_value != second.norm_value
    mem = StateMemory()
    mem.apply(first)
    assert mem.apply(second).action == "supersede"
