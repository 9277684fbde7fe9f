"""Submit the LOO pipeline to Slurm: memops submit [profile=cpu] [dry_run=true] [...]

prepare -> train (array over fold x op) -> eval (one job per fold) -> report; see slurm/submit.py.
"""

from __future__ import annotations

import sys

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from memops.cli import hydra_entry
from memops.core.config import entry_config
from memops.slurm.config import SubmitConfig
from memops.slurm.submit import SubmitError, submit

CONFIG = "submit"
"""The config this command composes unless ``--config-name`` names another."""


@hydra_entry(CONFIG)
def main(raw: DictConfig) -> None:
    cfg: SubmitConfig = entry_config(raw)
    try:
        submit(cfg, overrides=list(HydraConfig.get().overrides.task))
    except SubmitError as exc:
        print(f"memops submit: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
