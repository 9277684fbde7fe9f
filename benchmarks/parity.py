"""Decoding parity of two LOO runs over the same samples (eval/parity.py).

python benchmarks/parity.py first=outputs/loo/smollm2-hf second=outputs/loo/smollm2-vllm

Prints the share of identical raw model text per operator and variant, and writes it as JSON to
``<second>/parity.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import hydra
from omegaconf import DictConfig

from memops import schemas
from memops.core.config import CONFIGS, entry_config
from memops.eval.config import ParityConfig
from memops.eval.parity import parity

schemas.register()


@hydra.main(version_base="1.3", config_path=str(CONFIGS), config_name="parity")
def main(raw: DictConfig) -> None:
    cfg: ParityConfig = entry_config(raw)
    result = parity(Path(cfg.first), Path(cfg.second))
    for name, row in result.items():
        print(f"{name:20s} {row['identical']:4d}/{row['samples']:<4d} {row['share']:.1%}")
    out = Path(cfg.second) / "parity.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
