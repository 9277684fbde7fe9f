"""What a run trains on: the fold's train split, or with ``balance_labels`` a decision's equal
draw per label."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from datasets import Dataset, load_from_disk

from memops.data.scenarios.generate import scenarios
from memops.operators.contract import ContractDraw
from memops.operators.registry import OPERATORS
from memops.train.config import OpConfig, TrainConfig
from memops.train.recipe import balanced, load_splits, standing


def test_balanced_keeps_the_rarest_labels_count_of_every_label(small_datasets: Path) -> None:
    train = load_from_disk(str(small_datasets / "all" / "compare"))["train"]
    counts = Counter(train["label"])
    assert len(set(counts.values())) > 1  # real contradictions outnumber the sampled relations
    kept = balanced(train, seed=0)
    assert Counter(kept["label"]) == {label: min(counts.values()) for label in counts}
    order = {row_id: n for n, row_id in enumerate(train["id"])}
    assert kept["id"] == sorted(kept["id"], key=order.__getitem__)
    assert balanced(train, seed=0)["id"] == kept["id"] != balanced(train, seed=1)["id"]


def test_balanced_by_standing_splits_each_label_evenly_between_one_score_and_two(
    small_datasets: Path,
) -> None:
    """``balance_standing``: equal rows per label, and within a label that has both, as many rows
    of claims with one evidence score as with two, so the standing cannot tell the label."""
    for name in ("compare", "update"):
        op = OPERATORS[name]
        train = load_from_disk(str(small_datasets / "all" / name))["train"]
        before = Counter(
            (label, standing(op, i)) for label, i in zip(train["label"], train["inputs"], strict=True)
        )
        kept = balanced(train, seed=0, op=op)
        cells = Counter(
            (label, standing(op, i)) for label, i in zip(kept["label"], kept["inputs"], strict=True)
        )
        per_label = Counter(kept["label"])
        assert len(set(per_label.values())) == 1 and set(per_label) == {label for label, _ in before}
        for (label, _), n in cells.items():
            assert n * sum(cell[0] == label for cell in before) == per_label[label]
        assert set(cells) == set(before)  # every cell keeps rows
        assert any(cell[1] is True for cell in cells) and any(cell[1] is False for cell in cells)


def test_load_splits_balances_the_train_split_only(small_datasets: Path) -> None:
    cfg = TrainConfig(
        op=OpConfig(name="compare"), fold="all", datasets_dir=str(small_datasets), balance_labels=True
    )
    dd = load_from_disk(str(small_datasets / "all" / "compare"))
    train, validation, fingerprint, real = load_splits(cfg)
    assert len(train) == len(balanced(dd["train"], cfg.seed)) < len(dd["train"])
    assert len(validation) == len(dd["validation"]) and real == []
    cfg.balance_labels = False
    assert load_splits(cfg)[2] != fingerprint


def test_extraction_trains_on_every_row_whatever_balance_labels_says(small_datasets: Path) -> None:
    """A run's ``balance_labels`` reaches every adapter; extraction's labels (claim counts) are
    not classes, and balancing them would drop most notes."""
    cfg = TrainConfig(
        op=OpConfig(name="extract"), fold="all", datasets_dir=str(small_datasets), balance_labels=True
    )
    assert len(load_splits(cfg)[0]) == len(load_from_disk(str(small_datasets / "all" / "extract"))["train"])


@pytest.mark.parametrize("near", [False, True], ids=["value-twins", "near-twins"])
def test_balanced_keeps_each_value_twin_with_its_row(near: bool) -> None:
    """A value twin (and with ``near_twins`` the near twin) is not drawn with its label but
    follows the row it is the twin of: the rows drawn are the rarest label's count of every
    label, each with its twins, so one value and two carry the same standings whatever the draw."""
    compare = OPERATORS["compare"]
    how = ContractDraw(12, twins=True, near_twins=near)
    rows = [
        {k: row[k] for k in ("id", "op", "group", "label", "inputs")}
        for episode in scenarios(0, 3, 0, 3)
        for row in compare.examples(episode, random.Random(episode.id), 2, contract=how)
    ]
    train = Dataset.from_list(rows)
    twin_of = {
        i: f"{row['id'].rsplit('/', 1)[0]}/{of:04d}"
        for i, row in enumerate(rows)
        if (of := json.loads(row["inputs"]).get("twin_of")) is not None
    }
    originals = Counter(row["label"] for i, row in enumerate(rows) if i not in twin_of)
    kept = balanced(train, seed=0)
    ids = set(kept["id"])
    twins = [rows[i]["id"] for i, of in twin_of.items() if of in ids]
    assert twins and set(twins) <= ids  # every drawn row's twin is kept
    assert all(of in ids for i, of in twin_of.items() if rows[i]["id"] in ids)  # and no twin alone
    drawn = Counter(row["label"] for row in kept if row["id"] not in twins)
    assert drawn == {label: min(originals.values()) for label in originals}
    one, two = Counter(), Counter()
    for label, inputs in zip(kept["label"], kept["inputs"], strict=True):
        if label == "equivalent/none" or label.startswith("conflicting"):
            (one if label == "equivalent/none" else two)[standing(compare, inputs)] += 1
    assert len(one) == 2 and (near or one == two)  # a near twin is on its own pair's side
    assert near == (max(Counter(twin_of.values()).values()) == 2)
