"""Dry runs: train.py and memops loo print their plan, with estimates where this machine
recorded a run, and write nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def files(*roots: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_mtime_ns) for root in roots for p in root.rglob("*"))


def run(script: str, *overrides: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, script, *overrides]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_train_dry_run_prints_tokens_steps_and_the_recorded_time(
    trained_adapters: Path, tiny_model: Path, small_datasets: Path
) -> None:
    adapters_root = trained_adapters.parent.parent  # <root>/tiny/patch-guardrails
    before = files(adapters_root, small_datasets)
    proc = run(
        "train.py",
        "dry_run=true",
        "op=update",
        "fold=patch-guardrails",
        "model=tiny",
        f"model.path={tiny_model}",
        "max_steps=7",
        f"datasets_dir={small_datasets}",
        f"adapters_dir={adapters_root}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "resolved config:" in out and "op:" in out
    assert "prompt tokens mean" in out and "completion tokens mean" in out and "packed rows per epoch" in out
    assert "steps: 7" in out
    assert "time: about" in out and "tokens/s (recorded in" in out
    assert files(adapters_root, small_datasets) == before  # nothing written, nothing touched


def test_train_dry_run_without_a_recorded_run_says_how_to_measure(
    tiny_model: Path, small_datasets: Path, tmp_path: Path
) -> None:
    proc = run(
        "train.py",
        "dry_run=true",
        "op=compare",
        "model=tiny",
        f"model.path={tiny_model}",
        f"datasets_dir={small_datasets}",
        f"adapters_dir={tmp_path}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "benchmarks/bench_train.py measures" in proc.stdout
    assert not list(tmp_path.iterdir())


def test_loo_dry_run_prints_the_plan_and_writes_nothing(
    tiny_model: Path, small_datasets: Path, tmp_path: Path
) -> None:
    proc = run(
        "-m",
        "memops",
        "loo",
        "--config-name",
        "tiny-demo",
        "dry_run=true",
        "folds=[patch-guardrails]",
        f"model.path={tiny_model}",
        f"datasets_dir={small_datasets}",
        f"adapters_dir={tmp_path / 'adapters'}",
        f"runs_dir={tmp_path / 'runs'}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "build: datasets (missing: synthetic)" in out  # small_datasets lacks the adapters' fold
    assert "train: 4 adapter(s)" in out and "synthetic/compare:" in out
    assert "place the scoring selection's reading for synthetic's adapters: 128 validation notes" in out
    assert "patch-guardrails compare learned:" in out and "examples" in out
    assert "replay the engine:" in out and "patch-guardrails decisions:" in out
    assert not list(tmp_path.iterdir())
    waiting = run(*proc.args[1:], "wait_for_training_s=600")  # how the held-out benchmark starts hf
    assert waiting.returncode == 0, waiting.stderr[-3000:]
    assert "train: 0 adapter(s)" in waiting.stdout
    assert "wait up to 600 s for the adapters other jobs are training: synthetic/extract, " in waiting.stdout
    assert "patch-guardrails compare prompted:" in out and "patch-guardrails extract prompted:" in out
    alone = run(*proc.args[1:], "prompted=false")  # a study of the adapters alone
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert " prompted:" not in alone.stdout and "patch-guardrails compare learned:" in alone.stdout
