"""Rebuild summary.json, report.md and figures of a LOO run from its records alone.

memops report run=outputs/loo/<run>
memops report run=outputs/loo/<run> merge=[<fold>,<fold>,...]
    first gathers the per-fold records that Slurm eval jobs wrote under <run>/folds/<fold>/
"""

from __future__ import annotations

import sys
from pathlib import Path

from omegaconf import DictConfig

from memops.cli import hydra_entry
from memops.core.config import entry_config
from memops.eval.config import ReportConfig
from memops.eval.report import build_report, merge_folds
from memops.eval.scored import RecordsError
from memops.eval.tables import table

CONFIG = "report"
"""The config this command composes unless ``--config-name`` names another."""


@hydra_entry(CONFIG)
def main(raw: DictConfig) -> None:
    cfg: ReportConfig = entry_config(raw)
    run_dir = Path(cfg.run)
    try:
        if cfg.merge:
            print(
                f"merged {merge_folds(run_dir, cfg.merge)} records of {len(cfg.merge)} fold(s) into {run_dir}"
            )
        summary = build_report(run_dir)
    except (RecordsError, FileNotFoundError) as exc:
        sys.exit(f"memops report: {exc}")
    print(table(summary))
    print(f"\nreport: {run_dir / 'report.md'}")


if __name__ == "__main__":
    main()
