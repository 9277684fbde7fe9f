"""A run's summary, computed from its per-sample records alone (no model needed): every
variant's scores per fold and over all folds with their intervals, the paired tests, the
selection and value studies, the failures and the side-by-side samples."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from memops.eval.metrics import (
    ERROR_CLASSES,
    bootstrap_ci,
    by_wording,
    extraction_errors,
    mcnemar_exact,
    paired_bootstrap,
    value_match,
)
from memops.eval.scored import Record
from memops.operators.learned import EXTRACT_MODES, STAGED_MODES
from memops.operators.registry import DECISIONS, OPS

LEARNED: tuple[str, ...] = EXTRACT_MODES
ENGINE_ONLY = ("decisions",)
"""Variants with engine rows only (``eval.harness.DECISIONS_ONLY``: gold extraction, learned
decisions)."""
VARIANTS = (*LEARNED, *ENGINE_ONLY, "prompted", "symbolic")
"""Report variants. Records of compare and update carry ``learned`` (shared by the learned
variants, since none depends on extraction), ``prompted`` or ``symbolic``. A run scores
the ``STAGED_MODES`` only when it trained the ``extract-stages`` adapter."""
METRICS = (
    "overall",
    "extract",
    "extract_value",
    *DECISIONS,
    "engine_state",
    "engine_state_value",
    "engine_queries",
)
"""``engine_state``: the final value of a gold key equals the gold one (after ``norm``);
``engine_state_value``: it matches at the value level of extraction (``value_match``), which is
what a learned extraction's paraphrased values can reach. With gold extraction the two agree."""
EXTRACT_METRICS = ("extract", "extract_value")
"""Claim F1 of extraction at schema and at value level (docs/design.md §7)."""
PUBLISHED = {
    "extract": (0.30, 0.48),
    "overall": (0.81, 0.86),
    "compare": (1.00, 1.00),
    "update": (1.00, 1.00),
}
"""Reference figures for Qwen2.5-14B-Instruct adapters (direct, two-stage)."""


def variants(records: list[Record]) -> tuple[str, ...]:
    """The report variants a run's records hold, in report order."""
    seen = {r["variant"] for r in records}
    return tuple(v for v in VARIANTS if v in seen or (v in ("direct", "two-stage") and "learned" in seen))


def _as(variant: str, shown: tuple[str, ...]) -> tuple[str, ...]:
    """The report variants one record counts for: a ``learned`` record counts for each learned one."""
    return tuple(v for v in shown if v in LEARNED) if variant == "learned" else (variant,)


def scores(records: list[Record]) -> dict[tuple[str, str, str], dict[str, float]]:
    """(fold, variant, metric) -> {example id: score}."""
    table: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    shown = variants(records)
    for r in records:
        for variant in _as(r["variant"], shown):
            table[r["fold"], variant, r["op"]][r["id"]] = r["score"]
            if r["op"] in OPS:
                table[r["fold"], variant, "overall"][f"{r['op']}/{r['id']}"] = r["score"]
            if r["op"] == "extract":
                table[r["fold"], variant, "extract_value"][r["id"]] = r["value_score"]
            if r["op"] == "engine_state":
                matched = value_match(r["parsed"], r["gold"])
                table[r["fold"], variant, "engine_state_value"][r["id"]] = float(matched)
    return table


def summarize(records: list[Record]) -> dict[str, Any]:
    table = scores(records)
    folds = sorted({r["fold"] for r in records})
    summary: dict[str, Any] = {"folds": {}, "mean": {}, "tests": {}}
    shown = variants(records)
    summary["variants"] = list(shown)
    for fold in folds:
        summary["folds"][fold] = {
            v: {m: bootstrap_ci(list(table.get((fold, v, m), {}).values())) for m in METRICS} for v in shown
        }
    for v in shown:
        summary["mean"][v] = {
            m: bootstrap_ci([x for f in folds for x in table.get((f, v, m), {}).values()]) for m in METRICS
        }
    summary["parse_failures"] = parse_failures(records)
    summary["tests"]["extract_direct_vs_two_stage"] = _paired(table, folds, "direct", "two-stage", "extract")
    extracted = [v for v in shown if any(table.get((f, v, "extract")) for f in folds)]
    for mode in (m for m in STAGED_MODES if m in extracted):
        others = [v for v in LEARNED if v in extracted and LEARNED.index(v) < LEARNED.index(mode)]
        summary["tests"][mode.replace("-", "_")] = {
            f"vs {other}": {m: _paired(table, folds, other, mode, m) for m in EXTRACT_METRICS}
            for other in others
        }
    summary["selection"] = selection(records)
    summary["value_by_wording"] = value_by_wording(records)
    summary["extraction_errors"] = error_breakdown(records)
    summary["extraction_examples"] = side_by_side(records)
    summary["decision_misses"] = decision_misses(records)
    summary["tests"]["learned_vs_prompted"] = {
        m: _paired(table, folds, "prompted", "two-stage", m) for m in ("overall", *OPS)
    }
    return summary


