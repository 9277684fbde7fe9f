"""The data CLI as a user runs it: validation mode and config errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def build_data(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memops", "build-data", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_validate_reports_counts(export_dir: Path) -> None:
    proc = build_data("validate=true", f"exports=[{export_dir}]")
    assert proc.returncode == 0, proc.stderr
    assert "5 trajectories, 57 commits" in proc.stdout


def test_validate_lists_problems_and_fails(tmp_path: Path) -> None:
    proc = build_data("validate=true", f"exports=[{tmp_path}]")
    assert proc.returncode == 1
    assert proc.stderr.count("export not found") == 5


def test_unknown_key_and_bad_type_are_rejected() -> None:
    proc = build_data("sceanrios_per_family=3")
    assert proc.returncode != 0 and "sceanrios_per_family" in proc.stderr
    proc = build_data("seed=abc")
    assert proc.returncode != 0 and "seed" in proc.stderr


@pytest.mark.parametrize(
    ("command", "override", "message"),
    [
        ("build-data", "folds=[nope]", "folds: unknown ['nope']"),
        ("build-data", "validation_fraction=1.5", "validation_fraction=1.5"),
        ("train", "fold=nope", "fold: unknown ['nope']"),
        ("train", "fold=../../../../escaped", "fold: unknown"),
        ("train", "holdout=patch-guardrails", "holdout= is now fold=: pass fold=patch-guardrails"),
        ("loo", "run=../../../escaped-run", "run='../../../escaped-run'"),
        ("loo", "folds=[nope]", "folds: unknown ['nope']"),
    ],
)
def test_names_are_checked_before_any_work(command: str, override: str, message: str, tmp_path: Path) -> None:
    """Refused in config validation: nothing is built, trained or written, inside outputs/ or out."""
    accepted = [f"{k}={tmp_path / k}" for k in ("runs_dir", "datasets_dir", "adapters_dir")]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "memops",
            command,
            "model=tiny" if command == "train" else "seed=0",
            override,
            *accepted,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []
    assert not (ROOT.parent / "escaped").exists() and not (ROOT.parent / "escaped-run").exists()
