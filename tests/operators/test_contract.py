"""The contract suite and the contract cases of the training data (operators/contract.py)."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import replace

import pytest
from pydantic import BaseModel

from memops.data.scenarios.generate import scenarios
from memops.memory.claims import norm
from memops.memory.evidence import evidence_score
from memops.operators.contract import (
    DIFFICULTY,
    NO_CONTRACT,
    STANDINGS,
    ContractDraw,
    cells,
    contract_cases,
    draw,
    near_miss,
    regions,
    suite,
    suite_names,
)
from memops.operators.registry import DECISIONS, OPERATORS, Operator


def score(standing: tuple[str, bool]) -> int:
    return evidence_score(standing[0], "c" if standing[1] else None)


def test_the_grid_spans_every_standing_time_and_value() -> None:
    compare = cells("compare")
    assert len(compare) == len(STANDINGS) ** 2 * 3 * 6
    assert {c.held for c in compare} == {c.incoming for c in compare} == set(STANDINGS)
    update = cells("update")
    assert {c.state for c in update} == {"empty", "current", "contested", "superseded"}
    assert {c.value for c in update} == {
        "identical",
        "restated",
        "contested-value",
        "superseded-value",
        "different",
    }
    for op in DECISIONS:
        assert set(regions(op)) <= set(DIFFICULTY)


@pytest.mark.parametrize("op", DECISIONS)
def test_every_suite_case_is_answered_as_its_region_says(op: str) -> None:
    """The written case carries its cell's facts: the rules, run on it, answer as the region
    that names the deciding rule says they must."""
    cases = suite(op, "test") + suite(op, "validation")
    assert set(Counter(c["region"] for c in cases)) == set(regions(op))
    for case in cases:
        first, second = case["arguments"]
        label, region = case["label"], case["region"]
        if op == "compare":
            expected = {
                "unrelated": {"unrelated/none"},
                "other scope": {"different_scope/none"},
                "same value": {"equivalent/none"},
                "restated value": {"equivalent/none"},
                "exact tie": {"conflicting/none"},
            }.get(region)
            if expected is None:  # decided: the stronger, then the newer, wins
                assert first.score != second.score or first.at != second.at
                stronger = (second.score, second.at) > (first.score, first.at)
                expected = {"conflicting/second" if stronger else "conflicting/first"}
                if region == "commit decides":
                    assert first.evidence.type == second.evidence.type
                if region == "recency decides":
                    assert first.score == second.score
            assert label in expected, case["id"]
        else:
            entry, claim = first, second
            if region == "new key":
                assert entry is None and label == "add"
                continue
            current = entry.current
            if region == "same as current":
                assert claim.norm_value == current.norm_value and label == "merge"
            elif region == "back to contested value":
                assert claim.norm_value in {i.norm_value for i in entry.contested()}
                wins = (claim.score, claim.at) > (current.score, current.at)
                assert label == ("supersede" if wins else "merge"), case["id"]
            else:
                assert claim.norm_value not in entry.live
                wins = (claim.score, claim.at) > (current.score, current.at)
                assert label == ("supersede" if wins else "contested"), case["id"]


@pytest.mark.parametrize("op", DECISIONS)
def test_the_rules_answer_is_always_among_those_they_leave_open(op: str) -> None:
    """``Operator.open``: keys that differ leave one answer; at one key two are left, apart only
    in whether the values are one value, and the gold is one of them, in every region."""
    spec = OPERATORS[op]
    for case in suite(op, "test") + suite(op, "validation"):
        left = spec.open(*case["arguments"])
        assert case["label"] in {a.label for a in left}, case["id"]
        assert set(left) <= set(spec.answers)
        if case["region"] in ("unrelated", "other scope", "new key"):
            assert len(left) == 1
        else:
            first = {a.relation for a in left} if op == "compare" else {a.action for a in left}
            assert len(left) == 2 and first >= ({"equivalent"} if op == "compare" else {"merge"})
            assert len({spec.judgment(a) for a in left}) == 2  # one value, or two


def test_the_suite_is_fixed_and_its_parts_apart() -> None:
    for op in DECISIONS:
        test, validation = suite(op, "test"), suite(op, "validation")
        drawn_again = suite.__wrapped__(op, "test")  # not the cached tuple: a second draw
        assert [c["prompt"] for c in test] == [c["prompt"] for c in drawn_again]
        assert not {c["id"] for c in test} & {c["id"] for c in validation}
        assert len(validation) > 30 and len(test) > 2 * len(validation) - 20


def test_two_notes_of_equal_standing_supersede_by_recency_in_the_suite() -> None:
    """The issue's case: two human notes at one key, the newer one changing the value."""
    cases = [
        c
        for c in suite("update", "test")
        if c["region"] == "recency decides" and c["arguments"][1].at > c["arguments"][0].current.at
    ]
    assert cases and {c["label"] for c in cases} == {"supersede"}


