"""How the scoring selection reads its answers, chosen on validation data only.

A scoring selection keeps the stage-1 answer whose probability the note raises most above the
adapter's prior, that probability divided by the prior to the power ``prior_weight``
(``operators.learned.pair_scores``), and may keep the empty answer or not (``select_none``).
The two are placed apart, each on the notes that can show it, from the validation split of the
fold the adapter was trained on, which holds no held-out trajectory
(``data.build.check_leakage``):

- the weight is the one of ``PRIOR_WEIGHTS`` under which the pairs a note states rank highest
  among its catalog's (mean reciprocal rank), over scenario notes that state a pair: the notes
  the adapter was trained to read, where a rank is a reading of it and not noise (it selects
  0.2 of the mined notes' pairs right), and which every pair's score informs, not only the top
  one's;
- whether the empty answer may win is the choice of the higher selection F1 at that weight, over
  the notes the run will meet: the fold's real trajectories' notes where the split holds any
  (``real_validation=[mined-train]``), which each state a claim, else the scenarios', one in six
  of which is chatter;
- the mix weight of ``two-stage-mixed`` (``operators.learned.mixed_scores``) is the one of
  ``MIX_WEIGHTS`` of the highest selection F1 at the weight kept, on the same notes as the empty
  answer: how far the adapter's reading of a note is to be trusted over its words is a question
  of the notes a run meets, and the scenarios, written from the catalog's own words, overrate the
  adapter (docs/log/extraction.md).

The held-out fold's own files are never read here, so no held-out label can move the reading.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memops.core.layout import dataset_dir
from memops.core.sessions import is_real
from memops.eval.harness import BATCH, chunks
from memops.eval.scored import RecordsError, append_lines, json_lines, mend_tail
from memops.operators.learned import LearnedOperators, likeliest, mixed_selection, pair_scores, word_overlap
from memops.operators.prompts import (
    SELECT_TASK,
    catalog_entries,
    catalog_pairs,
    prompt_note,
    selection_answers,
    with_task,
)
from memops.operators.registry import EXTRACT, STAGES_ADAPTER

CALIBRATION_NOTES = 128
"""Validation notes read for each half of the reading: one probe per note, and one per blank
note of each catalog (``operators.prompts.BLANKS``); they state 110-120 pairs drawn from the
scenarios, about 145 from the mined training repositories."""
PRIOR_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The weights tried: 0 reads the probabilities as they are, 1 divides the whole prior out."""
READINGS = tuple((weight, none) for none in (True, False) for weight in PRIOR_WEIGHTS)
"""Each weight with the empty answer in play, then each without it: on a tie the earlier
reading, the one that departs less from the adapter's own answer."""
MIX_WEIGHTS = tuple(i / 10 for i in range(10, -1, -1))
"""The adapter's shares of a mixed score tried, from the adapter alone to the overlap rule alone:
on a tie the earlier, the one that leans more on the adapter."""


def reading_name(weight: float, none: bool) -> str:
    """How a reading is written in ``Calibration.f1``: ``0.5``, or ``0.5, a pair always``."""
    return f"{weight}" if none else f"{weight}, a pair always"


@dataclass(frozen=True)
class Calibration:
    prior_weight: float
    select_none: bool
    ranking: dict[str, float]
    """Mean reciprocal rank of the stated pairs under each weight (``PRIOR_WEIGHTS``), over
    ``ranked``: the weight kept is the highest, the smallest on a tie."""
    f1: dict[str, float]
    """Selection F1 over ``examples`` of each reading (``READINGS``, ``reading_name``): of the
    two at the weight kept, the higher decides the empty answer, in play on a tie."""
    precision: float
    recall: float
    notes: int
    stated: int
    """Pairs the notes state: the positives."""
    source: str
    """The validation file the notes came from."""
    examples: list[str]
    """The ids of the notes the empty answer was decided on, to show where the reading came from."""
    ranked: list[str]
    """The ids of the scenario notes the weight was placed on."""
    mix_weight: float
    """``two-stage-mixed``'s share of the adapter's score (``MIX_WEIGHTS``), placed on ``examples``."""
    mixing: dict[str, float]
    """Selection F1 over ``examples`` of each mix weight, at the prior weight kept."""