def selection(records: list[Record]) -> dict[str, dict[str, dict[str, float | int]]]:
    """fold (and ``all folds``) -> variant -> stage 1's precision and recall over ``entity.slot``
    pairs, pooled over notes: what each selection method chose against the pairs the gold names."""
    counts: dict[str, dict[str, list[int]]] = {}
    ranked: dict[str, dict[str, list[tuple[list[float], list[float]]]]] = {}
    for r in records:
        if r["op"] != "extract" or r["variant"] == "symbolic" or "selected" not in r:
            continue
        gold = {f"{c['entity']}.{c['slot']}" for c in r["gold"]}
        chosen = set(r["selected"])
        if scores := r.get("pair_scores"):
            note = (
                [p for pair, p in scores.items() if pair in gold],
                [p for pair, p in scores.items() if pair not in gold],
            )
            for fold in (r["fold"], "all folds"):
                ranked.setdefault(fold, {}).setdefault(r["variant"], []).append(note)
        for fold in (r["fold"], "all folds"):
            c = counts.setdefault(fold, {}).setdefault(r["variant"], [0, 0, 0])
            c[0], c[1], c[2] = c[0] + len(chosen & gold), c[1] + len(chosen), c[2] + len(gold)
    return {
        fold: {
            v: {
                "pair_auc": pair_auc(ranked[fold][v]) if v in ranked.get(fold, {}) else None,
                "precision": hits / chosen if chosen else 0.0,
                "recall": hits / gold if gold else 0.0,
                "selected": chosen,
                "gold": gold,
            }
            for v, (hits, chosen, gold) in sorted(by.items(), key=lambda kv: VARIANTS.index(kv[0]))
        }
        for fold, by in sorted(counts.items(), key=lambda kv: (kv[0] == "all folds", kv[0]))
    }


def pair_auc(notes: list[tuple[list[float], list[float]]]) -> float | None:
    """The chance that a stated pair scores above another pair of its note's catalog (ties count
    half), over every such couple of every note (``notes``: each note's stated pairs' scores and
    its other pairs'): 0.5 is no ranking at all, whatever a selection keeps. Within a note only,
    as a selection compares a note's pairs with each other: scores on another scale per note (a
    rule's word shares, a mix standardised per note) would rank apart across notes otherwise."""
    wins = sum((a > b) + 0.5 * (a == b) for stated, other in notes for a in stated for b in other)
    couples = sum(len(stated) * len(other) for stated, other in notes)
    return wins / couples if couples else None


def value_by_wording(records: list[Record]) -> dict[str, dict[str, Any]]:
    """variant -> value F1 with a CI, apart for gold values written verbatim in their note and
    for paraphrased ones (``eval.metrics.by_wording``), pooled over notes of every fold."""
    per: dict[str, dict[str, list[float]]] = {}
    for r in records:
        if r["op"] != "extract" or "gold_verbatim" not in r:
            continue
        for side, f1 in by_wording(r["gold"], r["parsed"], r["gold_verbatim"]).items():
            per.setdefault(r["variant"], {}).setdefault(side, []).append(f1)
    return {
        v: {side: bootstrap_ci(per[v].get(side, [])) for side in ("verbatim", "paraphrased")}
        for v in sorted(per, key=VARIANTS.index)
    }


