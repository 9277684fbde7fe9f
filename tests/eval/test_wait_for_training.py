"""A LOO run that starts while other jobs still train some of its adapters
(``wait_for_training_s``, how benchmarks/bench_heldout.py starts the hf pass beside the last
training): it scores what the finished adapters serve, loads the others once they are finished,
and ends with the records of a run that had them all from the start."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from memops.core.config import compose_config
from memops.eval.loo import evaluate
from memops.eval.scored import read_records
from tests.conftest import QUICK_TRAIN

FOLD = "patch-guardrails"
LATE = ("compare", "extract-stages")
"""The adapters the test holds back, as if their training were still running."""


def loo(tmp_path: Path, name: str, datasets: Path, export_dir: Path, *more: str):
    return compose_config(
        "loo",
        [
            f"run={name}",
            f"folds=[{FOLD}]",
            f"runs_dir={tmp_path / 'runs'}",
            f"datasets_dir={datasets}",
            f"exports=[{export_dir}]",
            "extract_stages=true",
            "extract_modes=[two-stage-scored]",
            "calibration_notes=4",
            "contract=[]",  # the suite is test_loo's; here only what waits for what counts
            "prompted=false",
            "progress=false",
            *(o for o in QUICK_TRAIN if o != "prepare=false"),  # a train.py setting; a run prepares none
            *more,
        ],
    )


def finish_later(trained: Path, into: Path, records: Path) -> threading.Thread:
    """Put the held-back adapters in place once the run has recorded the last job the others
    serve (the rules' extraction), each whole at once as train.py leaves it (manifest last)."""

    def release() -> None:
        while not any(r["op"] == "extract" and r["variant"] == "symbolic" for r in read_records(records)):
            time.sleep(0.2)
        for op in LATE:
            shutil.copytree(trained / op, into / f".{op}.partial")
            os.rename(into / f".{op}.partial", into / op)

    return threading.Thread(target=release, daemon=True)


def test_a_run_waits_for_adapters_in_training_and_scores_what_it_can_meanwhile(
    trained_adapters: Path,
    tiny_model: Path,
    small_datasets: Path,
    export_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("memops.eval.loo.POLL_S", 0.5)  # the run looks for manifests often: no idle 10 s
    where = tmp_path / "adapters" / "tiny" / FOLD
    where.mkdir(parents=True)
    for adapter in trained_adapters.iterdir():
        if adapter.is_dir() and adapter.name not in LATE:
            shutil.copytree(adapter, where / adapter.name)
    base = f"model.path={tiny_model}"
    waiting = loo(
        tmp_path,
        "waiting",
        small_datasets,
        export_dir,
        base,
        f"adapters_dir={tmp_path / 'adapters'}",
        "wait_for_training_s=300",
    )
    releaser = finish_later(trained_adapters, where, tmp_path / "runs" / "waiting" / "records.jsonl")
    releaser.start()
    evaluate(waiting)
    releaser.join(timeout=5)

    records = read_records(tmp_path / "runs" / "waiting" / "records.jsonl")
    order = [(r["op"], r["variant"]) for r in records]
    first_late = min(order.index(("compare", "learned")), order.index(("extract", "two-stage-scored")))
    assert order.index(("extract", "symbolic")) < first_late  # the rest was scored before them
    manifest = json.loads((tmp_path / "runs" / "waiting" / "manifest.json").read_text())
    assert manifest["phases"]["adapter wait"] > 0 and manifest["phases"]["training"] == 0  # trained none

    given = loo(tmp_path, "given", small_datasets, export_dir, base, f"adapters={trained_adapters.parent}")
    evaluate(given)
    # The same text and pair scores: an adapter loaded late leaves the 4-bit base as it was.
    answers = {
        run: {
            (r["op"], r["variant"], r["id"]): (r["raw"], r.get("pair_scores"))
            for r in read_records(tmp_path / "runs" / run / "records.jsonl")
        }
        for run in ("waiting", "given")
    }
    assert answers["waiting"] == answers["given"]
    calibrated = [
        json.loads((tmp_path / "runs" / run / "calibration" / f"{FOLD}.json").read_text())
        for run in ("waiting", "given")
    ]
    assert calibrated[0] == calibrated[1]


def test_a_server_run_waits_for_every_adapter_before_it_starts_and_names_the_one_missing(
    trained_adapters: Path, tiny_model: Path, small_datasets: Path, export_dir: Path, tmp_path: Path
) -> None:
    cfg = loo(
        tmp_path,
        "vllm",
        small_datasets,
        export_dir,
        f"model.path={tiny_model}",
        "backend=vllm",
        f"adapters_dir={tmp_path / 'adapters'}",
        "wait_for_training_s=0.5",
    )
    with pytest.raises(
        TimeoutError, match=r"tiny/patch-guardrails/compare: not finished after wait_for_training_s=0.5 s"
    ):
        evaluate(cfg)
    assert read_records(tmp_path / "runs" / "vllm" / "records.jsonl") == []
