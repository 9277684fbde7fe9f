"""A decision adapter's validation answers and the collapse guard (train/validation.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from memops.operators.adapters import calibration, check_adapter, collapse_warning
from memops.operators.backends import BackendError
from memops.operators.contract import suite
from memops.operators.registry import COMPARE
from memops.train.validation import collapsed, dropped, labels, read_sets, summarize


def test_a_mix_like_the_golds_is_not_collapsed() -> None:
    gold = Counter({"merge": 40, "supersede": 30, "contested": 20, "add": 10})
    assert collapsed(Counter({"merge": 45, "supersede": 25, "contested": 20, "add": 10}), gold) is None
    # A majority the gold has too is not a collapse: merge is half of the gold here.
    assert collapsed(Counter({"merge": 55, "supersede": 45}), Counter({"merge": 50, "supersede": 50})) is None


def test_one_answer_far_above_its_gold_share_is_a_collapse() -> None:
    gold = Counter({"merge": 25, "supersede": 25, "contested": 25, "add": 25})
    assert collapsed(Counter({"merge": 90, "add": 10}), gold) == "merge"
    assert collapsed(Counter({"merge": 60, "add": 40}), gold) == "merge"
    assert collapsed(Counter({"merge": 45, "add": 30, "contested": 25}), gold) is None


def test_a_label_the_gold_holds_often_and_the_answers_never_give_is_dropped() -> None:
    # The full CPU recipe's update adapter at seed 1, on its validation reads: no supersede.
    gold = Counter({"add": 17, "contested": 27, "merge": 12, "supersede": 18})
    answers = Counter({"add": 17, "contested": 34, "merge": 23})
    assert collapsed(answers, gold) is None and dropped(answers, gold) == ["supersede"]
    assert dropped(Counter({"add": 17, "contested": 27, "merge": 12, "supersede": 5}), gold) == []
    assert dropped(Counter({"a": 99, "b": 1}), Counter({"a": 95, "b": 5})) == []  # too rare to tell
    manifest = {
        "validation_decisions": {
            "collapsed": None,
            "dropped": ["supersede"],
            "contract": {"answers": answers},
        }
    }
    assert "never answered 'supersede'" in collapse_warning("update", manifest)
    assert collapse_warning("update", {"validation_decisions": {"collapsed": None, "dropped": []}}) is None


def test_an_adapter_that_answers_one_order_but_judges_the_values_is_flagged_free_only() -> None:
    """An adapter that puts ``conflicting/first`` first wherever two values differ and
    ``equivalent/none`` first where they are one is collapsed read free (the order is the rules'
    to give); read within the contract, where the claims' keys, evidence and times decide the rest,
    its every answer is the gold's, and its warning says so."""
    cases = suite("compare", "validation")
    names = labels("compare")

    def logprobs(label: str) -> list[float]:
        top = "equivalent/none" if label == "equivalent/none" else "conflicting/first"
        return [5.0 if n == top else 3.0 if n == label else 0.0 for n in names]

    read = [logprobs(c["label"]) for c in cases]
    gold = [c["label"] for c in cases]
    check = summarize(
        "compare", {"contract": read}, {"contract": gold}, {"contract": [c["arguments"] for c in cases]}
    )
    assert check["collapsed"] == "conflicting/first"
    assert check["contract"]["within_contract_accuracy"] == 1.0
    assert check["within_contract"] == {"collapsed": None, "dropped": []}
    warning = collapse_warning("compare", {"validation_decisions": check})
    assert warning is not None and warning.endswith(
        "read within the contract (decisions=contract, judged) it is not"
    )
    # One that calls every pair at one key two values drops `equivalent/none` read either way.
    always_two = [logprobs("conflicting/first") for _ in cases]
    check = summarize(
        "compare", {"contract": always_two}, {"contract": gold}, {"contract": [c["arguments"] for c in cases]}
    )
    assert check["within_contract"]["dropped"] == ["equivalent/none"]
    assert "read within the contract it (almost) never answered 'equivalent/none'" in collapse_warning(
        "compare", {"validation_decisions": check}
    )