def stated_pairs(row: dict[str, Any]) -> set[str]:
    """The ``entity.slot`` pairs a direct extract example's answer states."""
    return {f"{c['entity']}.{c['slot']}" for c in json.loads(row["completion"][0]["content"])["claims"]}


def _draw(rows: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    chosen = sorted(random.Random(seed).sample(range(len(rows)), min(n, len(rows))))
    return [rows[i] for i in chosen]


def validation_notes(
    datasets_dir: str | Path, fold: str, n: int, seed: int
) -> tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]:
    """``n`` direct extract examples of a training fold's validation split twice, each drawn with
    ``seed``: scenario notes that state a pair, where the weight is placed (any note stating one
    where the split holds no scenario); and the notes the empty answer is decided on, those of
    its real trajectories (``real_validation``) where it holds any, since the notes a reading is
    scored on are real commit notes, each stating a claim, else its scenarios'."""
    path = dataset_dir(datasets_dir, fold, EXTRACT.name) / "validation.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    stating = [row for row in rows if stated_pairs(row)]
    ranked = [row for row in stating if not is_real(row["source"])] or stating
    answered = [row for row in rows if is_real(row["source"])] or rows
    return path, _draw(ranked, n, seed), _draw(answered, n, seed)


def selection_f1(selected: list[list[str]], gold: list[set[str]]) -> tuple[float, float, float]:
    """(precision, recall, F1) of the selected pairs, pooled over notes."""
    hits = sum(len(set(s) & g) for s, g in zip(selected, gold, strict=True))
    chosen, stated = sum(map(len, selected)), sum(map(len, gold))
    precision, recall = hits / chosen if chosen else 0.0, hits / stated if stated else 0.0
    return precision, recall, 2 * hits / (chosen + stated) if hits else 0.0


def reciprocal_rank(pairs: list[str], scores: list[float], stated: set[str]) -> float:
    """1 / the rank of the best-scored stated pair among the catalog's (``scores``: one per pair,
    the empty answer's last, which does not rank); a tie with it counts in its favour, and a
    note whose stated pairs the catalog does not list ranks nothing (0)."""
    by_pair = scores[: len(pairs)]
    best = max((s for p, s in zip(pairs, by_pair, strict=True) if p in stated), default=None)
    return 0.0 if best is None else 1 / (1 + sum(s > best for s in by_pair))


Read = tuple[Sequence[float], Sequence[float] | None] | None
"""A validation note's stage-1 answers' probabilities and its catalog's prior (``priors``), or
None where the backend refused the note."""

READ_FIELDS = frozenset({"id", "probs", "prior"})
"""The fields of a line of a reads file (``read_notes``)."""


def read_notes(
    ops: LearnedOperators,
    rows: list[dict[str, Any]],
    reads: Path | None = None,
    batch: int = BATCH,
    progress: bool = False,
) -> dict[str, Read]:
    """Per validation row's id, its ``Read`` on the ``extract-stages`` adapter with the probes
    inference sends, ``batch`` notes a step (a reading takes minutes on a CPU); with ``reads``,
    each step appended there as one JSON line a note and the notes found there not read again,
    so a run stopped while placing its reading resumes where it stopped."""
    found: dict[str, Read] = {}
    if reads is not None:
        lines = 0
        for lines, line in json_lines(reads):
            lost = READ_FIELDS - set(line) if isinstance(line, dict) else READ_FIELDS
            if lost:
                raise RecordsError(f"{reads}:{lines}: a note's read lacks {', '.join(sorted(lost))}")
            found[line["id"]] = None if line["probs"] is None else (line["probs"], line["prior"])
        reads.parent.mkdir(parents=True, exist_ok=True)
        mend_tail(reads, lines)
    todo = [row for row in rows if row["id"] not in found]
    with tqdm(
        total=len(rows),
        initial=len(rows) - len(todo),
        desc="placing the reading",
        unit="note",
        disable=not progress,
    ) as bar:
        for step in chunks(todo, batch):
            asks = [
                (
                    STAGES_ADAPTER,
                    with_task(row["prompt"], SELECT_TASK),
                    selection_answers(catalog_pairs(row["prompt"])),
                )
                for row in step
            ]
            said = {
                row["id"]: None if o.refused else (o.probs, prior)
                for row, o, prior in zip(step, ops.probe("calibrate", asks), ops.priors(asks), strict=True)
            }
            if reads is not None:
                append_lines(
                    reads,
                    ({"id": note, "probs": r and r[0], "prior": r and r[1]} for note, r in said.items()),
                )
            found.update(said)
            bar.update(len(step))
    return {row["id"]: found[row["id"]] for row in rows}