@pytest.mark.parametrize("weights", [{}, {"evidence decides": 12, "exact tie": 1}], ids=["default", "given"])
def test_the_draw_weights_regions_by_difficulty_or_the_weights_given(weights: dict[str, int]) -> None:
    drawn = Counter(c.region for c in draw("update", random.Random(0), 20_000, weights))
    assert set(drawn) == set(regions("update"))
    share = {r: drawn[r] / {**DIFFICULTY, **weights}[r] for r in drawn}
    assert max(share.values()) / min(share.values()) < 1.15


def test_a_synthetic_episode_draws_its_contract_cases_with_the_builds_weights(synthetic: list) -> None:
    def regions_drawn(**weights: int) -> Counter[str]:
        seen: Counter[str] = Counter()
        for episode in synthetic:
            examples = OPERATORS["compare"].examples(
                episode, random.Random(episode.id), 2, ContractDraw(12, weights)
            )
            seen.update(json.loads(e["inputs"])["region"] for e in examples if '"region"' in e["inputs"])
        return seen

    default, weighted = regions_drawn(), regions_drawn(**{"evidence decides": 60})
    assert sum(default.values()) == sum(weighted.values()) == 12 * len(synthetic)
    assert weighted["evidence decides"] > sum(weighted.values()) / 2 > default["evidence decides"]


def test_near_misses_set_a_value_against_itself_with_a_number_changed(synthetic: list) -> None:
    """``near_misses``: of the compare cases whose values differ, about that share sets a value
    against the value with its first number changed (where it has one); the rest of the draw
    is the default's, and a share of 0 draws exactly what the default draws."""

    def differing(how: ContractDraw) -> list[tuple[str, str]]:
        pairs = []
        for episode in synthetic:
            for case in contract_cases("compare", episode, random.Random(episode.id), how):
                first, second = case.arguments
                if norm(first.value) != norm(second.value) and first.key == second.key:
                    pairs.append((first.value, second.value))
        return pairs

    def alike(a: str, b: str) -> bool:
        return re.sub(r"\d+", "#", a) == re.sub(r"\d+", "#", b)

    assert differing(ContractDraw(12, near_misses=0.0)) == differing(ContractDraw(12))
    plain, near = differing(ContractDraw(12)), differing(ContractDraw(12, near_misses=1.0))
    numbered = [p for p in near if re.search(r"\d", p[0])]
    assert numbered and all(alike(a, b) for a, b in numbered)
    assert sum(alike(a, b) for a, b in plain) < len(plain) / 4


def test_value_twins_move_the_second_value_alone_across_one_value_or_two(synthetic: list) -> None:
    """``twins``: each compare pair at one key is followed by its twin, which keeps both claims'
    keys, standings and times and has the other judgment of the values; so over an episode's
    pairs, one value and two come with the same standings and times, and the standing no longer
    tells the judgment. Pairs across keys have none; update's examples are untouched."""

    def judged(label: str) -> str:
        return "one" if label == "equivalent/none" else "two"

    def facts(inputs: dict) -> tuple[bool, int]:
        first, second = OPERATORS["compare"].arguments(inputs)
        return first.score == second.score, (first.at > second.at) - (first.at < second.at)

    how = ContractDraw(12, twins=True)
    mix: dict[str, Counter] = {"one": Counter(), "two": Counter()}
    twins = 0
    for episode in synthetic:
        rows = OPERATORS["compare"].examples(episode, random.Random(episode.id), 2, contract=how)
        plain = OPERATORS["compare"].examples(
            episode, random.Random(episode.id), 2, contract=ContractDraw(12)
        )
        assert rows[: len(plain)] == plain  # the twins follow the episode's rows, which do not move
        by_number = {int(r["id"].rsplit("/", 1)[1]): r for r in rows}
        for row in rows[len(plain) :]:
            twin = json.loads(row["inputs"])
            of = by_number[twin.pop("twin_of")]
            original = json.loads(of["inputs"])
            assert twin["first"] == original["first"]
            moved = {k for k in original["second"] if original["second"][k] != twin["second"][k]}
            assert moved == {"value"}
            assert judged(row["label"]) != judged(of["label"]) and "different_scope" not in of["label"]
            for r, inputs in ((row, twin), (of, original)):
                mix[judged(r["label"])][facts(inputs)] += 1
            twins += 1
        pairs = [OPERATORS["compare"].arguments(json.loads(r["inputs"])) for r in plain]
        same_key = sum(first.key == second.key for first, second in pairs)
        assert len(rows) - len(plain) == same_key
    assert twins > 100 and mix["one"] == mix["two"] and len(mix["one"]) > 3
    update = OPERATORS["update"].examples(synthetic[0], random.Random(0), 2, contract=how)
    assert update == OPERATORS["update"].examples(
        synthetic[0], random.Random(0), 2, contract=ContractDraw(12)
    )


