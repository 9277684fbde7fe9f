"""Summary, report and figures, rebuilt from the per-sample records alone (no model needed)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from data.build import OPS
from eval.metrics import bootstrap_ci, mcnemar_exact, paired_bootstrap
from eval.records import Record, RecordsError, read_records, write_records

VARIANTS = ("direct", "two-stage", "prompted", "symbolic")
"""Report variants. Records of compare and update carry ``learned`` (shared by both learned
variants, since neither depends on extraction), ``prompted`` or ``symbolic``."""
METRICS = ("overall", "extract", "extract_value", "compare", "update", "engine_state", "engine_queries")
PUBLISHED = {
    "extract": (0.30, 0.48),
    "overall": (0.81, 0.86),
    "compare": (1.00, 1.00),
    "update": (1.00, 1.00),
}
"""Reference figures for Qwen2.5-14B-Instruct adapters (direct, two-stage)."""


def scores(records: list[Record]) -> dict[tuple[str, str, str], dict[str, float]]:
    """(fold, variant, metric) -> {example id: score}."""
    table: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for r in records:
        for variant in ("direct", "two-stage") if r["variant"] == "learned" else (r["variant"],):
            table[r["fold"], variant, r["op"]][r["id"]] = r["score"]
            if r["op"] in OPS:
                table[r["fold"], variant, "overall"][f"{r['op']}/{r['id']}"] = r["score"]
            if r["op"] == "extract":
                table[r["fold"], variant, "extract_value"][r["id"]] = r["value_score"]
    return table


def summarize(records: list[Record]) -> dict[str, Any]:
    table = scores(records)
    folds = sorted({r["fold"] for r in records})
    summary: dict[str, Any] = {"folds": {}, "mean": {}, "tests": {}}
    for fold in folds:
        summary["folds"][fold] = {
            v: {m: bootstrap_ci(list(table.get((fold, v, m), {}).values())) for m in METRICS}
            for v in VARIANTS
        }
    for v in VARIANTS:
        summary["mean"][v] = {
            m: bootstrap_ci([x for f in folds for x in table.get((f, v, m), {}).values()]) for m in METRICS
        }
    summary["parse_failures"] = parse_failures(records)
    summary["tests"]["extract_direct_vs_two_stage"] = _paired(table, folds, "direct", "two-stage", "extract")
    summary["tests"]["learned_vs_prompted"] = {
        m: _paired(table, folds, "prompted", "two-stage", m) for m in ("overall", *OPS)
    }
    return summary


def parse_failures(records: list[Record]) -> dict[str, dict[str, dict[str, int]]]:
    """op -> variant -> answers that failed to parse or validate, and all answers: a run that
    scores 0.00 because nothing parsed must say so."""
    out: dict[str, dict[str, dict[str, int]]] = {op: {} for op in OPS}
    for r in records:
        if r["op"] not in OPS:
            continue
        for variant in ("direct", "two-stage") if r["variant"] == "learned" else (r["variant"],):
            cell = out[r["op"]].setdefault(variant, {"failed": 0, "n": 0})
            cell["n"] += 1
            cell["failed"] += r["error"] is not None
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


def _cell(stat: dict[str, Any]) -> str:
    if stat["mean"] is None:
        return "–"
    lo, hi = stat["ci"]
    return f"{stat['mean']:.2f} [{lo:.2f}, {hi:.2f}]"


def markdown(summary: dict[str, Any], run: dict[str, Any]) -> str:
    lines = [f"# Leave-one-out report: {run.get('name', '')}", ""]
    lines += [
        f"Model `{run.get('model')}`, backend `{run.get('backend')}`. Means with bootstrap 95% CIs "
        "(10,000 resamples, seed 0); n is the number of held-out examples.",
        "",
        "`symbolic` is the reference ceiling: the engine's rules run on the same inputs, with gold "
        "extraction. Its compare and update labels come from those rules, so 1.00 there is by "
        "construction; its engine rows measure the engine and the reader themselves.",
        "",
    ]
    if run.get("model") == "tiny":
        lines += [
            "**Read the learned rows as a smoke test, not a result.** They come from a 1.1M-parameter "
            "model trained for a few dozen steps on CPU. Near-chance figures on held-out folds are the "
            "truth for such a model; nothing here says how Qwen2.5-14B adapters would do.",
            "",
        ]
    for variant in VARIANTS:
        lines += [
            f"## {variant}",
            "",
            "| Holdout | Overall | " + " | ".join(op.capitalize() for op in OPS) + " |",
            "| --- | --- |" + " --- |" * len(OPS),
        ]
        for fold, by_variant in summary["folds"].items():
            s = by_variant[variant]
            lines.append(f"| {fold} | " + " | ".join(_cell(s[m]) for m in ("overall", *OPS)) + " |")
        s = summary["mean"][variant]
        lines.append("| **all folds** | " + " | ".join(_cell(s[m]) for m in ("overall", *OPS)) + " |")
        lines.append("")
    lines += [
        "## Answers that failed to parse",
        "",
        "Share of answers that were not valid JSON for the operator's schema (scored 0).",
        "",
        "| Operator | " + " | ".join(VARIANTS) + " |",
        "| --- |" + " ---: |" * len(VARIANTS),
    ]
    for op, by_variant in summary["parse_failures"].items():
        cells = [
            f"{c['failed'] / c['n']:.0%} ({c['failed']}/{c['n']})" if (c := by_variant.get(v)) else "–"
            for v in VARIANTS
        ]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    lines += ["", "## Extraction by value, and the engine", ""]
    lines += ["| Variant | Extract (value) | Engine state | Engine queries |", "| --- | --- | --- | --- |"]
    for variant in VARIANTS:
        s = summary["mean"][variant]
        cells = " | ".join(_cell(s[m]) for m in ("extract_value", "engine_state", "engine_queries"))
        lines.append(f"| {variant} | {cells} |")
    t = summary["tests"]["extract_direct_vs_two_stage"]
    m, b = t["mcnemar_exact_match"], t["paired_bootstrap"]
    lines += [
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
    lines += [
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
    ref = ", ".join(f"{k} {d:.2f} / {s:.2f}" for k, (d, s) in PUBLISHED.items())
    lines += [
        "",
        f"Published reference for Qwen2.5-14B-Instruct adapters (direct / two-stage): {ref}.",
        "",
        "Figures: `figures/holdouts.png`, `figures/confusion_compare.png`, `figures/confusion_update.png`.",
        "",
    ]
    return "\n".join(lines)


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
        for k, variant in enumerate(("direct", "two-stage")):
            stats = [summary["folds"][f][variant][metric] for f in folds]
            means = [s["mean"] or 0.0 for s in stats]
            err = [
                [m - (s["ci"][0] or 0.0) for m, s in zip(means, stats, strict=True)],
                [(s["ci"][1] or 0.0) - m for m, s in zip(means, stats, strict=True)],
            ]
            ax.bar(x + (k - 0.5) * 0.38, means, 0.38, yerr=err, capsize=3, label=variant)
        ceiling = [summary["folds"][f]["symbolic"][metric]["mean"] or 0.0 for f in folds]
        ax.scatter(x, ceiling, marker="_", s=400, color="black", label="symbolic", zorder=3)
        ax.set_xticks(x, folds, rotation=20, ha="right")
        ax.set_title(f"{metric} per holdout (95% CI)")
        ax.set_ylim(0, 1.05)
    axes[0].legend()
    fig.tight_layout()
    paths.append(out / "holdouts.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    for op in ("compare", "update"):
        rows = [r for r in records if r["op"] == op and r["variant"] == "learned"]
        label = (lambda d: f"{d['relation']}/{d['winner']}") if op == "compare" else (lambda d: d["action"])
        gold = sorted({label(r["gold"]) for r in rows})
        pred_labels = [label(r["parsed"]) if r["parsed"] else "unparsable" for r in rows]
        cols = gold + sorted({p for p in pred_labels if p not in gold})
        m = np.zeros((len(gold), len(cols)), dtype=int)
        for r, p in zip(rows, pred_labels, strict=True):
            m[gold.index(label(r["gold"])), cols.index(p)] += 1
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
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (run_dir / "report.md").write_text(markdown(summary, run))
    figures(summary, records, run_dir / "figures")
    return summary


def merge_folds(run_dir: Path, folds: list[str]) -> int:
    """Gather the per-fold runs under ``<run>/folds/`` (one Slurm eval job each) into the run's
    own records and manifest; returns the number of records."""
    from data.manifest import write_manifest

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
    first = parts[folds[0]].get("run", {})
    write_manifest(
        run_dir,
        run={**first, "name": run_dir.name, "folds": folds},
        parts={fold: str(run_dir / "folds" / fold) for fold in folds},
        part_commits={fold: m.get("git_commit") for fold, m in parts.items()},
        records=len(records),
    )
    return len(records)


def table(summary: dict[str, Any]) -> str:
    """The console table: per holdout, overall and extract for both learned variants; then the
    prompted baseline and the rules, and compare and update over all folds."""
    names = ("Overall direct", "Overall 2-stage", "Extract direct", "Extract 2-stage")
    lines = [f"{'Holdout':<18}" + "".join(f"{n:>22}" for n in names)]
    rows = [*summary["folds"].items(), ("all folds", summary["mean"])]
    for fold, s in rows:
        cells = [_cell(s[v][m]) for m in ("overall", "extract") for v in ("direct", "two-stage")]
        lines.append(f"{fold:<18}" + "".join(f"{c:>22}" for c in cells))
    s = summary["mean"]["prompted"]  # two-stage extraction, like the learned row it is paired with
    lines.append(f"{'prompted (base)':<18}{'':>22}{_cell(s['overall']):>22}{'':>22}{_cell(s['extract']):>22}")
    s = summary["mean"]["symbolic"]
    lines.append(f"{'symbolic (ref.)':<18}{_cell(s['overall']):>22}{'':>22}{_cell(s['extract']):>22}")
    lines += ["", f"{'All folds':<18}" + "".join(f"{n:>22}" for n in ("Compare", "Update"))]
    for variant, label in (
        ("two-stage", "learned"),
        ("prompted", "prompted (base)"),
        ("symbolic", "symbolic"),
    ):
        s = summary["mean"][variant]
        lines.append(f"{label:<18}{_cell(s['compare']):>22}{_cell(s['update']):>22}")
    return "\n".join(lines)