def calibrate(
    ops: LearnedOperators,
    datasets_dir: str | Path,
    fold: str,
    seed: int,
    n: int = CALIBRATION_NOTES,
    reads: Path | None = None,
    batch: int = BATCH,
    progress: bool = False,
) -> Calibration:
    """Read the stage-1 answers of ``n`` scenario validation notes and ``n`` notes of the kind a
    run meets (``validation_notes``) of ``fold`` (the adapter's training fold) on the
    ``extract-stages`` adapter, and the blank notes' prior beside them (``read_notes``, which
    ``reads``, ``batch`` and ``progress`` are for); keep the weight that ranks the stated pairs
    highest on the first, and the empty answer in play or not, and the mix weight, as selection
    F1 says on the second."""
    path, ranked, answered = validation_notes(datasets_dir, fold, n, seed)
    # A note drawn for both halves is read once.
    rows = {row["id"]: row for row in [*ranked, *answered]}
    said = read_notes(ops, list(rows.values()), reads, batch, progress)
    read = {
        note: (catalog_pairs(row["prompt"]), *said[note], stated_pairs(row), row["prompt"])
        if said[note]
        else None
        for note, row in rows.items()
    }
    ranks = [read[row["id"]] for row in ranked if read[row["id"]]]  # a refused note drops out
    notes = [read[row["id"]] for row in answered if read[row["id"]]]

    def mean_rank(weight: float) -> float:
        found = [
            reciprocal_rank(pairs, pair_scores(probs, prior, weight), stated)
            for pairs, probs, prior, stated, _ in ranks
        ]
        return sum(found) / len(found) if found else 0.0

    ranking = {weight: mean_rank(weight) for weight in PRIOR_WEIGHTS}
    weight = max(PRIOR_WEIGHTS, key=lambda w: (ranking[w], -w))
    found = {
        (w, none): selection_f1(
            [likeliest(pairs, pair_scores(probs, prior, w), none) for pairs, probs, prior, *_ in notes],
            [stated for *_, stated, _ in notes],
        )
        for w, none in READINGS
    }
    none = found[(weight, True)][2] >= found[(weight, False)][2]
    precision, recall, _ = found[(weight, none)]
    overlaps = [word_overlap(prompt_note(prompt), catalog_entries(prompt)) for *_, prompt in notes]

    def mixed_f1(share: float) -> float:
        selected = [
            mixed_selection(pairs, pair_scores(probs, prior, weight), overlap, share)[0]
            for (pairs, probs, prior, *_), overlap in zip(notes, overlaps, strict=True)
        ]
        return selection_f1(selected, [stated for *_, stated, _ in notes])[2]

    mixing = {share: mixed_f1(share) for share in MIX_WEIGHTS}
    return Calibration(
        weight,
        none,
        {str(w): r for w, r in ranking.items()},
        {reading_name(*r): f1 for r, (_, _, f1) in found.items()},
        precision,
        recall,
        len(notes),
        sum(len(stated) for *_, stated in notes),
        str(path),
        [row["id"] for row in answered],
        [row["id"] for row in ranked],
        max(MIX_WEIGHTS, key=mixing.__getitem__),
        {str(share): f1 for share, f1 in mixing.items()},
    )


def calibration_json(c: Calibration) -> str:
    return json.dumps(asdict(c), indent=2) + "\n"
