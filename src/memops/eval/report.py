"""Summary, report and figures, rebuilt from the per-sample records alone (no model needed)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from memops.core.files import write_atomic
from memops.eval.contract import CONTRACT_RECORDS, answer_label, contract_markdown, read_contract
from memops.eval.metrics import (
    BOOTSTRAP_RESAMPLES,
    ERROR_CLASSES,
    SEED,
    bootstrap_ci,
    by_wording,
    extraction_errors,
    mcnemar_exact,
    paired_bootstrap,
    value_match,
)
from memops.eval.records import Record, RecordsError, read_records, write_records
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
    for mode in (m for m in STAGED_MODES if m in shown):
        others = [v for v in LEARNED if v in shown and LEARNED.index(v) < LEARNED.index(mode)]
        summary["tests"][mode.replace("-", "_")] = {
            f"vs {other}": {m: _paired(table, folds, other, mode, m) for m in EXTRACT_METRICS}
            for other in others
        }
    summary["selection"] = selection(records)
    summary["value_by_wording"] = value_by_wording(records)
    summary["extraction_errors"] = error_breakdown(records)
    summary["extraction_examples"] = side_by_side(records)
    summary["tests"]["learned_vs_prompted"] = {
        m: _paired(table, folds, "prompted", "two-stage", m) for m in ("overall", *OPS)
    }
    return summary


def selection(records: list[Record]) -> dict[str, dict[str, dict[str, float | int]]]:
    """fold (and ``all folds``) -> variant -> stage 1's precision and recall over ``entity.slot``
    pairs, pooled over notes: what each selection method chose against the pairs the gold names."""
    counts: dict[str, dict[str, list[int]]] = {}
    ranked: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for r in records:
        if r["op"] != "extract" or r["variant"] == "symbolic" or "selected" not in r:
            continue
        gold = {f"{c['entity']}.{c['slot']}" for c in r["gold"]}
        chosen = set(r["selected"])
        for pair, p in r.get("pair_scores", {}).items():
            for fold in (r["fold"], "all folds"):
                stated, other = ranked.setdefault(fold, {}).setdefault(r["variant"], ([], []))
                (stated if pair in gold else other).append(p)
        for fold in (r["fold"], "all folds"):
            c = counts.setdefault(fold, {}).setdefault(r["variant"], [0, 0, 0])
            c[0], c[1], c[2] = c[0] + len(chosen & gold), c[1] + len(chosen), c[2] + len(gold)
    return {
        fold: {
            v: {
                "pair_auc": pair_auc(*ranked[fold][v]) if v in ranked.get(fold, {}) else None,
                "precision": hits / chosen if chosen else 0.0,
                "recall": hits / gold if gold else 0.0,
                "selected": chosen,
                "gold": gold,
            }
            for v, (hits, chosen, gold) in sorted(by.items(), key=lambda kv: VARIANTS.index(kv[0]))
        }
        for fold, by in sorted(counts.items(), key=lambda kv: (kv[0] == "all folds", kv[0]))
    }


def pair_auc(stated: list[float], other: list[float]) -> float | None:
    """The chance that a stated pair scores above another pair of its note's catalog (ties count
    half): 0.5 is no ranking at all, whatever the threshold."""
    if not stated or not other:
        return None
    wins = sum((a > b) + 0.5 * (a == b) for a in stated for b in other)
    return wins / (len(stated) * len(other))


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


def cell(stat: dict[str, Any]) -> str:
    if stat["mean"] is None:
        return "–"
    lo, hi = stat["ci"]
    return f"{stat['mean']:.2f} [{lo:.2f}, {hi:.2f}]"


def markdown(summary: dict[str, Any], run: dict[str, Any]) -> str:
    """The report: one function per section, in reading order."""
    sections = (
        header(run),
        variant_tables(summary),
        parse_failure_table(summary),
        value_and_engine_table(summary),
        direct_vs_two_stage(summary),
        extraction_sections(summary),
        learned_vs_prompted(summary),
        contract_markdown(summary.get("contract", {})),
        references(),
    )
    return "\n".join(line for section in sections for line in section)


def header(run: dict[str, Any]) -> list[str]:
    lines = [
        f"# Leave-one-out report: {run.get('name', '')}",
        "",
        f"Model `{run.get('model')}`, backend `{run.get('backend')}`. Means with bootstrap 95% CIs "
        f"({BOOTSTRAP_RESAMPLES:,} resamples, seed {SEED}); n is the number of held-out examples.",
        "",
        "`symbolic` is the reference ceiling: the engine's rules run on the same inputs, with gold "
        "extraction. Its compare and update labels come from those rules, so 1.00 there is by "
        "construction; its engine rows measure the engine and the reader themselves.",
        "",
    ]
    if run.get("model_note"):  # what the model's config says its rows can mean (configs/model/)
        lines += [run["model_note"], ""]
    return lines


def variant_tables(summary: dict[str, Any]) -> list[str]:
    lines = []
    for variant in (v for v in summary["variants"] if v not in ENGINE_ONLY):
        lines += [
            f"## {variant}",
            "",
            "| Fold | Overall | " + " | ".join(op.capitalize() for op in OPS) + " |",
            "| --- | --- |" + " --- |" * len(OPS),
        ]
        for fold, by_variant in summary["folds"].items():
            s = by_variant[variant]
            lines.append(f"| {fold} | " + " | ".join(cell(s[m]) for m in ("overall", *OPS)) + " |")
        s = summary["mean"][variant]
        lines.append("| **all folds** | " + " | ".join(cell(s[m]) for m in ("overall", *OPS)) + " |")
        lines.append("")
    return lines


def parse_failure_table(summary: dict[str, Any]) -> list[str]:
    shown = summary["variants"]
    lines = [
        "## Answers that failed to parse",
        "",
        "Share of answers that were not valid JSON for the operator's schema (scored 0).",
        "",
        "| Operator | " + " | ".join(shown) + " |",
        "| --- |" + " ---: |" * len(shown),
    ]
    for op, by_variant in summary["parse_failures"].items():
        cells = [
            f"{c['failed'] / c['n']:.0%} ({c['failed']}/{c['n']})" if (c := by_variant.get(v)) else "–"
            for v in shown
        ]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return lines


def value_and_engine_table(summary: dict[str, Any]) -> list[str]:
    lines = ["", "## Extraction by value, and the engine", ""]
    lines += [
        "| Variant | Extract (value) | Engine state | Engine state (value match) | Engine queries |",
        "| --- | --- | --- | --- | --- |",
    ]
    for variant in summary["variants"]:
        s = summary["mean"][variant]
        metrics = ("extract_value", "engine_state", "engine_state_value", "engine_queries")
        cells = " | ".join(cell(s[m]) for m in metrics)
        lines.append(f"| {variant} | {cells} |")
    return lines


def direct_vs_two_stage(summary: dict[str, Any]) -> list[str]:
    t = summary["tests"]["extract_direct_vs_two_stage"]
    m, b = t["mcnemar_exact_match"], t["paired_bootstrap"]
    lines = [
        "",
        "## Direct vs two-stage extraction (paired, all folds)",
        "",
        f"- Exact McNemar on per-example exact match: {m['only_first']} right only direct, "
        f"{m['only_second']} right only two-stage, p = {m['p']:.3g} (n = {m['n']}).",
    ]
    if b["mean_diff"] is not None:
        lines.append(
            f"- Paired bootstrap on schema F1 (two-stage − direct): {b['mean_diff']:+.3f} "
            f"[{b['ci'][0]:+.3f}, {b['ci'][1]:+.3f}], p = {b['p']:.3g}."
        )
    return lines


def learned_vs_prompted(summary: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Learned (two-stage) vs prompted (paired, all folds)",
        "",
        "`prompted` is the base model without adapters, with the same prompts and grammar and "
        "two-stage extraction: an instruct model used as a judge, as memory systems such as Mem0, "
        "Graphiti and Zep run these operators.",
        "",
        "| Metric | right only prompted | right only learned | McNemar p | learned − prompted [95% CI] |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for metric, t in summary["tests"]["learned_vs_prompted"].items():
        m, b = t["mcnemar_exact_match"], t["paired_bootstrap"]
        diff = (
            "–" if b["mean_diff"] is None else f"{b['mean_diff']:+.3f} [{b['ci'][0]:+.3f}, {b['ci'][1]:+.3f}]"
        )
        lines.append(f"| {metric} | {m['only_first']} | {m['only_second']} | {m['p']:.3g} | {diff} |")
    return lines


def references() -> list[str]:
    ref = ", ".join(f"{k} {d:.2f} / {s:.2f}" for k, (d, s) in PUBLISHED.items())
    confusions = ", ".join(f"`figures/confusion_{op}.png`" for op in DECISIONS)
    return [
        "",
        f"Published reference for Qwen2.5-14B-Instruct adapters (direct / two-stage): {ref}.",
        "",
        f"Figures: `figures/folds.png`, {confusions}.",
        "",
    ]


ERROR_HEADERS = {
    "correct": "correct",
    "missing_pair": "missing pair",
    "wrong_pair": "wrong pair",
    "wrong_scope": "wrong branch/env/evidence",
    "wrong_value": "wrong value",
    "extra": "extra claim",
    "spurious": "spurious (empty gold)",
}


def _claim(c: dict[str, Any]) -> str:
    value = str(c.get("value", "")).replace("|", "\\|")
    scope = f"{c.get('branch')}/{c.get('env')}, {c.get('evidence_type')}"
    return f"`{c.get('entity')}.{c.get('slot')}` [{scope}] = {value}"


def _test_row(name: str, t: dict[str, Any]) -> str:
    m, b = t["mcnemar_exact_match"], t["paired_bootstrap"]
    diff = "–" if b["mean_diff"] is None else f"{b['mean_diff']:+.3f} [{b['ci'][0]:+.3f}, {b['ci'][1]:+.3f}]"
    p = "–" if b["p"] is None else f"{b['p']:.3g}" if b["p"] else f"< {1 / BOOTSTRAP_RESAMPLES:g}"
    return f"| {name} | {m['only_first']} | {m['only_second']} | {m['p']:.3g} | {diff} | {p} |"


def selection_lines(summary: dict[str, Any]) -> list[str]:
    """Stage 1 per fold and selection method, and value F1 by how the gold value is worded."""
    lines = []
    if summary.get("selection"):
        lines += [
            "",
            "## Selection (stage 1)",
            "",
            "The `entity.slot` pairs each variant selected, against the pairs the gold names, pooled "
            "over the fold's notes (direct: the pairs its claims name). Pair AUC, for a scoring "
            "selection: how often a stated pair scores above an unstated one, over the notes pooled.",
            "",
            "| Fold | Variant | precision | recall | selected | gold | pair AUC |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for fold, by in summary["selection"].items():
            for v, c in by.items():
                name = f"**{fold}**" if fold == "all folds" else fold
                shares = f"{c['precision']:.2f} | {c['recall']:.2f}"
                auc = "–" if c["pair_auc"] is None else f"{c['pair_auc']:.2f}"
                lines.append(f"| {name} | {v} | {shares} | {c['selected']} | {c['gold']} | {auc} |")
    if summary.get("value_by_wording"):
        lines += [
            "",
            "Value F1 apart for gold values written verbatim in their note and for paraphrased ones "
            "(each side's gold claims against the predictions of their scope; notes with such gold):",
            "",
            "| Variant | verbatim | paraphrased |",
            "| --- | --- | --- |",
        ]
        for v, sides in summary["value_by_wording"].items():
            cells = [f"{cell(sides[k])} (n = {sides[k]['n']})" for k in ("verbatim", "paraphrased")]
            lines.append(f"| {v} | {' | '.join(cells)} |")
    return lines


def extraction_sections(summary: dict[str, Any]) -> list[str]:
    """The three extraction variants side by side, their paired tests, where extraction fails
    per fold, and a few notes with gold and predictions."""
    shown = [v for v in summary["variants"] if v != "symbolic"]
    lines = ["", "## Extraction variants (all folds)", ""]
    lines += [
        "`direct` asks for every claim at once; `two-stage` selects the pairs, then fills each, under "
        "grammars, on the extract adapter trained on direct prompts only (the paper's decoder); "
        "`two-stage-trained` makes the same calls on an adapter trained with the stage examples too; "
        "`two-stage-scored` reads that adapter's stage-1 answer instead of decoding it: each catalog "
        "pair is scored by the probability that the answer is that pair alone, and the pairs at a "
        "threshold placed on validation notes are kept; `two-stage-overlap` selects with no model, the "
        "one catalog pair whose words (names and description) the note uses most, and fills it on the "
        "same adapter.",
        "",
        "",
        "Engine keys: the share of final-state keys right when this variant's extraction feeds the "
        "engine with the learned decisions (the prompted base: its own extraction and decisions): "
        "the final value equal to the gold one, and within value F1's match (token F1 ≥ 0.5).",
        "",
        "| Variant | Schema F1 | Value F1 | Engine keys | Engine keys (value match) | n |",
        "| --- | --- | --- | --- | --- | ---: |",
    ]
    for v in shown:
        s = summary["mean"][v]
        metrics = ("extract", "extract_value", "engine_state", "engine_state_value")
        cells = " | ".join(cell(s[m]) for m in metrics)
        lines.append(f"| {v} | {cells} | {s['extract']['n']} |")
    for mode in STAGED_MODES:
        if not (tests := summary["tests"].get(mode.replace("-", "_"))):
            continue
        lines += [
            "",
            f"Paired tests of {mode} against the variants before it (exact McNemar on per-note exact "
            f"match; paired bootstrap on F1, {mode} − other):",
            "",
            f"| Comparison | right only other | right only {mode} | McNemar p | {mode} − other [95% CI] "
            "| bootstrap p |",
            "| --- | ---: | ---: | ---: | --- | ---: |",
        ]
        for vs, by_metric in tests.items():
            for metric, t in by_metric.items():
                level = "schema" if metric == "extract" else "value"
                lines.append(_test_row(f"{vs}, {level}", t))
    lines += selection_lines(summary)
    lines += ["", "## Where extraction fails", ""]
    lines += [
        "Claims per class, per fold (`extraction_errors` in eval/metrics.py): gold claims are "
        "correct, missing pair, wrong branch/env/evidence or wrong value (token-F1 < 0.5); "
        "predictions left over are a wrong pair, an extra claim for a gold pair, or spurious on a "
        "note whose gold is empty. Missing and wrong pairs are selection errors.",
        "",
        "| Fold | Variant | notes (empty gold) | " + " | ".join(ERROR_HEADERS.values()) + " |",
        "| --- | --- | ---: |" + " ---: |" * len(ERROR_HEADERS),
    ]
    totals: dict[str, dict[str, int]] = {}
    for fold, by_variant in summary["extraction_errors"].items():
        for v, c in by_variant.items():
            cells = " | ".join(str(c[k]) for k in ERROR_HEADERS)
            lines.append(f"| {fold} | {v} | {c['notes']} ({c['empty_gold_notes']}) | {cells} |")
            total = totals.setdefault(v, dict.fromkeys(c, 0))
            for k, n in c.items():
                total[k] += n
    for v, c in sorted(totals.items(), key=lambda kv: VARIANTS.index(kv[0])):
        cells = " | ".join(f"**{c[k]}**" for k in ERROR_HEADERS)
        lines.append(f"| **all folds** | {v} | {c['notes']} ({c['empty_gold_notes']}) | {cells} |")
    if summary["extraction_examples"]:
        lines += ["", "### Notes side by side", ""]
    for ex in summary["extraction_examples"]:
        lines += [f"`{ex['id']}` ({ex['fold']})", "", "| | Claims | Schema F1 |", "| --- | --- | ---: |"]
        lines.append(f"| gold | {'<br>'.join(map(_claim, ex['gold'])) or '(none)'} | |")
        for v, p in ex["predictions"].items():
            lines.append(f"| {v} | {'<br>'.join(map(_claim, p['claims'])) or '(none)'} | {p['score']:.2f} |")
        lines.append("")
    return lines


def figures(summary: dict[str, Any], records: list[Record], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    folds = list(summary["folds"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    x = np.arange(len(folds))
    for ax, metric in zip(axes, ("overall", "extract"), strict=True):
        learned = [v for v in summary["variants"] if v in LEARNED]
        width = 0.8 / len(learned)
        for k, variant in enumerate(learned):
            stats = [summary["folds"][f][variant][metric] for f in folds]
            means = [s["mean"] or 0.0 for s in stats]
            err = [
                [m - (s["ci"][0] or 0.0) for m, s in zip(means, stats, strict=True)],
                [(s["ci"][1] or 0.0) - m for m, s in zip(means, stats, strict=True)],
            ]
            ax.bar(x + (k - (len(learned) - 1) / 2) * width, means, width, yerr=err, capsize=3, label=variant)
        ceiling = [summary["folds"][f]["symbolic"][metric]["mean"] or 0.0 for f in folds]
        ax.scatter(x, ceiling, marker="_", s=400, color="black", label="symbolic", zorder=3)
        ax.set_xticks(x, folds, rotation=20, ha="right")
        ax.set_title(f"{metric} per fold (95% CI)")
        ax.set_ylim(0, 1.05)
    axes[0].legend()
    fig.tight_layout()
    paths.append(out / "folds.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    for op in DECISIONS:
        rows = [r for r in records if r["op"] == op and r["variant"] == "learned"]
        gold = sorted({answer_label(op, r["gold"]) for r in rows})
        pred_labels = [answer_label(op, r["parsed"]) if r["parsed"] else "unparsable" for r in rows]
        cols = gold + sorted({p for p in pred_labels if p not in gold})
        m = np.zeros((len(gold), len(cols)), dtype=int)
        for r, p in zip(rows, pred_labels, strict=True):
            m[gold.index(answer_label(op, r["gold"])), cols.index(p)] += 1
        fig, ax = plt.subplots(figsize=(1.2 * len(cols) + 2, 0.6 * len(gold) + 2))
        ax.imshow(m, cmap="Blues")
        for i in range(len(gold)):
            for j in range(len(cols)):
                ax.text(j, i, str(m[i, j]), ha="center", va="center")
        ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
        ax.set_yticks(range(len(gold)), gold)
        ax.set_xlabel("predicted")
        ax.set_ylabel("gold")
        ax.set_title(f"{op}: learned, all folds (n={len(rows)})")
        fig.tight_layout()
        paths.append(out / f"confusion_{op}.png")
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)
    return paths


def build_report(run_dir: Path) -> dict[str, Any]:
    """Write summary.json, report.md and figures/ for a run directory from its records."""
    records = read_records(run_dir / "records.jsonl")
    if not records:
        raise FileNotFoundError(f"no records in {run_dir / 'records.jsonl'}")
    manifest = run_dir / "manifest.json"
    run = json.loads(manifest.read_text())["run"] if manifest.exists() else {}
    summary = summarize(records)
    summary["contract"] = read_contract(run_dir)
    write_atomic(run_dir / "summary.json", json.dumps(summary, indent=1) + "\n")
    write_atomic(run_dir / "report.md", markdown(summary, run))
    figures(summary, records, run_dir / "figures")
    return summary


def merge_folds(run_dir: Path, folds: list[str]) -> int:
    """Gather the per-fold runs under ``<run>/folds/`` (one Slurm eval job each) into the run's
    own records and manifest; returns the number of records."""
    from memops.data.manifest import write_manifest

    records: list[Record] = []
    parts: dict[str, dict[str, Any]] = {}
    for fold in folds:
        part = run_dir / "folds" / fold
        path = part / "records.jsonl"
        if not path.exists():
            raise FileNotFoundError(f"no records for fold {fold}: {path} does not exist")
        found = read_records(path)
        strangers = sorted({r["fold"] for r in found} - {fold})
        if strangers:
            raise RecordsError(
                f"{path}: holds records of fold(s) {', '.join(strangers)}, expected {fold} only"
            )
        records += found
        manifest = part / "manifest.json"
        parts[fold] = json.loads(manifest.read_text()) if manifest.exists() else {}
    write_records(run_dir / "records.jsonl", records)
    # Each fold's job scored the same contract suite; the first fold's records stand for the run.
    suites = [run_dir / "folds" / fold / CONTRACT_RECORDS for fold in folds]
    if scored := next((path for path in suites if path.exists()), None):
        write_records(run_dir / CONTRACT_RECORDS, read_records(scored))
    first = parts[folds[0]].get("run", {})
    write_manifest(
        run_dir,
        run={**first, "name": run_dir.name, "folds": folds},
        parts={fold: str(run_dir / "folds" / fold) for fold in folds},
        part_commits={fold: m.get("git_commit") for fold, m in parts.items()},
        part_phases={fold: m.get("phases") for fold, m in parts.items()},
        records=len(records),
    )
    return len(records)


def table(summary: dict[str, Any]) -> str:
    """The console table: per fold, overall and extract for both learned variants; then the
    prompted baseline and the rules, and every decision operator over all folds. A run with no
    learned extraction (a decisions-only run) gets the decisions' table instead."""
    if all(summary["mean"][v]["extract"]["mean"] is None for v in LEARNED if v in summary["mean"]):
        return decisions_table(summary)
    names = ("Overall direct", "Overall 2-stage", "Extract direct", "Extract 2-stage")
    lines = [f"{'Fold':<18}" + "".join(f"{n:>22}" for n in names)]
    rows = [*summary["folds"].items(), ("all folds", summary["mean"])]
    for fold, s in rows:
        cells = [cell(s[v][m]) for m in ("overall", "extract") for v in ("direct", "two-stage")]
        lines.append(f"{fold:<18}" + "".join(f"{c:>22}" for c in cells))
    s = summary["mean"]["prompted"]  # two-stage extraction, like the learned row it is paired with
    lines.append(f"{'prompted (base)':<18}{'':>22}{cell(s['overall']):>22}{'':>22}{cell(s['extract']):>22}")
    s = summary["mean"]["symbolic"]
    lines.append(f"{'symbolic (ref.)':<18}{cell(s['overall']):>22}{'':>22}{cell(s['extract']):>22}")
    for mode in (m for m in STAGED_MODES if m in summary["mean"]):
        s = summary["mean"][mode]
        label = mode.replace("two-stage-", "2-stage ")
        lines.append(f"{label:<18}{'':>22}{cell(s['overall']):>22}{'':>22}{cell(s['extract']):>22}")
    lines += ["", f"{'All folds':<18}" + "".join(f"{op.capitalize():>22}" for op in DECISIONS)]
    for variant, label in (
        ("two-stage", "learned"),
        ("prompted", "prompted (base)"),
        ("symbolic", "symbolic"),
    ):
        s = summary["mean"][variant]
        lines.append(f"{label:<18}" + "".join(f"{cell(s[op]):>22}" for op in DECISIONS))
    return "\n".join(lines)


def decisions_table(summary: dict[str, Any]) -> str:
    """The console table of a decisions-only run: per fold, each decision operator learned and the
    engine's final-state keys with gold extraction and the learned decisions; then the prompted
    base and the rules over all folds. A run without replays (``replay=false``) has no engine row."""
    names = (*(f"{op.capitalize()} learned" for op in DECISIONS), "Engine keys")
    lines = [f"{'Fold':<18}" + "".join(f"{n:>22}" for n in names)]
    unreplayed = {"mean": None}
    for fold, s in [*summary["folds"].items(), ("all folds", summary["mean"])]:
        engine = s["decisions"]["engine_state"] if "decisions" in s else unreplayed
        cells = [*(cell(s["two-stage"][op]) for op in DECISIONS), cell(engine)]
        lines.append(f"{fold:<18}" + "".join(f"{c:>22}" for c in cells))
    for variant, label in (("prompted", "prompted (base)"), ("symbolic", "symbolic (ref.)")):
        s = summary["mean"][variant]
        cells = [cell(s[op]) for op in (*DECISIONS, "engine_state")]
        lines.append(f"{label:<18}" + "".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)
