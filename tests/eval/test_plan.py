"""The plan's reuse of finished adapters: only those this run would have trained the same way."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from memops.core.config import compose_config
from memops.eval.plan import AdapterMismatch, steps
from memops.train.config import train_config, trained_otherwise

FOLD = "patch-guardrails"


@pytest.fixture
def settings(trained_adapters: Path, tiny_model: Path, small_datasets: Path) -> list[str]:
    """A run whose adapters are the fixture's, trained with the fixture's settings."""
    return [
        "max_steps=3",  # the fixture's QUICK_TRAIN on the CPU recipe tiny-demo composes
        f"folds=[{FOLD}]",
        "adapters_fold=null",  # each fold its own adapters
        f"model.path={tiny_model}",
        f"datasets_dir={small_datasets}",
        f"adapters_dir={trained_adapters.parents[1]}",
    ]


def test_finished_adapters_trained_alike_are_reused(settings: list[str]) -> None:
    assert steps(compose_config("tiny-demo", settings)).untrained == []
    speed_only = ["packed_attention=segments", "lm_head=all", "eval_steps=7", "save_total_limit=1"]
    assert steps(compose_config("tiny-demo", [*settings, *speed_only])).untrained == []


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("model.lora.layers_to_transform=[1]", "model.lora.layers_to_transform=[1] (trained with None)"),
        ("max_steps=4", "max_steps=4 (trained with 3)"),
        ("op.learning_rate=0.5", "op.learning_rate=0.5 (trained with "),
        ("seed=1", "seed=1 (trained with 0)"),
    ],
)
def test_a_finished_adapter_trained_otherwise_is_refused_and_named(
    settings: list[str], trained_adapters: Path, change: str, said: str
) -> None:
    """Before this check, a recipe change on an adapters_dir trained before it would have
    scored the old adapters as the new recipe's."""
    manifests = {p: p.read_bytes() for p in trained_adapters.glob("*/manifest.json")}
    with pytest.raises(AdapterMismatch, match=re.escape(said)) as refused:
        steps(compose_config("tiny-demo", [*settings, change]))
    assert "manifest.json: config: this run has" in str(refused.value)
    assert "its own adapters_dir" in str(refused.value)
    assert {p: p.read_bytes() for p in manifests} == manifests  # nothing touched
    # Adapters given to score (adapters=<dir>) are not the run's to train, so not checked.
    assert steps(compose_config("tiny-demo", [*settings, change]), trains=False).untrained == []


def test_a_field_the_manifest_predates_reads_as_its_default(
    settings: list[str], trained_adapters: Path
) -> None:
    recorded = json.loads((trained_adapters / "compare" / "manifest.json").read_text())["config"]
    del recorded["model"]["lora"]["layers_to_transform"], recorded["balance_labels"]
    wanted = train_config(compose_config("tiny-demo", settings), FOLD, "compare")
    assert trained_otherwise(recorded, wanted) == {}
    wanted.model.lora.layers_to_transform = [0]
    assert trained_otherwise(recorded, wanted) == {"model.lora.layers_to_transform": (None, [0])}


def test_a_finished_adapter_on_data_rebuilt_since_is_refused(
    settings: list[str], trained_adapters: Path, small_datasets: Path, tmp_path: Path
) -> None:
    """Same config, other rows: before this check, a datasets_dir rebuilt with other data (a
    generator change, say) would have scored the old adapters as trained on the new data."""
    from datasets import load_from_disk

    copy = tmp_path / "datasets"
    shutil.copytree(small_datasets, copy)
    rebuilt = [s for s in settings if not s.startswith("datasets_dir=")] + [f"datasets_dir={copy}"]
    assert steps(compose_config("tiny-demo", rebuilt)).untrained == []  # byte copies: same rows

    where = copy / FOLD / "update"
    splits = load_from_disk(str(where), keep_in_memory=True)
    splits["train"] = splits["train"].select(range(1, len(splits["train"])))  # one row fewer
    splits.save_to_disk(str(tmp_path / "saved"))
    shutil.rmtree(where / "train")
    shutil.move(tmp_path / "saved" / "train", where / "train")  # the test file stays as built
    with pytest.raises(AdapterMismatch, match="dataset_fingerprint: trained on rows ") as refused:
        steps(compose_config("tiny-demo", rebuilt))
    assert str(trained_adapters / "update" / "manifest.json") in str(refused.value)
    assert f"{where} now gives" in str(refused.value)
    # Another validation sample decides only the logged loss: not a reason to train again.
    assert steps(compose_config("tiny-demo", [*settings, "max_eval_samples=1"])).untrained == []


def test_a_judged_run_trains_and_serves_no_update_adapter(tmp_path: Path) -> None:
    """``decisions=judged`` asks update's judgment of values of the compare adapter, so its plan
    trains compare alone; a reading that asks the update adapter trains both."""
    run = [
        f"folds=[{FOLD}]",
        f"adapters_dir={tmp_path / 'adapters'}",
        f"datasets_dir={tmp_path / 'datasets'}",
        "extract_stages=false",
        "extract_modes=[]",
    ]
    judged = compose_config("loo", [*run, "decisions=judged"])
    assert judged.served_adapters() == ("compare",)
    assert [op for _, op in steps(judged).untrained] == ["compare"]
    read = compose_config("loo", [*run, "decisions=read"])
    assert [op for _, op in steps(read).untrained] == ["compare", "update"]
