"""Where everything lives under ``outputs/``, and when it is ready: the one home of the paths
and of the readiness rules that train.py, scripts/loo.py and the Slurm submitter all ask.

    <datasets_dir>/<fold>/<dataset>/           a saved DatasetDict, plus <split>.jsonl
    <adapters_dir>/<model>/<fold>/<op>/        one trained adapter (manifest.json when finished)
    <out_dir>/<run>/                           a LOO run: records, report, manifest
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

DATASETS_JOURNAL = ".swap-journal.json"
"""Present while a dataset build swaps folds into place (``data.publish``); nothing is ready then."""
ADAPTER_MANIFEST = "manifest.json"
"""train.py writes an adapter's manifest after everything else: its presence says it is finished."""


def dataset_dir(root: str | Path, fold: str, dataset: str) -> Path:
    return Path(root) / fold / dataset


def adapters_path(root: str | Path, model: str, fold: str, op: str | None = None) -> Path:
    """``<root>/<model>/<fold>[/<op>]``: where train.py saves an adapter and everything else
    looks for it (a fold's folder holds one adapter per operator)."""
    path = Path(root) / model / fold
    return path / op if op else path


def run_dir(out_dir: str | Path, run: str) -> Path:
    return Path(out_dir) / run


def adapter_finished(path: str | Path) -> bool:
    return (Path(path) / ADAPTER_MANIFEST).exists()


def unready(datasets_dir: str | Path, folds: Iterable[str], datasets: Iterable[str]) -> list[str]:
    """The folds a consumer cannot use as they stand. A fold is ready when no swap is under way
    and every dataset has its saved splits and a test split that carries the ``inputs`` the
    harness replays."""
    root, folds, datasets = Path(datasets_dir), list(folds), list(datasets)
    if (root / DATASETS_JOURNAL).exists():
        return folds
    return [f for f in folds if not all(_dataset_ready(dataset_dir(root, f, d)) for d in datasets)]


def _dataset_ready(folder: Path) -> bool:
    try:
        splits = json.loads((folder / "dataset_dict.json").read_text())["splits"]
    except (OSError, ValueError, KeyError):
        return False
    if "test" not in splits:  # the training-only folds (all, synthetic)
        return True
    test = folder / "test.jsonl"
    if not test.exists():
        return False
    with test.open(encoding="utf-8") as f:
        first = f.readline()
    return not first or "inputs" in json.loads(first)