def test_a_near_miss_changes_a_number_or_a_list_by_one_item() -> None:
    """Without ``others`` only a number moves (what ``near_misses`` draws for contract cases);
    with them a list also drops an item or gains one of theirs, and nothing restates the value."""
    rng = random.Random(0)
    assert near_miss("mypy", rng) is None
    assert near_miss("mypy", rng, ["pyright"]) == "mypy, pyright"
    assert near_miss("mypy", rng, ["MyPy"]) is None
    dropped = {near_miss("mypy, pyright", rng, ["ruff"]) for _ in range(40)}
    assert {"mypy", "pyright", "mypy, pyright, ruff"} == dropped
    numbered = {near_miss("14 shards", rng) for _ in range(20)}
    assert numbered and all(re.fullmatch(r"\d+ shards", v) and v != "14 shards" for v in numbered)


def test_near_miss_twins_answer_one_value_with_its_near_miss_and_restate_in_another_case(
    synthetic: list,
) -> None:
    """With ``near_misses`` the twin of a pair whose values are one is, where one can be written,
    a near miss of the first value (which holds it, less or more an item, or its number moved),
    and half the twins that restate change the value's case; at 0 few twins are near misses and
    fewer restatements change the case."""

    def twins(near: float) -> list[tuple[str, str, str]]:
        how = ContractDraw(12, twins=True, near_misses=near)
        out = []
        for episode in synthetic:
            rows = OPERATORS["compare"].examples(episode, random.Random(episode.id), 2, contract=how)
            for row in rows:
                inputs = json.loads(row["inputs"])
                if "twin_of" in inputs:
                    out.append((inputs["first"]["value"], inputs["second"]["value"], row["label"]))
        return out

    def near(a: str, b: str) -> bool:
        items_a, items_b = set(a.split(", ")), set(b.split(", "))
        return re.sub(r"\d+", "#", a) == re.sub(r"\d+", "#", b) or len(items_a ^ items_b) == 1

    def recased(a: str, b: str) -> bool:
        return a != b and a.lower() == b.lower()

    plain, missed = twins(0.0), twins(1.0)
    two = [(a, b) for a, b, label in missed if label != "equivalent/none"]
    assert two and sum(near(a, b) for a, b in two) > 0.9 * len(two)
    plain_two = [(a, b) for a, b, label in plain if label != "equivalent/none"]
    assert sum(near(a, b) for a, b in plain_two) < 0.25 * len(plain_two)
    one = [(a, b) for a, b, label in missed if label == "equivalent/none"]
    plain_one = [(a, b) for a, b, label in plain if label == "equivalent/none"]
    assert (
        sum(recased(a, b) for a, b in one) / len(one)
        > sum(recased(a, b) for a, b in plain_one) / len(plain_one) + 0.1
    )


def test_near_twins_keep_the_pairs_side_with_a_value_missed_by_an_item_or_restated(synthetic: list) -> None:
    """``near_twins``: after the value twins (the same rows as without), each pair at one key may
    get a second twin on its own side of "one value or two": a near miss of the first value where
    the two differ, the first restated where they are one."""

    def one(label: str) -> bool:
        return label == "equivalent/none"

    def near(a: str, b: str) -> bool:
        items_a, items_b = set(a.split(", ")), set(b.split(", "))
        return re.sub(r"\d+", "#", a) == re.sub(r"\d+", "#", b) or len(items_a ^ items_b) == 1

    sides = Counter()
    for episode in synthetic:
        twins = ContractDraw(12, twins=True, near_misses=0.5)
        rows = OPERATORS["compare"].examples(episode, random.Random(episode.id), 2, contract=twins)
        with_near = OPERATORS["compare"].examples(
            episode, random.Random(episode.id), 2, contract=replace(twins, near_twins=True)
        )
        assert with_near[: len(rows)] == rows
        by_number = {int(r["id"].rsplit("/", 1)[1]): r for r in rows}
        for row in with_near[len(rows) :]:
            inputs = json.loads(row["inputs"])
            of = by_number[inputs["twin_of"]]
            assert "twin_of" not in json.loads(of["inputs"])
            first, second = inputs["first"]["value"], inputs["second"]["value"]
            assert one(row["label"]) == one(of["label"])
            if one(row["label"]):
                assert norm(first) == norm(second)
            else:
                assert near(first, second) and norm(first) != norm(second)
            sides[one(row["label"])] += 1
    assert sides[True] > 20 and sides[False] > 20


