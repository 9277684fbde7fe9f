"""A build killed while swapping its folds into place: the next build starts from the old
complete set. Killed for real (SIGKILL) at every step of the swap, in a child process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memops.core.layout import unready
from memops.data.config import DataConfig
from memops.data.pipeline import build
from memops.data.problems import DataError
from memops.data.publish import JOURNAL, recover
from memops.operators.registry import OPS
from tests.conftest import ROOT

KILL_AT_STEP = """
import os, signal, sys
from pathlib import Path
import memops.data.publish

class KillAtStep:
    '''os, except that the Nth rename, replace or unlink of the swap kills the process first.'''
    def __init__(self, step):
        self.step, self.seen = step, 0
    def __getattr__(self, name):
        real = getattr(os, name)
        if name not in ("rename", "replace", "unlink"):
            return real
        def step(*args):
            self.seen += 1
            if self.seen == self.step:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args)
        return step

memops.data.publish.os = KillAtStep(int(sys.argv[1]))
exec(sys.argv[2])
"""

NAMES = ["a", "b", "new", "card.json"]
SWAP_STEPS = 1 + 2 + 2 + 1 + 2 + 1  # journal, two moves per name that existed, one for "new", unlink


def snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def killed_at(step: int, code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", KILL_AT_STEP, str(step), code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def fill(folder: Path, tag: str) -> None:
    for name in ("a", "b"):
        (folder / name / "op").mkdir(parents=True)
        (folder / name / "op" / "train.jsonl").write_text(f"{tag} {name}\n")
    (folder / "card.json").write_text(json.dumps({"tag": tag}))


@pytest.mark.parametrize("step", range(1, SWAP_STEPS + 2))
def test_a_kill_at_any_step_of_the_swap_leaves_the_old_or_the_new_set(step: int, tmp_path: Path) -> None:
    out, staging = tmp_path / "out", tmp_path / "staging"
    fill(out, "old")
    fill(staging, "new")
    (staging / "new").mkdir()
    (staging / "new" / "x.jsonl").write_text("only in the new set\n")
    old = snapshot(out)
    code = f"memops.data.publish.publish(Path({str(staging)!r}), Path({str(out)!r}), {NAMES!r})"
    proc = killed_at(step, code)
    if step <= SWAP_STEPS:
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        recover(out)
        assert snapshot(out) == old  # every fold back, nothing of the new set left
    else:
        assert proc.returncode == 0, proc.stderr
        assert recover(out) == []
        assert snapshot(out)["a/op/train.jsonl"] == b"new a\n" and "new/x.jsonl" in snapshot(out)
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


def small(out: Path, export_dir: Path, **changes: object) -> DataConfig:
    settings = {
        "scenarios_per_family": 2,
        "noisy_per_family": 0,
        "datasets_dir": str(out),
        "exports": [str(export_dir)],
        "folds": ["patch-guardrails", "all"],
        "progress": False,
    }
    return DataConfig(**{**settings, **changes})


def test_a_build_killed_mid_swap_is_put_back_then_rebuilt_by_the_next_build(
    tmp_path: Path, export_dir: Path
) -> None:
    out = tmp_path / "datasets"
    build(small(out, export_dir))
    old = snapshot(out)
    cfg = small(out, export_dir, seed=1)
    code = (
        "from memops.core.models import LoraSpec, ModelConfig\nfrom memops.data.config import DataConfig\n"
        "from memops.data.pipeline import build\n"
        f"build(DataConfig(**{cfg.__dict__!r}))"
    )
    proc = killed_at(5, code)  # killed before the 5th step: patch-guardrails is new, all is moved aside
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert not (out / "all").exists()  # what the issue saw: the fold is missing until the next build
    assert recover(out) == ["patch-guardrails", "all"]
    assert snapshot(out) == old
    build(cfg)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 1 and sorted(manifest["folds"]) == ["all", "patch-guardrails"]
    assert snapshot(out)["all/update/train.jsonl"] != old["all/update/train.jsonl"]


def test_a_partial_rebuild_with_another_seed_is_refused_and_one_with_the_same_keeps_the_rest(
    tmp_path: Path, export_dir: Path
) -> None:
    out = tmp_path / "datasets"
    build(small(out, export_dir))
    before = snapshot(out)
    with pytest.raises(DataError) as err:
        build(small(out, export_dir, seed=1, folds=["patch-guardrails"]))
    assert "seed=1 (built with 0)" in str(err.value) and "['all']" in str(err.value)
    assert snapshot(out) == before
    build(small(out, export_dir, folds=["patch-guardrails"]))
    after = snapshot(out)
    assert {k: v for k, v in after.items() if k != "manifest.json"} == {
        k: v for k, v in before.items() if k != "manifest.json"
    }
    manifest = json.loads(after["manifest.json"])
    assert manifest["config"]["folds"] == ["all", "patch-guardrails"]
    assert manifest["folds"] == json.loads(before["manifest.json"])["folds"]


def test_one_readiness_rule_sees_missing_ops_old_test_splits_and_a_swap_under_way(
    tmp_path: Path, export_dir: Path
) -> None:
    out = tmp_path / "datasets"
    build(small(out, export_dir))
    folds = ["patch-guardrails", "all"]
    assert unready(out, folds, OPS) == []
    (out / "all" / "update" / "dataset_dict.json").unlink()
    assert unready(out, folds, OPS) == ["all"]
    test = out / "patch-guardrails" / "compare" / "test.jsonl"
    test.write_text(json.dumps({"prompt": "an older build, without inputs"}) + "\n")
    assert unready(out, folds, OPS) == folds
    build(small(out, export_dir))
    (out / JOURNAL).write_text(json.dumps({"names": [], "existed": []}))
    assert unready(out, ["all"], OPS) == ["all"]  # a swap was killed: the next build puts it back
