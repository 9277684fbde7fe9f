"""Check this machine for a cluster run before booking it.

    memops preflight [profile=h100] [key=value ...]

Takes the same config as memops submit (the profile sets model, backend, recipe and job
resources) and prints one row per check (slurm/preflight.py): the GPU and a real 4-bit matmul on
it, the serving environment, the base weights, free disk against what the run writes, Slurm, and
the GPU-hours the jobs book. Exits 1 naming every missing part; nothing is written.
"""

from __future__ import annotations

import sys

from omegaconf import DictConfig

from memops.cli import hydra_entry
from memops.core.config import entry_config
from memops.slurm.config import SubmitConfig  # importing it registers the schema with Hydra
from memops.slurm.preflight import MISSING, preflight, table

CONFIG = "submit"
"""The config this command composes unless ``--config-name`` names another."""


@hydra_entry(CONFIG)
def main(raw: DictConfig) -> None:
    cfg: SubmitConfig = entry_config(raw)
    rows = preflight(cfg)
    print(f"preflight of {cfg.model.name} on backend {cfg.backend.kind} ({cfg.recipe} recipe)\n")
    print(table(rows))
    missing = [r.name for r in rows if r.status == MISSING]
    if missing:
        print(f"\nmissing: {', '.join(missing)}", file=sys.stderr)
        sys.exit(1)
    print("\nready")


if __name__ == "__main__":
    main()
