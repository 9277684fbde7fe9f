"""Shared fixtures: the commit export lives beside the checkout, in ../shared (never copied in)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_EXPORT = ROOT.parent / "shared" / "data" / "codex-trajectories"


@pytest.fixture(scope="session")
def export_dir() -> Path:
    if not SHARED_EXPORT.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"commit export not found at {SHARED_EXPORT}; CI must run the data tests")
        pytest.skip(f"commit export not found at {SHARED_EXPORT}")
    return SHARED_EXPORT


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The tiny base, built once and cached by its inputs under outputs/models/tiny."""
    from train.tiny import build

    return build(ROOT / "outputs" / "models" / "tiny", log=False)
