"""Fixtures for training tests: small datasets."""

from __future__ import annotations

from pathlib import Path

import pytest

from data.config import DataConfig
from data.pipeline import run as build_data


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
