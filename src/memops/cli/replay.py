"""Replay a trajectory through the engine with injected operators and print the memory.

memops replay trajectory=patch-guardrails engine=learned backend=hf model=tiny adapters=<dir>
"""

from __future__ import annotations

import sys
from pathlib import Path

from omegaconf import DictConfig

from memops.cli import hydra_entry
from memops.core.config import entry_config
from memops.core.layout import adapters_path
from memops.data.problems import DataError
from memops.data.trajectory import load_trajectory
from memops.eval.config import ReplayConfig
from memops.operators.backends import BackendError
from memops.operators.backends.factory import open_backend
from memops.operators.engine import replay
from memops.operators.learned import LearnedOperators

CONFIG = "replay"
"""The config this command composes unless ``--config-name`` names another."""


@hydra_entry(CONFIG)
def main(raw: DictConfig) -> None:
    cfg: ReplayConfig = entry_config(raw)
    try:
        episode = load_trajectory(cfg.trajectory, cfg.sources())
        if cfg.engine == "symbolic":
            result = replay(episode)
        else:
            adapters = cfg.adapters or adapters_path(cfg.adapters_dir, cfg.model.name, cfg.trajectory)
            log = Path("outputs") / "logs" / f"serve-{cfg.trajectory}.log"
            with open_backend(cfg.backend, cfg.model, adapters, [episode], log) as backend:
                result = replay(
                    episode,
                    cfg.engine,
                    LearnedOperators(
                        backend,
                        prior_weight=cfg.prior_weight,
                        select_none=cfg.select_none,
                        mix_weight=cfg.mix_weight,
                    ),
                    cfg.extract,
                )
    except (DataError, BackendError) as exc:
        print(f"memops replay: {exc}", file=sys.stderr)
        sys.exit(1)
    print(result.memory.render(cfg.budget))
    print()
    claims = sum(len(s.claims) for s in episode.sessions)
    print(
        f"{cfg.trajectory}: {len(episode.sessions)} notes, {len(result.decisions)} claims written "
        f"({claims} in gold), {len(result.memory)} keys"
    )
    calls = ", ".join(f"{k} {v}" for k, v in sorted(result.calls.items())) or "none"
    print(f"operator calls ({cfg.engine}, {cfg.extract} extraction): {calls}; total {result.calls.total()}")
    if result.failures:
        print("unparsable answers: " + ", ".join(f"{k} {v}" for k, v in sorted(result.failures.items())))


if __name__ == "__main__":
    main()
