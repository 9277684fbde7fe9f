"""A summary as figures: each variant per fold with its interval, and each decision's confusion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memops.eval.contract import answer_label
from memops.eval.scored import Record
from memops.eval.summary import LEARNED
from memops.operators.registry import DECISIONS


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
