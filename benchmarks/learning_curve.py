"""Held-out score per checkpoint and label of one compare or update adapter (eval/curve.py).

python benchmarks/learning_curve.py adapter=outputs/adapters/smollm2-135m-instruct/synthetic/compare
python benchmarks/learning_curve.py adapter=<dir> folds=[patch-guardrails] steps=[80,160]
python benchmarks/learning_curve.py adapter=<compare dir> decisions=contract contract=true dtype=bfloat16
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from memops import schemas
from memops.core.config import CONFIGS, entry_config
from memops.eval.curve import CURVE, CurveConfig, learning_curve

schemas.register()


@hydra.main(version_base="1.3", config_path=str(CONFIGS), config_name="curve")
def main(raw: DictConfig) -> None:
    cfg: CurveConfig = entry_config(raw)
    try:
        learning_curve(cfg)
    except (FileNotFoundError, ValueError) as exc:
        print(f"learning_curve.py: {exc}", file=sys.stderr)
        sys.exit(2)
    print(f"wrote {Path(cfg.adapter) / CURVE} and learning_curve.png")


if __name__ == "__main__":
    main()
