"""The refusals a user meets at the command line: each ends the command with one line that names
the field or the file and what to do, a non-zero exit, and no traceback; nothing is written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memops.cli import main
from memops.core.config import DeviceError, check_device, compose_config

REFUSALS = [
    ("build-data", ["sceanrios_per_family=3"], "Key 'sceanrios_per_family' not in 'DataConfig'"),
    ("build-data", ["seed=abc"], "seed"),
    ("build-data", ["folds=[nope]"], "folds: unknown ['nope']"),
    ("train", ["fold=nope"], "fold: unknown ['nope']"),
    ("train", ["model=nope"], "model"),
    ("train", ["holdout=patch-guardrails"], "holdout= is now fold=: pass fold=patch-guardrails"),
    ("train", ["model=qwen2.5-14b-instruct"], "has no CPU recipe and this machine has no CUDA device"),
    ("loo", ["batch=-1"], "batch=-1: samples per operator call must be 1 or more"),
    ("loo", ["run=../../escaped"], "run='../../escaped'"),
    ("loo", ["--config-name", "nope"], "Cannot find primary config 'nope'"),
    ("loo", ["model=qwen2.5-14b-instruct"], "pass allow_cpu=true to run it here anyway"),
    ("demo", ["steps.compare=many"], "steps.compare"),
    ("replay", ["engine=nope"], "engine='nope'; expected one of symbolic, learned, hybrid"),
    ("report", [], "run"),
    ("submit", ["profile=nope"], "profile"),
    ("preflight", ["resources.train.gpus=x"], "resources.train.gpus"),
    # The probes of a new user's first hour: each said "valid", read nothing, or was a traceback.
    ("demo", ["recipe.max_steps=abc"], "recipe holds one name (recipe=<name>), not fields of its own"),
    (
        "export-commits",
        ["--repo", ".", "--commits", "missing.txt", "--name", "x"],
        "cannot read the commit list",
    ),
    ("track", [".", "--catalog", "python-project", "--since", "garbage-date"], "not an ISO 8601 date"),
    ("mine", [".", "--catalog", "python-project", "--since", "garbage-date"], "not an ISO 8601 date"),
]


@pytest.mark.parametrize(("command", "args", "said"), REFUSALS, ids=[f"{c} {a}" for c, a, _ in REFUSALS])
def test_a_refusal_is_one_line(
    command: str,
    args: list[str],
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    import torch

    if ("no CUDA" in said or "allow_cpu" in said) and torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the GPU model is not refused")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["memops", command, *args])
    with pytest.raises(SystemExit) as ended:
        main([command, *args])
    code = ended.value.code
    assert code not in (0, None)
    err = capsys.readouterr().err + (f"{code}\n" if isinstance(code, str) else "")  # sys.exit("...")
    told = [line for line in err.splitlines() if line.startswith(f"memops {command}: ")]
    assert len(told) == 1 and said in told[0], err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == [], "a refused command wrote something"


def test_a_gpu_model_runs_here_when_asked_to() -> None:
    cfg = compose_config("train", ["model=qwen2.5-14b-instruct", "recipe=gpu", "allow_cpu=true"])
    check_device(cfg)  # does not raise
    cfg.allow_cpu = False
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match=r"model qwen2\.5-14b-instruct has no CPU recipe"):
            check_device(cfg)


@pytest.mark.parametrize(
    "args", [["validate=true", "annotations=[shipped,nowhere]"], ["annotations=[nowhere]"]]
)
def test_an_annotations_folder_that_is_not_there_is_a_data_problem(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Probe 11: the first said "valid", the second built a synthetic-only dataset, both rc 0."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["memops", "build-data", *args])
    with pytest.raises(SystemExit) as ended:
        main(["build-data", *args])
    assert ended.value.code == 1
    err = capsys.readouterr().err
    assert "nowhere: annotations: not a folder" in err and "Traceback" not in err
    assert not (tmp_path / "outputs" / "datasets").exists()
