"""A recipe's learned decisions over seeds: the figure as a distribution, not one draw.

    python benchmarks/seed_sweep.py [--config-name smollm2-demo] [--seeds 0 1 2] \
        [--root outputs/bench/seeds] [overrides...]

One ``memops loo`` per seed (a child process each, one after the other: each takes both cores),
with the seed's own datasets, adapters and run under ``--root``: the seed draws the synthetic
scenarios and the sampled compare pairs, the label-balanced training draw and the adapters'
initialisation. Hydra overrides after the options reach every run (``contract=[learned]``
unless they name ``contract``). A rerun resumes each run where it stopped (finished adapters and
records are kept).

Prints per seed and as mean ± standard deviation over seeds: compare and update exact match on
the held-out trajectories, the engine's final-state keys with gold extraction and the learned
decisions (pooled, and per group where the run scores more than one: the shipped five, the mined
held-out side), the contract suite overall and its weakest region, each adapter's validation answers
read as they are and under offsets fitted on the other half of the rows (``calibrated``), on
the real trajectories alone where the run names some in ``real_validation`` (``real``), and
what the collapse guard flagged (an adapter collapsed onto one label, labels an adapter dropped),
and under ``select=decisions`` the checkpoint each adapter kept. Writes
``<root>/<config>/seeds.json`` and ``seeds.png`` (``seeds-<tag>.*`` with ``--tag``); the rows
of other seeds that an earlier sweep with the same overrides wrote there stay in both, so seeds
run one command at a time add up to one table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from memops.core.layout import ADAPTER_MANIFEST, OUTPUTS
from memops.core.sources import GROUPS, group
from memops.operators.registry import DECISIONS
from memops.train.selection import pooled
from memops.train.validation import dropped, read_sets

COLUMNS = ("compare", "update", "engine keys", "contract compare", "contract update")
VALIDATION = tuple(f"{kind} {op}" for op in DECISIONS for kind in ("validation", "calibrated", "real"))
"""The adapters' validation answers, as read and under cross-fitted offsets (train/validation.py),
and on the real trajectories alone where the run validates on some (``real_validation``)."""


def run_seed(config: str, seed: int, root: Path, overrides: list[str], tag: str = "") -> tuple[Path, float]:
    """The seed's LOO run (resumed where a run left it); its folder and wall time."""
    name = f"{config}-seed-{seed}{f'-{tag}' if tag else ''}"
    argv = [
        sys.executable,
        "-m",
        "memops",
        "loo",
        "--config-name",
        config,
        f"seed={seed}",
        f"run={name}",
        f"datasets_dir={root / 'datasets' / f'seed-{seed}'}",
        f"adapters_dir={root / 'adapters' / f'seed-{seed}'}",
        f"runs_dir={root / 'loo'}",
        "progress=false",
        *overrides,
    ]
    began = time.perf_counter()
    subprocess.run(argv, check=True)
    return root / "loo" / name, time.perf_counter() - began


def figures(run: Path, adapters: Path) -> dict[str, Any]:
    """One seed's row: the run's pooled decision figures and contract suite, and its adapters'
    validation answers (the collapse guard)."""
    summary = json.loads((run / "summary.json").read_text())
    mean = summary["mean"]
    learned = next(v for v in ("two-stage", "learned", "direct") if v in mean)
    row: dict[str, Any] = {
        "compare": mean[learned]["compare"]["mean"],
        "update": mean[learned]["update"]["mean"],
        "engine keys": mean.get("decisions", {}).get("engine_state", {}).get("mean"),
        **by_group(summary["folds"], learned),
    }
    for op in DECISIONS:
        suite = summary.get("contract", {}).get(op, {}).get("learned")
        if suite:
            row[f"contract {op}"] = suite["all"]["mean"]
            worst = min(suite["regions"].items(), key=lambda kv: kv[1]["mean"])
            row[f"weakest {op} region"] = f"{worst[0]} {worst[1]['mean']:.2f}"
            row[f"contract {op} regions"] = {k: v["mean"] for k, v in suite["regions"].items()}
    flags, lost = {}, {}
    for manifest in sorted(adapters.rglob(ADAPTER_MANIFEST)):
        recorded = json.loads(manifest.read_text())
        check = recorded.get("validation_decisions")
        if check and manifest.parent.name in DECISIONS:
            flags[manifest.parent.name] = check["collapsed"]
            for key, column in (("accuracy", "validation"), ("calibrated_accuracy", "calibrated")):
                if key in check["contract"]:
                    row[f"{column} {manifest.parent.name}"] = pooled(check, key)
            if "real" in check:
                row[f"real {manifest.parent.name}"] = check["real"]["accuracy"]
            if step := recorded.get("selected_step"):
                row[f"kept {manifest.parent.name}"] = step  # select=decisions: the checkpoint kept
            if "dropped" in check:
                lost[manifest.parent.name] = check["dropped"]
            else:  # a manifest from before the guard listed them: read from its label mixes
                answers = sum((Counter(check[part]["answers"]) for part in read_sets(check)), Counter())
                gold = sum((Counter(check[part]["gold"]) for part in read_sets(check)), Counter())
                lost[manifest.parent.name] = dropped(answers, gold)
    row["collapsed"], row["dropped"] = flags, lost
    return row