def parse_failures(records: list[Record]) -> dict[str, dict[str, dict[str, int]]]:
    """op -> variant -> answers that failed to parse or validate, and all answers: a run that
    scores 0.00 because nothing parsed must say so."""
    out: dict[str, dict[str, dict[str, int]]] = {op: {} for op in OPS}
    shown = variants(records)
    for r in records:
        if r["op"] not in OPS:
            continue
        for variant in _as(r["variant"], shown):
            cell = out[r["op"]].setdefault(variant, {"failed": 0, "n": 0})
            cell["n"] += 1
            cell["failed"] += r["error"] is not None
    return out


def error_breakdown(records: list[Record]) -> dict[str, dict[str, dict[str, int]]]:
    """fold -> variant -> error class -> claims, over the extract records of every model variant
    (``symbolic`` is gold extraction); ``notes`` and ``empty_gold_notes`` give the scale."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for r in records:
        if r["op"] != "extract" or r["variant"] == "symbolic":
            continue
        cell = out.setdefault(r["fold"], {}).setdefault(
            r["variant"], {"notes": 0, "empty_gold_notes": 0, **dict.fromkeys(ERROR_CLASSES, 0)}
        )
        cell["notes"] += 1
        cell["empty_gold_notes"] += not r["gold"]
        for kind, n in extraction_errors(r["gold"], r["parsed"]).items():
            cell[kind] += n
    return {
        fold: dict(sorted(v.items(), key=lambda kv: VARIANTS.index(kv[0]))) for fold, v in sorted(out.items())
    }


def decision_misses(records: list[Record]) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """op -> model variant -> slot -> wrong and n, over the decision records that name their slot
    (``harness._slot``), the slots with the most wrong first and only those with any: a learned
    judgment that fails on one kind of value (long requirement lists) shows as one slot."""
    out: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    for r in records:
        if r["op"] not in DECISIONS or r["variant"] == "symbolic" or "slot" not in r:
            continue
        cell = (
            out.setdefault(r["op"], {})
            .setdefault(r["variant"], {})
            .setdefault(r["slot"], {"wrong": 0, "n": 0})
        )
        cell["n"] += 1
        cell["wrong"] += r["score"] < 1
    return {
        op: {
            variant: dict(
                sorted(((k, c) for k, c in slots.items() if c["wrong"]), key=lambda kc: -kc[1]["wrong"])
            )
            for variant, slots in by_variant.items()
        }
        for op, by_variant in out.items()
    }


SIDE_BY_SIDE = 3


def side_by_side(records: list[Record], n: int = SIDE_BY_SIDE) -> list[dict[str, Any]]:
    """A few notes with their gold claims and every model variant's predictions: first those where
    the extraction variants disagree most (spread of schema F1), then notes with the most gold."""
    notes: dict[tuple[str, str], dict[str, Record]] = defaultdict(dict)
    for r in records:
        if r["op"] == "extract" and r["variant"] != "symbolic":
            notes[r["fold"], r["id"]][r["variant"]] = r

    def interest(key: tuple[str, str]) -> tuple[float, int, tuple[str, str]]:
        by = notes[key]
        spread = max(r["score"] for r in by.values()) - min(r["score"] for r in by.values())
        return -spread, -len(next(iter(by.values()))["gold"]), key

    out = []
    for key in sorted(notes, key=interest)[:n]:
        by = notes[key]
        ordered = sorted(by, key=VARIANTS.index)
        out.append(
            {
                "fold": key[0],
                "id": key[1],
                "gold": by[ordered[0]]["gold"],
                "predictions": {v: {"claims": by[v]["parsed"], "score": by[v]["score"]} for v in ordered},
            }
        )
    return out


def _paired(table: dict, folds: list[str], first: str, second: str, metric: str) -> dict[str, Any]:
    """Exact McNemar on exact match and a paired bootstrap on the score, over the shared examples
    of every fold; ``second − first`` is the direction of the bootstrap's difference."""
    pairs = [
        (table[f, first, metric][i], table[f, second, metric][i])
        for f in folds
        for i in sorted(table.get((f, first, metric), {}))
        if i in table.get((f, second, metric), {})
    ]
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    return {
        "mcnemar_exact_match": mcnemar_exact([x == 1.0 for x in a], [y == 1.0 for y in b]),
        "paired_bootstrap": paired_bootstrap(a, b),
    }
