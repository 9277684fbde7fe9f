"""Rebuild summary.json, report.md and figures of a LOO run from its records alone.

python scripts/report.py run=outputs/loo/<run>
"""

from __future__ import annotations

import sys
from pathlib import Path

from eval.records import RecordsError
from eval.report import build_report, table


def main(argv: list[str]) -> None:
    args = dict(a.split("=", 1) for a in argv if "=" in a)
    if "run" not in args:
        sys.exit("usage: python scripts/report.py run=<outputs/loo/<run>>")
    run_dir = Path(args["run"])
    try:
        summary = build_report(run_dir)
    except (RecordsError, FileNotFoundError) as exc:
        sys.exit(str(exc))
    print(table(summary))
    print(f"\nreport: {run_dir / 'report.md'}")


if __name__ == "__main__":
    main(sys.argv[1:])