def test_an_adapter_trained_to_collapse_is_flagged_in_its_manifest_card_and_on_load(
    smollm2_model: Path, small_datasets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A few steps at a learning rate far above the recipe's push SmolLM2's compare adapter onto
    one answer; the guard reads its answers right after training and says so everywhere."""
    from memops.core.config import compose_config
    from memops.train.recipe import train_adapter

    args = [
        "op=compare",
        "fold=patch-guardrails",
        "model=smollm2-135m-instruct",
        f"model.path={smollm2_model}",
        f"datasets_dir={small_datasets}",
        f"adapters_dir={tmp_path}",
        "max_steps=4",
        "op.max_length=512",
        "op.learning_rate=0.2",
        "max_eval_samples=8",
        "contract_per_region=3",
        "report_to=none",
        "prepare=false",
    ]
    train_adapter(compose_config("train", args), args)
    adapter = tmp_path / "smollm2-135m-instruct" / "patch-guardrails" / "compare"
    manifest = json.loads((adapter / "manifest.json").read_text())
    check = manifest["validation_decisions"]
    regions = len({case["region"] for case in suite("compare", "validation")})
    assert check["contract"]["n"] == sum(check["contract"]["gold"].values()) == 3 * regions
    # The guard reads every set at once: its label is the one the answers pile on over all rows.
    answers = sum((Counter(check[name]["answers"]) for name in read_sets(check)), Counter())
    top, count = answers.most_common(1)[0]
    assert top == check["collapsed"] and count >= sum(answers.values()) / 2
    assert "**Collapsed**" in (adapter / "README.md").read_text()
    # Read within the contract, each row on its own call's claims, the keys decide their regions
    # whatever the adapter weighs most: as many `unrelated` and `different_scope` answers as gold.
    within, suite_gold = check["contract"]["within_contract_answers"], check["contract"]["gold"]
    assert all(within.get(k, 0) == suite_gold[k] > 0 for k in ("unrelated/none", "different_scope/none"))
    assert set(check["within_contract"]) == {"collapsed", "dropped"}
    # The same reads fitted the offsets decisions=calibrated applies, one per allowed answer,
    # and scored them on the half of the rows each fit did not see.
    offsets = calibration("compare", adapter)
    assert sorted(offsets.offsets) == sorted(a.label for a in COMPARE.answers) and offsets.scale >= 0
    for name in ("split", "contract"):
        assert 0 <= check[name]["calibrated_accuracy"] <= 1
        assert sum(check[name]["calibrated_answers"].values()) == check[name]["n"]
    warning = collapse_warning("compare", manifest)
    assert warning is not None and check["collapsed"] in warning and "\n" not in warning
    assert warning in capsys.readouterr().err  # the training said it as it finished
    check_adapter("compare", adapter)  # what a LOO run's backend and open_memory load through
    assert warning in capsys.readouterr().err
    del manifest["validation_decisions"]["offsets"]  # an adapter trained before offsets were fitted
    (adapter / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BackendError, match=r"no fitted offsets.*decisions=read"):
        calibration("compare", adapter)


def test_select_decisions_keeps_the_checkpoint_whose_answers_match_best(
    tiny_model: Path, export_dir: Path, tmp_path: Path
) -> None:
    """``select=decisions`` reads the answers at every evaluation, a real trajectory's
    (``real_validation``) among them, and keeps the first checkpoint with the best pooled exact
    match, through rotation (one checkpoint kept) and into the saved adapter, its manifest (which
    lists the real trajectory as seen) and its card."""
    from safetensors.torch import load_file

    from memops.core.config import compose_config
    from memops.core.folds import Fold
    from memops.core.sources import SHIPPED
    from memops.data.config import DataConfig
    from memops.data.pipeline import build as build_data
    from memops.train.recipe import train_adapter

    real = next(name for name in SHIPPED if name != "patch-guardrails")
    datasets = tmp_path / "datasets"
    build_data(
        DataConfig(
            scenarios_per_family=4,
            noisy_per_family=0,
            datasets_dir=str(datasets),
            exports=[str(export_dir)],
            folds=["patch-guardrails"],
            real_validation=[real],
            progress=False,
        )
    )
    args = [
        "op=compare",
        "fold=patch-guardrails",
        "model=tiny",
        f"model.path={tiny_model}",
        f"datasets_dir={datasets}",
        f"adapters_dir={tmp_path}",
        "max_steps=6",
        "eval_steps=2",
        "save_steps=2",
        "save_total_limit=1",
        "select=decisions",
        "max_eval_samples=8",
        "contract_per_region=2",
        "report_to=none",
        "prepare=false",
    ]
    train_adapter(compose_config("train", args), args)
    adapter = tmp_path / "tiny" / "patch-guardrails" / "compare"
    manifest = json.loads((adapter / "manifest.json").read_text())
    curve = {int(step): acc for step, acc in manifest["checkpoint_answers"].items()}
    assert sorted(curve) == [2, 4, 6]
    ranks = {
        e["step"]: e["eval_decisions_rank"] for e in manifest["log_history"] if "eval_decisions_rank" in e
    }
    assert sorted(ranks) == sorted(curve) and manifest["selected_step"] == max(ranks, key=ranks.get)
    best = curve[manifest["selected_step"]]
    assert best == max(curve.values())  # the rank orders by exact match first
    check = manifest["validation_decisions"]
    rows = (datasets / "patch-guardrails" / "compare" / "validation.jsonl").read_text().splitlines()
    assert read_sets(check) == ["split", "contract", "real"]
    assert check["real"]["n"] == sum(json.loads(row)["group"] == real for row in rows) > 0
    assert check["split"]["n"] == 8  # max_eval_samples of the scenarios' rows; the real ones whole
    regions = Counter(case["region"] for case in suite("compare", "validation"))
    assert min(regions.values()) > 2 and check["contract"]["n"] == 2 * len(regions)
    pooled = sum(check[s]["accuracy"] * check[s]["n"] for s in read_sets(check))
    assert pooled / sum(check[s]["n"] for s in read_sets(check)) == pytest.approx(best, abs=1e-4)
    assert real in manifest["trajectories"] and Fold.of_adapter(adapter).saw(real)
    kept = load_file(
        adapter / "checkpoints" / f"checkpoint-{manifest['selected_step']}" / "adapter_model.safetensors"
    )
    saved = load_file(adapter / "adapter_model.safetensors")
    assert kept.keys() == saved.keys() and all((kept[k] == saved[k]).all() for k in kept)
    card = (adapter / "README.md").read_text()
    assert f"| kept | step {manifest['selected_step']}, by validation answers" in card
    assert f"| real trajectories (`real_validation`) | {check['real']['n']} |" in card


def test_select_decisions_needs_checkpoints_at_evaluated_steps() -> None:
    from memops.core.config import compose_config

    args = ["op=compare", "model=tiny", "select=decisions", "eval_steps=3", "save_steps=4"]
    with pytest.raises(Exception, match=r"save_steps \(4\) must be a multiple of eval_steps \(3\)"):
        compose_config("train", args)


def test_a_contract_read_of_no_case_a_region_is_refused_before_any_work() -> None:
    from memops.core.config import compose_config

    with pytest.raises(Exception, match=r"contract_per_region=0: .* at least 1 contract case"):
        compose_config("train", ["op=compare", "model=tiny", "contract_per_region=0"])


def test_checkpoints_rank_by_exact_match_then_by_how_near_the_misses_came() -> None:
    from memops.train.selection import rank
    from memops.train.validation import gold_probability

    assert gold_probability([0.0, 0.0], 1) == pytest.approx(0.5)
    assert gold_probability([-1000.0, 0.0, -1000.0], 1) == pytest.approx(1.0)
    names = labels("update")
    gold = names  # four rows, one per answer, each a suite case's call
    cases = {c["label"]: c["arguments"] for c in suite("update", "validation")}
    arguments = [cases[g] for g in gold]

    def read(right: int, near: float) -> dict:
        """The first ``right`` rows answered right; the others give the gold ``near`` and the
        first other answer 1.0 (so they are missed), the rest 0.0."""
        rows = []
        for k, g in enumerate(gold):
            wrong = next(n for n in names if n != g)
            top = 5.0 if k < right else near
            rows.append([top if n == g else 1.0 if n == wrong else 0.0 for n in names])
        both = {"split": arguments, "contract": arguments}
        return summarize("update", {"split": rows, "contract": rows}, {"split": gold, "contract": gold}, both)

    near, far = read(2, 0.9), read(2, -5.0)
    assert near["split"]["accuracy"] == far["split"]["accuracy"] == 0.5
    assert near["split"]["gold_probability"] > far["split"]["gold_probability"]
    assert rank(near) > rank(far)  # a tie goes to the checkpoint nearer the gold
    assert rank(read(3, -5.0)) > rank(near)  # one more row right outranks any nearness
