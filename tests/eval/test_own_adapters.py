"""A LOO run whose decisions come from the synthetic fold and whose extraction each fold trains
on its own split (``own_adapters``): the paper's protocol for one adapter, synthetic-only for
the others, as docs/log/extraction.md's "The four other trajectories in training" study ran by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memops.core.config import compose_config
from memops.core.layout import ADAPTER_MANIFEST
from memops.data.pipeline import build as build_data
from memops.eval.config import LooConfig
from memops.eval.loo import evaluate
from memops.eval.plan import steps
from memops.eval.scored import read_records
from memops.operators.backends import BackendError
from memops.train.card import HELDOUT
from tests.conftest import QUICK_TRAIN

FOLD = "patch-guardrails"


def loo(tmp_path: Path, export_dir: Path, tiny_model: Path, *more: str) -> LooConfig:
    return compose_config(
        "loo",
        [
            f"folds=[{FOLD}]",
            f"runs_dir={tmp_path / 'runs'}",
            f"datasets_dir={tmp_path / 'datasets'}",
            f"adapters_dir={tmp_path / 'adapters'}",
            f"exports=[{export_dir}]",
            f"model.path={tiny_model}",
            "extract_stages=true",
            "extract_modes=[two-stage-trained]",
            "replay=false",
            "contract=[]",  # the suite is test_loo's; here only the adapters' homes count
            "prompted=false",
            "progress=false",
            *(o for o in QUICK_TRAIN if o != "prepare=false"),  # a train.py setting; a run prepares none
            *more,
        ],
    )


@pytest.mark.slow
def test_each_fold_trains_its_own_extraction_beside_the_synthetic_decisions(
    tiny_model: Path, export_dir: Path, tmp_path: Path
) -> None:
    cfg = loo(tmp_path, export_dir, tiny_model, "adapters_fold=synthetic", "own_adapters=[extract-stages]")
    assert cfg.trained_on(FOLD, "compare") == "synthetic" and cfg.trained_on(FOLD, "extract-stages") == FOLD
    assert steps(cfg).untrained == [
        ("synthetic", "compare"),
        ("synthetic", "update"),
        (FOLD, "extract-stages"),
    ]

    # The run's own data build at the size the test needs: a small one, found ready by the run.
    small = {"scenarios_per_family": 4, "noisy_per_family": 0, "folds": [FOLD, "synthetic"]}
    build_data(cfg.data(**small, progress=False))
    evaluate(cfg)
    trained = tmp_path / "adapters" / "tiny"
    finished = sorted(str(p.parent.relative_to(trained)) for p in trained.glob(f"*/*/{ADAPTER_MANIFEST}"))
    assert finished == ["patch-guardrails/extract-stages", "synthetic/compare", "synthetic/update"]
    extraction = json.loads((trained / FOLD / "extract-stages" / ADAPTER_MANIFEST).read_text())
    assert extraction["config"]["fold"] == FOLD
    run = tmp_path / "runs" / cfg.run
    served = json.loads((run / "manifest.json").read_text())["adapters"][FOLD]
    assert served == {
        "compare": str(trained / "synthetic" / "compare"),
        "update": str(trained / "synthetic" / "update"),
        "extract-stages": str(trained / FOLD / "extract-stages"),
    }
    scored = {(r["op"], r["variant"]) for r in read_records(run / "records.jsonl")}
    assert {("compare", "learned"), ("update", "learned"), ("extract", "two-stage-trained")} <= scored
    assert steps(cfg).untrained == []  # a rerun trains nothing again
    for adapter in ("synthetic/compare", "synthetic/update", f"{FOLD}/extract-stages"):
        assert cfg.run in json.loads((trained / adapter / HELDOUT).read_text())  # each card its own figures

    # Given adapters (``adapters=<root>``): a fold's own adapter missing from the root is named,
    # not replaced by the synthetic fold's.
    given = tmp_path / "given"
    given.mkdir()
    (given / "synthetic").symlink_to(trained / "synthetic")
    cfg.adapters, cfg.run = str(given), "given"
    with pytest.raises(BackendError, match=f"no finished adapter in: {given / FOLD / 'extract-stages'}"):
        evaluate(cfg)
    (given / FOLD).symlink_to(trained / FOLD)
    evaluate(cfg)
    served = json.loads((tmp_path / "runs" / "given" / "manifest.json").read_text())["adapters"][FOLD]
    assert served["extract-stages"] == str(given / FOLD / "extract-stages")


def test_own_adapters_are_named_adapters_beside_a_shared_fold(export_dir: Path) -> None:
    with pytest.raises(ValueError, match=r"own_adapters=.*with adapters_fold=null: every fold already"):
        LooConfig(
            folds=[FOLD], exports=[str(export_dir)], own_adapters=["extract-stages"], extract_stages=True
        )
    with pytest.raises(ValueError, match="own_adapters: unknown"):
        LooConfig(
            folds=[FOLD],
            exports=[str(export_dir)],
            adapters_fold="synthetic",
            own_adapters=["extract-stages"],
        )
    cfg = LooConfig(
        folds=[FOLD],
        exports=[str(export_dir)],
        adapters_fold="synthetic",
        own_adapters=["extract-stages"],
        extract_stages=True,
        real_repeat=30,  # weighs the trajectories in each fold's own adapter
    )
    assert not cfg.shares_adapters() and cfg.trained_on(FOLD, "update") == "synthetic"
