"""How much mined data buys: the synthetic fold's adapters trained with 0, 5, 10 and all 18 mined
training repositories added to the scenarios, scored held out on the 9 mined held-out
repositories and on the five shipped Codex trajectories (the mined data-scaling table).

    python benchmarks/mined_scaling.py [--counts 0 5 10 18] [--extract-at 0 ...]
                                       [--config-name smollm2-demo] [--seed 0]
                                       [--root outputs/mined-scaling]

Per count k, one child ``memops loo`` run (an argument list) over the shipped and the mined
trajectories, with ``synthetic_plus`` = the first k training repositories of the mined split
(``split.json``'s order, those that share notes kept together: ``training_order``) and
``adapters_fold=synthetic``, so one set of adapters scores all
14 held-out trajectories; under ``<root>/k<k>/`` no count reuses another's datasets or adapters.
The decisions are scored without the engine replays (``replay=false``); at the counts of
``--extract-at`` the run also trains the ``extract-stages`` adapter and scores two-stage extraction
with it. A rerun resumes every child (with the same ``--extract-at``). The table (exact match, and
claim F1 for extraction, with 95% bootstrap CIs, pooled over each held-out set's records) is
printed and written to ``<root>/scaling.json``. ``--seed`` draws other scenarios, other compare
pairs from every trajectory (the held-out ones too), another training order and LoRA initialisation
for every count (give each seed its own ``--root``): how far a row moves with the seed alone is the
yardstick for how far it moves with k.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from memops.core.layout import OUTPUTS
from memops.core.sources import MINED, MINED_FOLDER, SHIPPED, Sources
from memops.data.trajectory import load_trajectory
from memops.eval.scored import read_records
from memops.eval.summary import summarize
from memops.eval.tables import cell

ROOT = Path(__file__).resolve().parents[1]
SPLIT = json.loads((MINED / "split.json").read_text())
HELD_OUT = {"mined": SPLIT["heldout"], "codex": list(SHIPPED)}
"""The two held-out sets the table pools over, by the trajectories they hold."""
LEARNED = "two-stage-trained"
"""The variant whose rows the table reads: the learned decisions, and where it is scored the
two-stage extraction on the extract-stages adapter."""


def training_order() -> list[str]:
    """``split.json``'s training repositories in its order, each followed at once by those that
    share a note with it (one author's commit in two repositories): a count that took one without
    the other would hold out a trajectory whose notes it trains on, which the build refuses."""
    sources = Sources.of([MINED_FOLDER], [MINED_FOLDER])
    notes = {name: {s.text for s in load_trajectory(name, sources).sessions} for name in SPLIT["train"]}
    order: list[str] = []
    for name in (n for n in SPLIT["train"] if n not in order):
        sharing = [o for o in SPLIT["train"] if o not in order and o != name and notes[o] & notes[name]]
        order += [name, *sharing]
    return order


def child(args: argparse.Namespace, k: int, where: Path) -> list[str]:
    extract = ["extract_stages=true", f"extract_modes=[{LEARNED}]"] if k in args.extract_at else []
    return [
        sys.executable,
        "-m",
        "memops",
        "loo",
        "--config-name",
        args.config_name,
        "annotations=[shipped,mined]",
        "exports=[shipped,mined]",
        f"folds=[{','.join(HELD_OUT['mined'] + HELD_OUT['codex'])}]",
        "adapters_fold=synthetic",
        f"synthetic_plus=[{','.join(args.order[:k])}]",
        "replay=false",
        f"seed={args.seed}",
        *extract,
        f"datasets_dir={where / 'datasets'}",
        f"adapters_dir={where / 'adapters'}",
        f"runs_dir={args.root / 'loo'}",
        f"run=k{k}",
    ]


def pooled(run: Path, metrics: tuple[str, ...], variant: str) -> dict[str, dict[str, dict]]:
    """Each held-out set's scores of ``variant``, from the run's records of its trajectories. A
    decisions-only run shows its learned decisions under ``direct``."""
    records = read_records(run / "records.jsonl")
    out = {}
    for name, folds in HELD_OUT.items():
        means = summarize([r for r in records if r["fold"] in folds])["mean"]
        shown = variant if variant != "learned" else LEARNED if LEARNED in means else "direct"
        out[name] = {m: means[shown][m] for m in metrics}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config-name", default="smollm2-demo")
    parser.add_argument("--counts", type=int, nargs="+", default=[0, 5, 10, len(SPLIT["train"])])
    parser.add_argument(
        "--extract-at", type=int, nargs="*", default=[], help="counts that train and score extraction too"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", type=Path, default=Path(OUTPUTS) / "mined-scaling")
    args = parser.parse_args()
    args.root = args.root.resolve()
    args.order = training_order()
    if max(args.counts) > len(SPLIT["train"]) or min(args.counts) < 0:
        sys.exit(f"--counts: between 0 and {len(SPLIT['train'])} (the mined training repositories)")
    metrics = ("compare", "update", *(("extract", "extract_value") if args.extract_at else ()))
    rows = []
    for k in args.counts:
        where = args.root / f"k{k}"
        where.mkdir(parents=True, exist_ok=True)
        argv = child(args, k, where)
        log = where / "loo.log"
        print(f"[k={k}] {' '.join(argv[1:])}\n  log: {log}", flush=True)
        with log.open("a") as out:
            done = subprocess.run(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False)
        if done.returncode != 0:
            sys.exit(f"[k={k}] failed with exit code {done.returncode}; see {log}")
        run = args.root / "loo" / f"k{k}"
        scores = pooled(run, metrics, "learned")
        rows.append({"mined_repositories": k, "trained_on": args.order[:k], **scores})
        for name, by_metric in scores.items():
            print(f"[k={k}] {name}: " + "; ".join(f"{m} {cell(s)}" for m, s in by_metric.items()), flush=True)
    # The base without adapters scores the same in every run; one that extracts shows all of it.
    base = pooled(args.root / "loo" / f"k{(args.extract_at or args.counts)[0]}", metrics, "prompted")

    rows.sort(key=lambda row: row["mined_repositories"])
    table = {"seed": args.seed, "held_out": HELD_OUT, "rows": rows, "prompted": base}
    (args.root / "scaling.json").write_text(json.dumps(table, indent=2) + "\n")
    heads = [f"{name} {m}" for name in HELD_OUT for m in metrics]
    print("\nexact match (claim F1 for extract) with 95% CIs; the synthetic scenarios in every row")
    print(" | ".join(["mined repos", *heads]))
    for label, scores in [*((str(r["mined_repositories"]), r) for r in rows), ("prompted base", base)]:
        print(" | ".join([label, *(cell(scores[name][m]) for name in HELD_OUT for m in metrics)]))
    print(f"\n-> {args.root / 'scaling.json'}")


if __name__ == "__main__":
    main()