def by_group(folds: dict[str, Any], learned: str) -> dict[str, float]:
    """Where a run scored trajectories of more than one group (``sources.GROUPS``: the shipped
    five, the mined held-out side), each of ``COLUMNS``' first three pooled over each group's
    folds: ``compare shipped``, ``update mined-held-out``, ..."""
    cells = {
        "compare": (learned, "compare"),
        "update": (learned, "update"),
        "engine keys": ("decisions", "engine_state"),
    }
    out = {}
    for word in GROUPS:
        held = [f for f in folds if f in group(word)]
        if not held or len(held) == len(folds):
            continue
        for column, (variant, key) in cells.items():
            scored = [c for c in (folds[f].get(variant, {}).get(key, {}) for f in held) if c.get("n")]
            if scored:
                out[f"{column} {word}"] = sum(c["mean"] * c["n"] for c in scored) / sum(
                    c["n"] for c in scored
                )
    return out


def spread(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "n/a"
    sd = statistics.stdev(got) if len(got) > 1 else 0.0
    return f"{statistics.mean(got):.2f} ± {sd:.2f} (min {min(got):.2f})"


def plot(rows: dict[int, dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    for x, column in enumerate(COLUMNS):
        values = [(seed, row.get(column)) for seed, row in rows.items() if row.get(column) is not None]
        ax.scatter([x] * len(values), [v for _, v in values], color="tab:blue", zorder=3)
        for seed, v in values:
            ax.annotate(str(seed), (x, v), textcoords="offset points", xytext=(6, -3), fontsize=7)
    ax.set_xticks(range(len(COLUMNS)), COLUMNS, rotation=15)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("exact match / keys kept")
    ax.set_title("Learned decisions per seed (each point one seed)")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def earlier_rows(path: Path, overrides: list[str]) -> dict[int, dict[str, Any]]:
    """The rows per seed that an earlier sweep wrote to ``path``, where it ran with the same
    overrides (the same runs, so one table); none for other overrides or no file."""
    if not path.exists():
        return {}
    earlier = json.loads(path.read_text())
    if earlier["overrides"] != overrides:
        return {}
    return {int(seed): row for seed, row in earlier["rows"].items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config-name", default="smollm2-demo")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--root", type=Path, default=Path(OUTPUTS) / "bench" / "seeds")
    parser.add_argument(
        "--tag",
        default="",
        help="names the runs apart (<config>-seed-<n>-<tag>) on the same datasets and adapters: "
        "a scoring change such as decisions=read, without training again",
    )
    args, overrides = parser.parse_known_args()
    if not any(o.startswith("contract=") for o in overrides):
        overrides.append("contract=[learned]")  # the suite for the adapters; the rules score 1.00
    root = args.root.resolve() / args.config_name
    stem = f"seeds-{args.tag}" if args.tag else "seeds"
    rows = earlier_rows(root / f"{stem}.json", overrides)
    for seed in args.seeds:
        run, seconds = run_seed(args.config_name, seed, root, overrides, args.tag)
        rows[seed] = {**figures(run, root / "adapters" / f"seed-{seed}"), "wall_s": round(seconds)}
        print(f"seed {seed}: {json.dumps(rows[seed])}", flush=True)
    rows = dict(sorted(rows.items()))
    print(f"\n{args.config_name}, seeds {list(rows)}")
    print(f"{'seed':<6}" + "".join(f"{c:>20}" for c in COLUMNS) + "   collapsed; dropped")
    for seed, row in rows.items():
        cells = "".join(f"{row[c]:>20.2f}" if row.get(c) is not None else f"{'n/a':>20}" for c in COLUMNS)
        kept = [f"{op} step {row[f'kept {op}']}" for op in DECISIONS if f"kept {op}" in row]
        print(
            f"{seed:<6}{cells}   {row['collapsed']}; {row['dropped']}"
            + (f"; kept {', '.join(kept)}" if kept else "")
        )
    print("mean ± sd:")
    grouped = sorted({c for row in rows.values() for c in row if c.rsplit(" ", 1)[-1] in GROUPS})
    for column in (*COLUMNS, *grouped, *VALIDATION):
        print(f"  {column:<22} {spread([row.get(column) for row in rows.values()])}")
    result = {"config": args.config_name, "overrides": overrides, "rows": rows}
    (root / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(rows, root / f"{stem}.png")
    print(f"wrote {root / f'{stem}.json'} and {root / f'{stem}.png'}")


if __name__ == "__main__":
    main()
