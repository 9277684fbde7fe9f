"""Fixtures for training tests: the tiny model (built once, cached by its inputs) and small datasets."""

from __future__ import annotations

from pathlib import Path

import pytest

from data.config import DataConfig
from data.pipeline import run as build_data
from tests.conftest import ROOT
from train.tiny import build

TINY = ROOT / "outputs" / "models" / "tiny"


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    return build(TINY, log=False)


@pytest.fixture(scope="session")
def small_datasets(tmp_path_factory: pytest.TempPathFactory, export_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("datasets")
    cfg = DataConfig(
        scenarios_per_family=4,
        noisy_per_family=0,
        out_dir=str(out),
        export_dir=str(export_dir),
        folds=["patch-guardrails", "all"],
        progress=False,
    )
    build_data(cfg)
    return out
