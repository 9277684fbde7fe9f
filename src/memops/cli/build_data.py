"""Build the operator datasets for every LOO fold: memops build-data [key=value ...].

`validate=true` only checks the annotations and the commit export and lists every problem.
"""

from __future__ import annotations

import sys

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from memops.cli import hydra_entry
from memops.core.config import entry_config
from memops.core.locks import Busy
from memops.data.config import DataConfig
from memops.data.pipeline import build, validate
from memops.data.problems import DataError

CONFIG = "data"
"""The config this command composes unless ``--config-name`` names another."""


@hydra_entry(CONFIG)
def main(raw: DictConfig) -> None:
    cfg: DataConfig = entry_config(raw)
    try:
        if cfg.validate:
            counts = validate(cfg)
            for name, where in counts.pop("validated").items():
                print(f"{name}: {where['annotation']} + {where['export']}")
            print("annotations and export are valid: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
            return
        result = build(cfg, overrides=list(HydraConfig.get().overrides.task))
    except (DataError, Busy) as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    print(f"{result['examples']} examples in {result['seconds']:.1f} s -> {cfg.datasets_dir}")
    print(f"card: {cfg.datasets_dir}/card.md")


if __name__ == "__main__":
    main()
