"""accelerate launch train.py op=extract [fold=<trajectory>|synthetic|all] [model=tiny] [key=value ...]

Resolves and saves the config, then hands it to the recipe (train/recipe.py).
"""

from __future__ import annotations

import sys

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from memops.cli import hydra_entry
from memops.core.config import DeviceError, entry_config
from memops.core.locks import Busy
from memops.data.problems import DataError
from memops.train.config import TrainConfig
from memops.train.dry_run import describe, training_plan
from memops.train.recipe import AdapterExists, DiskFull, train_adapter
from memops.train.tracking import TrackerError

CONFIG = "train"
"""The config this command composes unless ``--config-name`` names another."""


@hydra_entry(CONFIG)
def main(raw: DictConfig) -> None:
    cfg: TrainConfig = entry_config(raw)
    if cfg.dry_run:
        print(describe(cfg, training_plan(cfg)))
        return
    try:
        manifest = train_adapter(cfg, overrides=list(HydraConfig.get().overrides.task))
    except (AdapterExists, Busy, DeviceError, DiskFull, FileNotFoundError, DataError, TrackerError) as exc:
        print(f"memops train: {exc}", file=sys.stderr)
        sys.exit(2)
    if manifest is None:  # not rank 0
        return
    m = manifest
    print(f"adapter saved: step {m['global_step']}, train loss {m['train_loss']:.4f}")
    print(f"eval loss {m['eval_loss']:.4f}, {m['tokens_seen']} tokens in {m['wall_seconds']} s")


if __name__ == "__main__":
    main()
