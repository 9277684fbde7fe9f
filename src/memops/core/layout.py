"""Where everything lives under ``outputs/``, and when it is ready: the one home of the paths,
their defaults, the fold names and the readiness rules that train.py, memops loo, the
backends and the Slurm submitter all ask.

    <datasets_dir>/<fold>/<dataset>/           a saved DatasetDict, plus <split>.jsonl
    <adapters_dir>/<model>/<fold>/<adapter>/   one trained adapter (manifest.json when finished)
    <runs_dir>/<run>/                          a LOO run: records, report, manifest
    <models_dir>/<model>/                      a base the project builds (tiny, SmolLM2)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

OUTPUTS = "outputs"
"""The one default output root; every directory below defaults to a folder of it."""
DATASETS = f"{OUTPUTS}/datasets"
ADAPTERS = f"{OUTPUTS}/adapters"
RUNS = f"{OUTPUTS}/loo"
MODELS = f"{OUTPUTS}/models"
EXPORTED = f"{OUTPUTS}/export"
"""Where memops export-commits writes by default."""

ALL = "all"
SYNTHETIC = "synthetic"
TRAINING_FOLDS: tuple[str, ...] = (ALL, SYNTHETIC)
"""Folds that hold no trajectory out: they have train and validation splits and no test split.
Every other fold is named after the trajectory it holds out."""

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


def test_file(root: str | Path, fold: str, dataset: str) -> Path:
    """The held-out examples of a trajectory fold, with the ``inputs`` the harness replays."""
    return dataset_dir(root, fold, dataset) / "test.jsonl"


def run_dir(runs_dir: str | Path, run: str) -> Path:
    return Path(runs_dir) / run


def adapter_finished(path: str | Path) -> bool:
    """The one readiness rule for an adapter: its manifest, which train.py writes last."""
    return (Path(path) / ADAPTER_MANIFEST).exists()


def checkpoint_complete(checkpoint: str | Path) -> bool:
    """The readiness rule for a Trainer checkpoint (``checkpoint-<step>``, a resume point and a
    learning-curve point). The Trainer writes ``trainer_state.json`` last (after the weights,
    optimizer, scheduler and RNG state), so a checkpoint is whole once that file parses and
    names the folder's own step."""
    folder = Path(checkpoint)
    try:
        state = json.loads((folder / "trainer_state.json").read_text())
        step = int(folder.name.rsplit("-", 1)[1])
    except (OSError, ValueError, IndexError):
        return False
    has_weights = any((folder / f).is_file() for f in ("adapter_model.safetensors", "model.safetensors"))
    return has_weights and isinstance(state, dict) and state.get("global_step") == step


def unready(datasets_dir: str | Path, folds: Iterable[str], datasets: Iterable[str]) -> list[str]:
    """The folds a consumer cannot use as they stand. A fold is ready when no swap is under way
    and every dataset has its saved splits and a test split that carries the ``inputs`` the
    harness replays."""
    root, folds, datasets = Path(datasets_dir), list(folds), list(datasets)
    if (root / DATASETS_JOURNAL).exists():
        return folds
    return [f for f in folds if not all(_dataset_ready(root, f, d) for d in datasets)]


def _dataset_ready(root: Path, fold: str, dataset: str) -> bool:
    try:
        splits = json.loads((dataset_dir(root, fold, dataset) / "dataset_dict.json").read_text())["splits"]
    except (OSError, ValueError, KeyError):
        return False
    if "test" not in splits:  # the training-only folds (all, synthetic)
        return True
    test = test_file(root, fold, dataset)
    if not test.exists():
        return False
    with test.open(encoding="utf-8") as f:
        first = f.readline()
    return not first or "inputs" in json.loads(first)
