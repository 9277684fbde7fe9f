"""Five-way leave-one-out: memops loo [folds=[...]] [backend=vllm model=qwen2.5-14b-instruct]

Builds missing datasets, trains missing adapters (through train.py's recipe), brings up the
backend, runs the operators and the engine on each held-out trajectory, and writes records,
summary.json, report.md and figures under outputs/loo/<run>/. Rerunning resumes.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from memops.cli import hydra_entry
from memops.core.config import DeviceError, entry_config
from memops.core.layout import run_dir
from memops.core.locks import Busy
from memops.data.problems import DataError
from memops.eval.config import LooConfig
from memops.eval.dry_run import describe_loo, loo_plan
from memops.eval.loo import evaluate
from memops.eval.plan import AdapterMismatch
from memops.eval.scored import RecordsError
from memops.eval.tables import table
from memops.operators.backends import BackendError
from memops.train.recipe import TrainingFailed
from memops.train.tracking import TrackerError

CONFIG = "loo"
"""The config this command composes unless ``--config-name`` names another."""


def _exit(signum: int, frame: FrameType | None) -> None:
    """scancel, a Slurm requeue and kill send SIGTERM, which by default ends Python without
    unwinding; as SystemExit it runs the context managers, so a vLLM server we started is
    stopped instead of outliving us on its port. Records are already flushed."""
    raise SystemExit(128 + signum)


@hydra_entry(CONFIG)
def main(raw: DictConfig) -> None:
    cfg: LooConfig = entry_config(raw)
    signal.signal(signal.SIGTERM, _exit)
    try:
        if cfg.dry_run:
            print(describe_loo(cfg, loo_plan(cfg)))
            return
        summary = evaluate(cfg, overrides=list(HydraConfig.get().overrides.task))
    except (
        AdapterMismatch,
        BackendError,
        Busy,
        DeviceError,
        DataError,
        RecordsError,
        FileNotFoundError,
        TrackerError,
        TrainingFailed,
    ) as exc:
        print(f"memops loo: {exc}", file=sys.stderr)
        sys.exit(1)
    print()
    print(table(summary))
    print()
    print(f"report: {run_dir(cfg.runs_dir, cfg.run) / 'report.md'}")


if __name__ == "__main__":
    main()
