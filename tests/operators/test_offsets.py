"""Per-answer offsets fitted on a decision adapter's validation reads (operators/offsets.py)."""

from __future__ import annotations

import math
import random

import pytest

from memops.operators.offsets import Offsets, cross_fitted, fit

LABELS = ["add", "merge", "supersede", "contested"]


def reads(n: int, prior: float, signal: float, seed: int = 0) -> tuple[list[list[float]], list[str]]:
    """Log-likelihoods of an adapter that favours ``merge`` by ``prior`` nats whatever the input
    and the gold answer by ``signal`` nats, with unit noise."""
    rng = random.Random(seed)
    rows, gold = [], []
    for _ in range(n):
        y = rng.choice(LABELS)
        rows.append([prior * (k == "merge") + signal * (k == y) + rng.gauss(0, 1) for k in LABELS])
        gold.append(y)
    return rows, gold


def argmax(rows: list[list[float]]) -> list[str]:
    return [LABELS[max(range(len(LABELS)), key=r.__getitem__)] for r in rows]


def accuracy(answers: list[str], gold: list[str]) -> float:
    return sum(a == g for a, g in zip(answers, gold, strict=True)) / len(gold)


def test_offsets_undo_a_prior_the_adapter_puts_on_one_answer() -> None:
    rows, gold = reads(200, prior=3.0, signal=2.0)
    raw = argmax(rows)
    assert raw.count("merge") > 0.7 * len(raw)  # collapsed onto its prior
    offsets = fit(LABELS, rows, gold)
    assert offsets.offsets["merge"] == min(offsets.offsets.values()) < -1.0
    assert abs(sum(offsets.offsets.values())) < 1e-4  # centred
    # On fresh rows from the same adapter, the offsets recover what the prior hid.
    fresh, truth = reads(200, prior=3.0, signal=2.0, seed=1)
    chosen = [LABELS[offsets.choose(LABELS, [math.exp(x) for x in r])] for r in fresh]
    assert accuracy(chosen, truth) > accuracy(argmax(fresh), truth) + 0.2
    # Fitted on the other half only, the rows' own answers improve as much.
    assert accuracy(cross_fitted(LABELS, rows, gold), gold) > accuracy(raw, gold) + 0.2


def test_an_adapter_without_a_prior_keeps_its_answers() -> None:
    rows, gold = reads(200, prior=0.0, signal=2.0)
    offsets = fit(LABELS, rows, gold)
    assert max(abs(v) for v in offsets.offsets.values()) < 0.5
    assert accuracy(cross_fitted(LABELS, rows, gold), gold) >= accuracy(argmax(rows), gold) - 0.05


def test_an_adapter_with_no_signal_gets_no_scale() -> None:
    """Likelihoods that say nothing about the gold earn a scale near 0: the offsets alone then
    answer the validation gold's most common label, which is the best a blind reader can do."""
    rows, gold = reads(300, prior=2.0, signal=0.0)
    offsets = fit(LABELS, rows, gold)
    assert offsets.scale < 0.2


def test_offsets_round_trip_through_json_and_survive_a_zero_probability() -> None:
    offsets = Offsets(0.5, {"add": 1.0, "merge": -1.0})
    assert Offsets.from_json(offsets.to_json()) == offsets
    assert offsets.choose(["add", "merge"], [0.0, 1.0]) == 1  # log 0 is floored, not an error
    assert Offsets(0.0, offsets.offsets).choose(["add", "merge"], [0.0, 1.0]) == 0


def test_a_gold_label_that_is_no_answer_is_refused_with_the_answers() -> None:
    with pytest.raises(ValueError, match=r"'adding'.*none of the answers"):
        fit(LABELS, [[0.0] * 4], ["adding"])
    with pytest.raises(ValueError, match="one gold label per read row"):
        fit(LABELS, [[0.0] * 4], [])
