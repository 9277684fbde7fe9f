"""Preflight: one row per check, the missing GPU said plainly, nothing written (Slurm found on a
real cluster: test_cluster.py, where every test of the running cluster lives)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memops.core.config import compose_config
from memops.slurm.preflight import MISSING, OK, cache_disk, hours
from tests.conftest import ROOT

ROWS = ("GPU", "GPU memory", "attention", "serving env", "base weights", "cache disk", "disk")
ROWS += ("trajectories", "Slurm", "GPU-hours")


FIXES = ("run preflight", "make serve-env", "install", "set ")
"""Words of which every missing row's advice holds one: what to run, install or set."""


def preflight(*overrides: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "memops", "preflight", *overrides]
    return subprocess.run(script, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def status(stdout: str, name: str) -> str:
    """The status column of the row named ``name`` (``GPU`` is not ``GPU-hours``)."""
    line = next(line for line in stdout.splitlines() if line.startswith(f"{name} "))
    return line[len(name) :].split()[0]


def test_the_h100_profile_on_a_cpu_machine_names_the_missing_gpu(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    proc = preflight(
        "profile=h100", f"adapters_dir={tmp_path / 'adapters'}", f"datasets_dir={tmp_path / 'ds'}"
    )
    assert proc.returncode == 1
    assert [status(proc.stdout, name) != "" for name in ROWS] == [True] * len(ROWS)
    assert status(proc.stdout, "GPU") == "missing"
    assert "no GPU: CUDA is not available" in proc.stdout
    assert "missing: GPU" in proc.stderr
    assert "GPU-h booked" in proc.stdout and status(proc.stdout, "GPU-hours") == "note"
    assert "serving about 35.5 GiB (27.5 bf16 base + 6.0 KV cache at 32768 tokens)" in proc.stdout
    assert "training about 11.6 GiB (measured at 2048-token rows)" in proc.stdout
    assert status(proc.stdout, "trajectories") == "ok" and status(proc.stdout, "attention") == "note"
    for line in proc.stdout.splitlines():  # every failing check says what to do about it
        if " missing " in line:
            assert any(w in line for w in FIXES), line
    assert not list(tmp_path.iterdir())  # a preflight writes nothing


def test_an_unknown_profile_is_named() -> None:
    proc = preflight("profile=h200")
    assert proc.returncode != 0 and "profile/h200" in proc.stderr and "h100" in proc.stderr


def test_slurm_time_limits_read_as_hours() -> None:
    assert hours("12:00:00") == 12 and hours("1-02:30:00") == 26.5 and hours("90") == 1.5
    assert hours("30:00") == 0.5


def test_a_hub_base_larger_than_the_free_cache_disk_is_missing_and_says_where_to_put_it(
    tmp_path: Path,
) -> None:
    cfg = compose_config("submit", ["profile=h100", f"hf_home={tmp_path}"])
    free = shutil.disk_usage(tmp_path).free
    fits, lacks = cache_disk(cfg, free // 2), cache_disk(cfg, free * 2)
    assert fits.status == OK and not any(w in fits.detail for w in FIXES)
    assert lacks.status == MISSING and any(w in lacks.detail for w in FIXES), lacks.detail
    assert f"at {tmp_path}" in lacks.detail
