"""What a run trains on: the fold's train split, or with ``balance_labels`` a decision's equal
draw per label."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from datasets import load_from_disk

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
    from memops.operators.registry import OPERATORS

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
