"""memops replay with adapters trained by the real recipe, on the tiny model, on CPU."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("engine", "extract"), [("learned", "direct"), ("hybrid", "two-stage")])
def test_replay_runs_with_trained_adapters(
    trained_adapters: Path, tiny_model: Path, export_dir: Path, engine: str, extract: str
) -> None:
    cmd = [
        sys.executable,
        "-m",
        "memops",
        "replay",
        "trajectory=patch-guardrails",
        f"engine={engine}",
        f"extract={extract}",
        "backend=hf",
        "model=tiny",
        f"model.path={tiny_model}",
        f"adapters={trained_adapters}",
        f"exports=[{export_dir}]",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "## Current state" in done.stdout
    calls = re.search(r"operator calls \((\w+), ([\w-]+) extraction\): (.*); total (\d+)", done.stdout)
    assert calls and calls.group(1) == engine and calls.group(2) == extract
    counted = dict(kv.rsplit(" ", 1) for kv in calls.group(3).split(", "))
    first_step = "extract" if extract == "direct" else "select"
    assert int(counted[first_step]) == 15  # one call per note of patch-guardrails
    assert int(calls.group(4)) == sum(int(v) for v in counted.values())


def test_replay_without_adapters_says_what_is_missing(tmp_path: Path, export_dir: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "memops",
        "replay",
        "engine=learned",
        f"adapters={tmp_path}",
        f"exports=[{export_dir}]",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert f"no finished adapter in: {tmp_path}/extract" in done.stderr


def test_the_old_name_of_the_engine_mode_is_refused_naming_the_new_one() -> None:
    cmd = [sys.executable, "-m", "memops", "replay", "operators=learned"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "operators= is now engine=: pass engine=learned" in done.stderr, done.stderr[-2000:]
