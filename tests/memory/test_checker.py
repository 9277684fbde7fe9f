"""The symbolic checker for agent findings."""

from __future__ import annotations

import pytest

from memops.memory import Finding, check
from memops.memory.checker import dependency_cycles, resource_collisions


def dep(i: str, text: str) -> Finding:
    return Finding(id=i, kind="DEPENDENCY", text=text)


def test_no_cycle_in_a_dag() -> None:
    assert dependency_cycles([dep("d1", "api -> db"), dep("d2", "web -> api"), dep("d3", "web -> db")]) == []


def test_two_and_three_cycles_name_their_entries() -> None:
    found = dependency_cycles(
        [
            dep("d1", "a -> b"),
            dep("d2", "b -> a"),
            dep("d3", "x -> y"),
            dep("d4", "y -> z"),
            dep("d5", "z -> x"),
        ]
    )
    assert [(v.first, v.second) for v in found] == [("d1", "d2"), ("d3", "d5")]
    assert all(v.kind == "dependency-cycle" for v in found)
    assert "d4" in found[1].detail


def test_self_dependency_is_a_cycle() -> None:
    (v,) = dependency_cycles([dep("d9", "build -> build")])
    assert (v.first, v.second) == ("d9", "d9")


def test_malformed_dependency_names_the_finding() -> None:
    with pytest.raises(ValueError, match="d7"):
        dependency_cycles([dep("d7", "a needs b")])


@pytest.mark.parametrize(
    ("first", "second", "collide"),
    [
        ("resource:gpu-0 time:1-3", "resource:gpu-0 time:2-4", True),
        ("resource:gpu-0 time:1-3", "resource:gpu-0 time:3-5", False),  # adjacent
        ("resource:gpu-0 time:1-9", "resource:gpu-0 time:3-5", True),  # contained
        ("resource:gpu-0 time:1-3", "resource:gpu-1 time:2-4", False),
        ("resource:db time:09:00-10:30", "resource:db time:10:15-11:00", True),
        ("resource:db time:09:00-10:30", "resource:db time:10:30-11:00", False),
    ],
)
def test_resource_overlap(first: str, second: str, collide: bool) -> None:
    findings = [
        Finding(id="p1", kind="SUB_PLAN", text=f"migrate tables {first}"),
        Finding(id="c1", kind="CONSTRAINT", text=second),
    ]
    found = resource_collisions(findings)
    assert bool(found) is collide
    if collide:
        assert (found[0].first, found[0].second) == ("p1", "c1")


def test_reversed_interval_is_an_error() -> None:
    with pytest.raises(ValueError, match="p2"):
        resource_collisions([Finding(id="p2", kind="SUB_PLAN", text="resource:db time:5-2")])


def test_check_combines_both_and_ignores_facts() -> None:
    findings = [
        Finding(id="f1", kind="FACT", text="the api talks to db"),
        dep("d1", "a -> b"),
        dep("d2", "b -> a"),
        Finding(id="p1", kind="SUB_PLAN", text="resource:ci time:0-10"),
        Finding(id="p2", kind="SUB_PLAN", text="resource:ci time:5-6"),
    ]
    kinds = [v.kind for v in check(findings)]
    assert kinds == ["dependency-cycle", "resource-collision"]
