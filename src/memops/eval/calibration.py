"""The threshold of the scoring selection, chosen on validation data only.

A scoring selection keeps every catalog pair at least ``threshold`` likely to be the stage-1
answer. The threshold is the one that maximizes selection F1 over every catalog pair of a sample
of validation notes: the validation split of the fold the adapter was trained on, which holds no
held-out trajectory (``data.build.check_leakage``). The held-out fold's own files are never read
here, so no held-out label can move the threshold.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memops.core.layout import dataset_dir
from memops.operators.learned import LearnedOperators
from memops.operators.prompts import SELECT_TASK, catalog_pairs, selection_answers, with_task
from memops.operators.registry import EXTRACT, STAGES_ADAPTER

CALIBRATION_NOTES = 32
"""Validation notes scored against every pair of their catalog (1,376 pairs on the 43-pair
synthetic catalog, one probe per note): enough positives to place a threshold."""


@dataclass(frozen=True)
class Calibration:
    threshold: float
    precision: float
    recall: float
    f1: float
    notes: int
    pairs: int
    stated: int
    """Pairs the notes state: the positives."""
    source: str
    """The validation file the notes came from."""
    examples: list[str]
    """The ids of the notes used, to show where the threshold came from."""


def validation_notes(
    datasets_dir: str | Path, fold: str, n: int, seed: int
) -> tuple[Path, list[dict[str, Any]]]:
    """``n`` direct extract examples of a training fold's validation split, drawn with ``seed``."""
    path = dataset_dir(datasets_dir, fold, EXTRACT.name) / "validation.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    chosen = sorted(random.Random(seed).sample(range(len(rows)), min(n, len(rows))))
    return path, [rows[i] for i in chosen]


def best_threshold(scored: list[tuple[float, bool]]) -> tuple[float, float, float, float]:
    """(threshold, precision, recall, F1) of the cut that maximizes F1, keeping every pair at
    or above it; among equal F1 the higher threshold. With no positive at all, 1.0 keeps only
    certain pairs."""
    positives = sum(stated for _, stated in scored)
    best = (1.0, 0.0, 0.0, 0.0)
    kept = hits = 0
    ranked = sorted(scored, key=lambda s: -s[0])
    for k, (p, stated) in enumerate(ranked):
        kept, hits = kept + 1, hits + stated
        if k + 1 < len(ranked) and ranked[k + 1][0] == p:
            continue  # a cut cannot split pairs of equal probability
        precision, recall = hits / kept, hits / positives if positives else 0.0
        f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
        if f1 > best[3]:
            best = (p, precision, recall, f1)
    return best


def calibrate(
    ops: LearnedOperators, datasets_dir: str | Path, fold: str, seed: int, n: int = CALIBRATION_NOTES
) -> Calibration:
    """Score every catalog pair of ``n`` validation notes of ``fold`` (the adapter's training
    fold) on the ``extract-stages`` adapter, with the probes inference sends, and place the
    threshold."""
    path, rows = validation_notes(datasets_dir, fold, n, seed)
    asks, stated = [], []
    for row in rows:
        gold = {f"{c['entity']}.{c['slot']}" for c in json.loads(row["completion"][0]["content"])["claims"]}
        pairs = catalog_pairs(row["prompt"])
        asks.append((STAGES_ADAPTER, with_task(row["prompt"], SELECT_TASK), selection_answers(pairs)))
        stated.append([pair in gold for pair in pairs])
    scored = [
        (q, s)
        for odds, marks in zip(ops.probe("calibrate", asks), stated, strict=True)
        if not odds.refused
        for q, s in zip(odds.probs[:-1], marks, strict=True)
    ]
    threshold, precision, recall, f1 = best_threshold(scored)
    return Calibration(
        threshold,
        precision,
        recall,
        f1,
        len(rows),
        len(scored),
        sum(s for _, s in scored),
        str(path),
        [r["id"] for r in rows],
    )


def calibration_json(c: Calibration) -> str:
    return json.dumps(asdict(c), indent=2) + "\n"
