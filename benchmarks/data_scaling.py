"""How much real data buys: one fold's held-out compare and update against the number of real
trajectories its adapters trained on (the data-scaling table).

    python benchmarks/data_scaling.py [--fold patch-guardrails] [--counts 0 1 2 4]
                                   [--config-name smollm2-cpu] [--root outputs/scaling]

Per count k, one child ``memops loo`` run (an argument list) that trains the fold's own
adapters on the synthetic scenarios plus the first k other trajectories
(``real_trajectories=k adapters_fold=null``), under ``<root>/k<k>/`` so no count reuses another's
datasets or adapters; it leaves out what the table does not read (the extract adapters, with
``extract_modes=[]``, and the engine replays). ``k`` = 4 is the paper's protocol. A rerun
resumes every child. The table (compare and update, exact match with 95% CIs, and the
trajectories each count trained on) is printed and written to ``<root>/scaling.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from memops import schemas
from memops.core.config import compose_config
from memops.core.layout import OUTPUTS
from memops.eval.config import LooConfig
from memops.eval.tables import cell

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("compare", "update")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config-name", default="smollm2-cpu")
    parser.add_argument("--fold", default="patch-guardrails")
    parser.add_argument("--counts", type=int, nargs="+", default=[0, 1, 2, 4])
    parser.add_argument("--root", type=Path, default=Path(OUTPUTS) / "scaling")
    args = parser.parse_args()
    schemas.register()
    root = args.root.resolve()
    base: LooConfig = compose_config(args.config_name, [f"folds=[{args.fold}]"])
    others = [name for name in base.sources().names() if name != args.fold]
    if max(args.counts) > len(others):
        sys.exit(f"--counts: at most {len(others)} other trajectories exist ({', '.join(others)})")
    rows = []
    for k in args.counts:
        where = root / f"k{k}"
        where.mkdir(parents=True, exist_ok=True)
        argv = [
            sys.executable,
            "-m",
            "memops",
            "loo",
            "--config-name",
            args.config_name,
            f"folds=[{args.fold}]",
            "adapters_fold=null",
            f"real_trajectories={k}",
            "extract_stages=false",
            "extract_modes=[]",
            "replay=false",
            f"datasets_dir={where / 'datasets'}",
            f"adapters_dir={where / 'adapters'}",
            f"runs_dir={root / 'loo'}",
            f"run=k{k}",
        ]
        log = where / "loo.log"
        print(f"[k={k}] {' '.join(argv[1:])}\n  log: {log}", flush=True)
        with log.open("a") as out:
            done = subprocess.run(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False)
        if done.returncode != 0:
            sys.exit(f"[k={k}] failed with exit code {done.returncode}; see {log}")
        summary = json.loads((root / "loo" / f"k{k}" / "summary.json").read_text())
        mean = summary["mean"]["two-stage"]
        rows.append({"real_trajectories": k, "trained_on": others[:k], **{m: mean[m] for m in METRICS}})
        print(f"[k={k}] " + "; ".join(f"{m} {cell(mean[m])}" for m in METRICS), flush=True)

    rows.sort(key=lambda row: row["real_trajectories"])
    (root / "scaling.json").write_text(json.dumps({"fold": args.fold, "rows": rows}, indent=2) + "\n")
    print(f"\nheld out: {args.fold}; exact match with 95% CIs")
    print(f"{'real trajectories':>18}  {'compare':>20}  {'update':>20}  trained on")
    for row in rows:
        cells = "  ".join(f"{cell(row[m]):>20}" for m in METRICS)
        print(f"{row['real_trajectories']:>18}  {cells}  {', '.join(row['trained_on']) or 'synthetic only'}")
    print(f"\n-> {root / 'scaling.json'}")


if __name__ == "__main__":
    main()
