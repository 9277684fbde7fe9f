"""How the scoring selection reads its answers, chosen on validation data only.

A scoring selection keeps the stage-1 answer whose probability the note raises most above the
adapter's prior, that probability divided by the prior to the power ``prior_weight``
(``operators.learned.pair_scores``), and may keep the empty answer or not (``select_none``).
The reading kept is the one of ``READINGS`` whose selections reach the highest F1 over a
sample of validation notes: the validation split of the fold the adapter was trained on, which
holds no held-out trajectory (``data.build.check_leakage``), its real trajectories' notes where
it holds any (``real_validation=[mined-train]``). The held-out fold's own files are
never read here, so no held-out label can move the reading.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memops.core.layout import dataset_dir
from memops.core.sessions import is_real
from memops.operators.learned import LearnedOperators, likeliest, pair_scores
from memops.operators.prompts import SELECT_TASK, catalog_pairs, selection_answers, with_task
from memops.operators.registry import EXTRACT, STAGES_ADAPTER

CALIBRATION_NOTES = 128
"""Validation notes read for the reading: one probe per note, and one per blank note of each
catalog (``operators.prompts.BLANKS``); they state 110-120 pairs drawn from the scenarios, about
145 from the mined training repositories."""
PRIOR_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The weights tried: 0 reads the probabilities as they are, 1 divides the whole prior out."""
READINGS = tuple((weight, none) for none in (True, False) for weight in PRIOR_WEIGHTS)
"""Each weight with the empty answer in play, then each without it: on a tie the earlier
reading, the one that departs less from the adapter's own answer."""


def reading_name(weight: float, none: bool) -> str:
    """How a reading is written in ``Calibration.f1``: ``0.5``, or ``0.5, a pair always``."""
    return f"{weight}" if none else f"{weight}, a pair always"


@dataclass(frozen=True)
class Calibration:
    prior_weight: float
    select_none: bool
    f1: dict[str, float]
    """Selection F1 over the notes of each reading tried (``READINGS``, ``reading_name``)."""
    precision: float
    recall: float
    notes: int
    stated: int
    """Pairs the notes state: the positives."""
    source: str
    """The validation file the notes came from."""
    examples: list[str]
    """The ids of the notes used, to show where the reading came from."""


def validation_notes(
    datasets_dir: str | Path, fold: str, n: int, seed: int
) -> tuple[Path, list[dict[str, Any]]]:
    """``n`` direct extract examples of a training fold's validation split, drawn with ``seed``:
    of its real trajectories (``real_validation``) where it holds any, since the notes a reading
    is scored on are real commit notes, each stating a claim; else of its scenarios, one in six of
    whose notes are chatter."""
    path = dataset_dir(datasets_dir, fold, EXTRACT.name) / "validation.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows = [row for row in rows if is_real(row["source"])] or rows
    chosen = sorted(random.Random(seed).sample(range(len(rows)), min(n, len(rows))))
    return path, [rows[i] for i in chosen]


def selection_f1(selected: list[list[str]], gold: list[set[str]]) -> tuple[float, float, float]:
    """(precision, recall, F1) of the selected pairs, pooled over notes."""
    hits = sum(len(set(s) & g) for s, g in zip(selected, gold, strict=True))
    chosen, stated = sum(map(len, selected)), sum(map(len, gold))
    precision, recall = hits / chosen if chosen else 0.0, hits / stated if stated else 0.0
    return precision, recall, 2 * hits / (chosen + stated) if hits else 0.0


def calibrate(
    ops: LearnedOperators, datasets_dir: str | Path, fold: str, seed: int, n: int = CALIBRATION_NOTES
) -> Calibration:
    """Read the stage-1 answers of ``n`` validation notes of ``fold`` (the adapter's training
    fold) on the ``extract-stages`` adapter, with the probes inference sends, and the blank
    notes' prior beside them; keep the reading whose selections score the highest F1."""
    path, rows = validation_notes(datasets_dir, fold, n, seed)
    asks, known = [], []
    for row in rows:
        stated = {f"{c['entity']}.{c['slot']}" for c in json.loads(row["completion"][0]["content"])["claims"]}
        pairs = catalog_pairs(row["prompt"])
        asks.append((STAGES_ADAPTER, with_task(row["prompt"], SELECT_TASK), selection_answers(pairs)))
        known.append((pairs, stated))
    odds = ops.probe("calibrate", asks)
    read = [
        (pairs, o.probs, prior, stated)
        for (pairs, stated), o, prior in zip(known, odds, ops.priors(asks), strict=True)
        if not o.refused
    ]
    found = {
        (weight, none): selection_f1(
            [likeliest(pairs, pair_scores(probs, prior, weight), none) for pairs, probs, prior, _ in read],
            [stated for *_, stated in read],
        )
        for weight, none in READINGS
    }
    best = max(READINGS, key=lambda r: (found[r][2], -READINGS.index(r)))
    precision, recall, _ = found[best]
    return Calibration(
        *best,
        {reading_name(*r): f1 for r, (_, _, f1) in found.items()},
        precision,
        recall,
        len(read),
        sum(len(stated) for *_, stated in read),
        str(path),
        [r["id"] for r in rows],
    )


def calibration_json(c: Calibration) -> str:
    return json.dumps(asdict(c), indent=2) + "\n"