@pytest.fixture(scope="module")
def synthetic() -> list:
    return scenarios(0, 4, 0, 3)


def test_synthetic_episodes_teach_every_region_in_their_own_names(synthetic: list) -> None:
    suite_words = {norm(w) for w in suite_names()}
    for op in DECISIONS:
        seen: Counter[str] = Counter()
        for episode in synthetic:
            examples = OPERATORS[op].examples(episode, random.Random(episode.id), 2, ContractDraw(12))
            contract = [e for e in examples if '"region"' in e["inputs"]]
            assert len(contract) == 12
            for e in contract:
                seen[json.loads(e["inputs"])["region"]] += 1
                text = "\n".join(m["content"] for m in e["prompt"]).lower()
                assert not [w for w in suite_words if len(w) > 4 and w in text], e["id"]
        assert set(seen) == set(regions(op))


def test_no_training_source_speaks_the_suites_names(synthetic: list, export_dir) -> None:
    """The suite is held out by construction: its entities, slots and values appear in no
    synthetic scenario and no shipped trajectory."""
    from memops.data.trajectory import load_trajectories
    from tests.conftest import shipped

    words = {norm(w) for w in suite_names() if len(w) > 4}
    episodes = synthetic + load_trajectories(shipped(export_dir))
    for episode in episodes:
        said = {norm(c.entity) for s in episode.sessions for c in s.claims}
        said |= {norm(c.slot) for s in episode.sessions for c in s.claims}
        said |= {norm(c.value) for s in episode.sessions for c in s.claims}
        assert not words & said, episode.id


def test_a_trajectory_episode_gets_no_contract_cases(export_dir) -> None:
    from memops.data.trajectory import load_trajectories
    from tests.conftest import shipped

    episode = load_trajectories(shipped(export_dir))[0]
    assert contract_cases("compare", episode, random.Random(0), NO_CONTRACT) == []
    plain = OPERATORS["update"].examples(episode, random.Random(0), 2)
    assert OPERATORS["update"].examples(episode, random.Random(0), 2, ContractDraw(12)) == plain


def spread(spec: Operator, weights: dict[BaseModel, float]) -> list[float]:
    """Probabilities over ``spec.answers``: the given ones, the rest shared by the others."""
    rest = [a for a in spec.answers if a not in weights]
    left = (1 - sum(weights.values())) / len(rest)
    return [weights.get(a, left) for a in spec.answers]


@pytest.mark.parametrize("op", DECISIONS)
def test_a_contract_read_weighs_a_judgment_of_the_values_by_every_answer_that_makes_it(op: str) -> None:
    """An adapter that puts its weight on the winner (or action) the order does not give still
    says "two values": ``within_contract`` sums the answers that judge alike before the open
    answers meet, and where one value weighs more than all of them it says one value."""
    from memops.operators.learned import within_contract

    spec = OPERATORS[op]
    read = 0
    for case in suite(op, "test"):
        left = spec.open(*case["arguments"])
        if len(left) < 2:
            continue
        same = next(a for a in left if spec.judgment(a) in ("equivalent", "merge"))
        other = next(a for a in left if a != same)
        twos = [a for a in spec.answers if spec.judgment(a) == spec.judgment(other)]
        # each below the one-value answer, together above it
        probs = spread(spec, {same: 0.3, **{a: 0.2 for a in twos}})
        assert spec.answers[within_contract(spec, case["arguments"], probs)] == other, case["id"]
        probs = spread(spec, {same: 0.45, **{a: 0.4 / len(twos) for a in twos}})
        assert spec.answers[within_contract(spec, case["arguments"], probs)] == same, case["id"]
        read += 1
    assert read > 100
