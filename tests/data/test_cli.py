"""The data CLI as a user runs it: validation mode and config errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def build_data(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "scripts/build_data.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_validate_reports_counts(export_dir: Path) -> None:
    proc = build_data("validate=true", f"export_dir={export_dir}")
    assert proc.returncode == 0, proc.stderr
    assert "5 trajectories, 57 commits" in proc.stdout


def test_validate_lists_problems_and_fails(tmp_path: Path) -> None:
    proc = build_data("validate=true", f"export_dir={tmp_path}")
    assert proc.returncode == 1
    assert proc.stderr.count("export not found") == 5


def test_unknown_key_and_bad_type_are_rejected() -> None:
    proc = build_data("sceanrios_per_family=3")
    assert proc.returncode != 0 and "sceanrios_per_family" in proc.stderr
    proc = build_data("seed=abc")
    assert proc.returncode != 0 and "seed" in proc.stderr
