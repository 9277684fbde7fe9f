"""Rebuild summary.json, report.md and figures of a LOO run from its records alone.

python scripts/report.py run=outputs/loo/<run>
python scripts/report.py run=outputs/loo/<run> merge=<fold>,<fold>,...
    first gathers the per-fold records that Slurm eval jobs wrote under <run>/folds/<fold>/
"""

from __future__ import annotations

import sys
from pathlib import Path

from eval.records import RecordsError
from eval.report import build_report, merge_folds, table


def main(argv: list[str]) -> None:
    args = dict(a.split("=", 1) for a in argv if "=" in a)
    unknown = sorted(set(args) - {"run", "merge"})
    if "run" not in args or unknown:
        sys.exit("usage: python scripts/report.py run=<outputs/loo/<run>> [merge=<fold>,<fold>,...]")
    run_dir = Path(args["run"])
    try:
        if args.get("merge"):
            folds = args["merge"].split(",")
            print(f"merged {merge_folds(run_dir, folds)} records of {len(folds)} fold(s) into {run_dir}")
        summary = build_report(run_dir)
    except (RecordsError, FileNotFoundError) as exc:
        sys.exit(str(exc))
    print(table(summary))
    print(f"\nreport: {run_dir / 'report.md'}")


if __name__ == "__main__":
    main(sys.argv[1:])
