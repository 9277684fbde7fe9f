"""Whether two values are one, read item by item where they are lists (design §4): the
normaliser pairs the items it can, an item added or dropped makes another value without a read,
and what is left is read short. The backend is the project's oracle (``SymbolicBackend``), which
raises on any prompt it was not given, so each test also proves which pairs were read."""

from __future__ import annotations

import pytest

from memops.memory import StateMemory
from memops.operators.backends.symbolic import SymbolicBackend
from memops.operators.learned import LearnedOperators, to_judge
from memops.operators.registry import COMPARE, UPDATE
from memops.operators.schemas import CompareOutput
from tests.memory.helpers import claim

PINS = "click>=7.0, jinja2>=2.7, six"


def values(pairs: list | None) -> list[tuple[str, str]] | None:
    return None if pairs is None else [(a.value, b.value) for a, b in pairs]


@pytest.mark.parametrize(
    ("first", "second", "left"),
    [
        ("hatchling", "Hatchling", [("hatchling", "Hatchling")]),  # no list: whole
        (PINS, "six, Click>=7.0, jinja2>=2.8", [("jinja2>=2.7", "jinja2>=2.8")]),  # one pin moved
        (PINS, "click>=7.0, jinja2>=2.7", None),  # an item dropped
        ("mypy", "mypy, pyright", None),  # an item added
        (PINS, "six, jinja2>=2.7, click>=7.0.", [(PINS, "six, jinja2>=2.7, click>=7.0.")]),  # reordered
        ("Linux, macOS", "Linux and macOS", [("Linux, macOS", "Linux and macOS")]),  # not two lists
        ("a, b, c", "a, d", [("a, b, c", "a, d")]),  # lengths differ, neither holds the other
    ],
)
def test_what_is_left_to_read_of_two_values(first: str, second: str, left: list | None) -> None:
    assert values(to_judge(claim(first), claim(second, day=1))) == left


def test_keys_apart_are_read_whole() -> None:
    first, second = claim(PINS), claim("click>=7.0", slot="minimums", day=1)
    assert values(to_judge(first, second)) == [(PINS, "click>=7.0")]


def judging(said: CompareOutput | None, *pairs: tuple) -> LearnedOperators:
    """Operators whose compare reads answer ``said`` for ``pairs`` and nothing else."""
    oracle = SymbolicBackend()
    for pair in pairs:
        oracle.remember(COMPARE.messages(*pair), said.model_dump_json())
    return LearnedOperators(oracle, decisions="judged")


def test_a_list_is_one_value_only_where_each_pair_left_is_read_one() -> None:
    older, newer = claim(PINS), claim("six, click>=7.0, jinja2>=2.8", day=1)
    (items,) = to_judge(older, newer)
    one, two = (
        CompareOutput(relation="equivalent", winner="none"),
        CompareOutput(relation="conflicting", winner="second"),
    )
    for said in (one, two):
        ops = judging(said, items)
        assert ops.unanswered(COMPARE, [(older, newer)]) == 1
        (outcome,) = ops.compare([(older, newer)])
        assert outcome.output == said and outcome.messages == COMPARE.messages(older, newer)
        assert ops.unanswered(COMPARE, [(older, newer)]) == 0
    dropped = claim("click>=7.0, six", day=1)
    ops = judging(None)  # nothing to read: the oracle would raise on any prompt
    assert ops.unanswered(COMPARE, [(older, dropped)]) == 0
    assert [o.output for o in ops.compare([(older, dropped)])] == [two]


def test_a_judged_update_takes_its_judgment_of_a_list_from_the_items() -> None:
    mem = StateMemory()
    mem.apply(older := claim(PINS, "human-note"))
    entry = mem.entry(older.key)
    moved, dropped = (
        claim("click>=7.0, jinja2>=2.8, six", "human-note", day=1),
        claim("six", "human-note", day=1),
    )
    (items,) = to_judge(entry.current.as_claim(), moved)
    one = CompareOutput(relation="equivalent", winner="none")
    ops = judging(one, items)
    assert [o.output.action for o in ops.update([(entry, moved), (entry, dropped)])] == ["merge", "supersede"]
    assert ops.calls[UPDATE.name] == 1  # the moved pin read; the dropped items decided by the normaliser
