"""Operator datasets: fold layout, labels from the engine, leakage, determinism, card."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from memops.core.folds import Fold
from memops.core.layout import SYNTHETIC, TRAINING_FOLDS
from memops.core.sources import SHIPPED
from memops.data.build import LeakageError, check_leakage, fold_splits
from memops.data.config import DataConfig
from memops.data.pipeline import build
from memops.data.realism import NaiveBayes
from memops.data.trajectory import load_trajectory
from memops.memory import ACTIONS
from memops.operators.contract import regions
from memops.operators.examples import COMPARE_LABELS
from memops.operators.registry import OPS
from memops.operators.schemas import CompareOutput, ExtractOutput, UpdateOutput
from tests.conftest import shipped


def small(out: Path, export_dir: Path, **changes: object) -> DataConfig:
    cfg = DataConfig(
        scenarios_per_family=6,
        noisy_per_family=2,
        datasets_dir=str(out),
        exports=[str(export_dir)],
        progress=False,
    )
    for key, value in changes.items():
        setattr(cfg, key, value)
    return cfg


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, export_dir: Path) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("datasets")
    result = build(small(out, export_dir))
    return out, result


def test_every_fold_and_op_is_a_dataset_dict_with_jsonl(built: tuple[Path, dict]) -> None:
    from datasets import load_from_disk

    out, _ = built
    for fold in (*SHIPPED, *TRAINING_FOLDS):
        for op in OPS:
            dd = load_from_disk(str(out / fold / op))
            held_out = fold not in TRAINING_FOLDS
            assert set(dd) == ({"train", "validation", "test"} if held_out else {"train", "validation"})
            for split in dd:
                lines = (out / fold / op / f"{split}.jsonl").read_text().splitlines()
                assert len(lines) == dd[split].num_rows
            assert dd["train"].num_rows > 0 and dd["validation"].num_rows > 0
            if fold == SYNTHETIC:  # no trajectory in training: held out for all five at once
                assert set(dd["train"]["source"]) == {"synthetic"}
            if held_out:
                assert dd["test"].num_rows > 0
                assert set(dd["test"]["group"]) == {fold}
                assert set(dd["validation"]["source"]) == {"synthetic"}


def test_completions_parse_with_the_operator_schemas(built: tuple[Path, dict]) -> None:
    out, _ = built
    schemas = {"extract": ExtractOutput, "compare": CompareOutput, "update": UpdateOutput}
    for op, schema in schemas.items():
        for line in (out / "all" / op / "train.jsonl").read_text().splitlines():
            row = json.loads(line)
            assert [m["role"] for m in row["prompt"]] == ["system", "user"]
            (message,) = row["completion"]
            schema.model_validate_json(message["content"])


def test_every_label_of_every_op_is_present(built: tuple[Path, dict]) -> None:
    _, result = built
    ops = result["card"]["ops"]
    assert set(ops["compare"]["label"]) == set(COMPARE_LABELS)
    assert set(ops["update"]["label"]) == set(ACTIONS)
    assert "0 claims" in ops["extract"]["label"] and "2 claims" in ops["extract"]["label"]
    total = ops["compare"]["examples"]
    # The contract cases weigh each region by its difficulty, so the labels of the easy regions
    # (unrelated, other scope) are rarer than the conflicts; each still holds 8% or more.
    assert min(ops["compare"]["label"].values()) / total >= 0.08
    for op in ("compare", "update"):  # every region of the contract is in the data
        assert set(ops[op]["region"]) == {*regions(op), "(episode's own)"}, op


def test_card_files_and_manifest(built: tuple[Path, dict]) -> None:
    out, _ = built
    card = json.loads((out / "card.json").read_text())
    assert card["length_unit"] == "characters"
    assert set(card["folds"]) == {*SHIPPED, *TRAINING_FOLDS}
    assert "| conflicting/none |" in (out / "card.md").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 0 and len(manifest["dataset_fingerprint"]) == 64
    assert manifest["config"]["scenarios_per_family"] == 6


def test_card_sets_the_synthetic_data_beside_each_trajectory(built: tuple[Path, dict]) -> None:
    """The realism table: one column per source, read off the built episodes; trajectories keep
    their own shape (their values are longer than two words and mostly not verbatim)."""
    out, result = built
    table = result["card"]["realism"]
    assert list(table) == ["synthetic", *SHIPPED]
    for source, row in table.items():
        assert row["claims"] > 0 and 0 <= row["value_verbatim_in_note"] <= 1, source
        assert set(row["compare"]) <= set(COMPARE_LABELS) and set(row["update"]) <= set(ACTIONS)
        assert abs(sum(row["compare"].values()) - 1) < 0.01
    synthetic = table["synthetic"]
    assert synthetic["utc_offsets"] >= 3 and synthetic["value_words_mean"] > 3
    assert synthetic["value_verbatim_in_note"] < 0.5
    assert table["patch-guardrails"]["value_words_mean"] > 3
    assert table["patch-guardrails"]["notes_with_files"] > 0.5  # a commit's note lists its files
    markdown = (out / "card.md").read_text()
    assert "| value verbatim in its note |" in markdown and "## One-input baseline" in markdown


def test_one_input_baseline_scores_each_view_on_unseen_episodes(built: tuple[Path, dict]) -> None:
    """Every view of both decision operators is fit on synthetic train and scored on synthetic
    validation and on the trajectories, with recall per label; one input alone falls well
    short of the decision (the rule needs both)."""
    _, result = built
    baseline = result["card"]["one_input"]
    assert set(baseline) == {"compare", "update"}
    for op, views in baseline.items():
        assert len(views) == 3
        for view, scored in views.items():
            assert set(scored) == {"synthetic validation", "trajectories"}, (op, view)
            for s in scored.values():
                assert s["n"] > 0 and 0 <= s["accuracy"] <= 1
                assert sum(s["recall"].values()) > 0
    compare = baseline["compare"]["second claim alone"]["synthetic validation"]
    assert compare["accuracy"] < 0.8


def test_real_trajectories_limits_what_a_trajectory_fold_trains_on(export_dir: Path) -> None:
    """The data-scaling knob: k of the other trajectories, in order; ``all`` and ``synthetic``
    keep theirs, and the held-out trajectory is never among them."""
    trajectories = [load_trajectory(name, shipped(export_dir)) for name in SHIPPED]
    held_out = trajectories[2].id
    for k, want in ((0, 0), (1, 1), (2, 2), (None, 4)):
        train = fold_splits(Fold.of(held_out, real_trajectories=k), [], trajectories, 0.2)["train"]
        assert [t.id for t in train] == [t.id for t in trajectories if t.id != held_out][:want]
    assert len(fold_splits(Fold.of("all", real_trajectories=1), [], trajectories, 0.2)["train"]) == 5
    assert fold_splits(Fold.of(SYNTHETIC, real_trajectories=3), [], trajectories, 0.2)["train"] == []


def test_real_repeat_weights_the_trajectories_a_fold_takes(export_dir: Path) -> None:
    """Each trajectory taken ``real_repeat`` times; the held-out test split and the synthetic
    fold do not change."""
    trajectories = [load_trajectory(name, shipped(export_dir)) for name in SHIPPED]
    held_out = trajectories[0].id
    two = Fold.of(held_out, real_trajectories=2)
    once = fold_splits(two, [], trajectories, 0.2)
    thrice = fold_splits(two, [], trajectories, 0.2, real_repeat=3)
    assert [t.id for t in thrice["train"]] == [t.id for t in once["train"]] * 3
    assert thrice["test"] == once["test"] and [t.id for t in once["test"]] == [held_out]
    assert fold_splits(Fold.of(SYNTHETIC), [], trajectories, 0.2, real_repeat=3)["train"] == []
    with pytest.raises(ValueError, match="real_repeat=0: must be 1 or more"):
        DataConfig(exports=[str(export_dir)], real_repeat=0)


def test_synthetic_plus_adds_trajectories_to_the_synthetic_fold_alone(
    tmp_path: Path, export_dir: Path
) -> None:
    """A data-scaling point: the synthetic fold trains on the named trajectories too, and holds
    the others out (the leakage check runs against each of them)."""
    trajectories = [load_trajectory(name, shipped(export_dir)) for name in SHIPPED]
    plus = [SHIPPED[3], SHIPPED[1]]
    splits = fold_splits(Fold.of(SYNTHETIC, plus), [], trajectories, 0.2, real_repeat=2)
    assert [t.id for t in splits["train"]] == [SHIPPED[1], SHIPPED[3]] * 2
    held_out = fold_splits(Fold.of(SHIPPED[0], plus), [], trajectories, 0.2)
    assert len(held_out["train"]) == 4  # a trajectory fold is not affected

    out = tmp_path / "ds"
    cfg = small(out, export_dir, folds=[SYNTHETIC], scenarios_per_family=2, noisy_per_family=0)
    cfg.synthetic_plus = [SHIPPED[3]]
    build(cfg)
    lines = (out / SYNTHETIC / "compare" / "train.jsonl").read_text().splitlines()
    assert {json.loads(line)["group"] for line in lines} & set(SHIPPED) == {SHIPPED[3]}
    with pytest.raises(ValueError, match="synthetic_plus"):
        DataConfig(exports=[str(export_dir)], synthetic_plus=["no-such-trajectory"])
    reordered = DataConfig(exports=[str(export_dir)], synthetic_plus=[SHIPPED[3], SHIPPED[1]])
    assert reordered.synthetic_plus == [SHIPPED[1], SHIPPED[3]]  # one set, one build


def test_real_validation_puts_trajectories_in_every_folds_validation_split_alone(
    tmp_path: Path, export_dir: Path
) -> None:
    """Real decisions to choose checkpoints by: each fold's validation split holds the named
    trajectories beside the scenarios' part, no train split does, and no fold is built for one."""
    out = tmp_path / "ds"
    cfg = small(out, export_dir, folds=[SYNTHETIC, SHIPPED[0]], scenarios_per_family=2, noisy_per_family=0)
    cfg.real_validation, cfg.synthetic_plus = [SHIPPED[2]], [SHIPPED[1]]
    build(cfg)
    for fold in (SYNTHETIC, SHIPPED[0]):
        groups = {
            split: {json.loads(line)["group"] for line in (out / fold / "compare" / f"{split}.jsonl").open()}
            for split in ("train", "validation")
        }
        assert groups["validation"] & set(SHIPPED) == {SHIPPED[2]}
        assert SHIPPED[2] not in groups["train"]
    with pytest.raises(ValueError, match="real_validation"):
        DataConfig(exports=[str(export_dir)], folds=[SHIPPED[2]], real_validation=[SHIPPED[2]])
    with pytest.raises(ValueError, match="synthetic_plus"):
        DataConfig(exports=[str(export_dir)], synthetic_plus=[SHIPPED[2]], real_validation=[SHIPPED[2]])
    assert SHIPPED[2] not in DataConfig(exports=[str(export_dir)], real_validation=[SHIPPED[2]]).folds


def test_real_twins_reach_the_trajectories_a_fold_trains_on_and_no_split_it_scores(
    tmp_path: Path, export_dir: Path
) -> None:
    """``real_twins``: a trained trajectory's compare pairs are followed by their twins (with
    ``near_twins`` a pair may have two); its validation and test rows stay the pairs as written,
    the same rows as without twins."""

    def rows(out: Path, fold: str, split: str) -> list[dict]:
        return [json.loads(line) for line in (out / fold / "compare" / f"{split}.jsonl").open()]

    runs = {}
    for real in (False, True):
        out = tmp_path / f"ds-{real}"
        cfg = small(out, export_dir, folds=[SHIPPED[0]], scenarios_per_family=2, noisy_per_family=0)
        cfg.real_validation, cfg.value_twins, cfg.real_twins, cfg.near_twins = [SHIPPED[2]], True, real, real
        build(cfg)
        runs[real] = out
    twins = [r for r in rows(runs[True], SHIPPED[0], "train") if "twin_of" in json.loads(r["inputs"])]
    assert {r["group"] for r in twins} >= set(SHIPPED) - {SHIPPED[0], SHIPPED[2]}
    per_pair = Counter(
        (r["group"], json.loads(r["inputs"])["twin_of"]) for r in twins if r["source"] != "synthetic"
    )
    assert max(per_pair.values()) == 2
    plain = [r for r in rows(runs[False], SHIPPED[0], "train") if "twin_of" in json.loads(r["inputs"])]
    assert {r["source"] for r in plain} == {"synthetic"}
    for split in ("validation", "test"):  # the scenarios' rows have near twins; the real ones none
        real = [
            [r for r in rows(runs[twinned], SHIPPED[0], split) if r["source"] != "synthetic"]
            for twinned in runs
        ]
        assert real[0] and real[0] == real[1]
    for twinned in ("real_twins", "near_twins"):
        with pytest.raises(ValueError, match="value_twins=true"):
            DataConfig(exports=[str(export_dir)], **{twinned: True})


def test_naive_bayes_learns_a_token_that_gives_the_label_away() -> None:
    rows = [(["x", "tell"], "a")] * 5 + [(["x", "other"], "b")] * 5
    model = NaiveBayes(rows)
    assert model.predict(["tell"]) == "a" and model.predict(["other"]) == "b"
    assert model.predict(["unseen"]) == "a"  # equal priors: the first label in sorted order


def test_same_seed_gives_byte_identical_outputs(tmp_path: Path, export_dir: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    cfg = {"folds": ["patch-guardrails", "all"], "scenarios_per_family": 3, "noisy_per_family": 1}
    build(small(a, export_dir, **cfg))
    build(small(b, export_dir, **cfg))
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) > 20
    for rel in files_a:
        if rel.name == "manifest.json":  # names its own output directory
            continue
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    c = tmp_path / "c"
    build(small(c, export_dir, seed=1, **cfg))
    assert (a / "all/extract/train.jsonl").read_bytes() != (c / "all/extract/train.jsonl").read_bytes()


def test_leakage_check_catches_held_out_material(built: tuple[Path, dict], export_dir: Path) -> None:
    out, _ = built
    held_out = load_trajectory("model-routing", shipped(export_dir))
    splits = {
        s: [
            json.loads(x) for x in (out / "model-routing" / "compare" / f"{s}.jsonl").read_text().splitlines()
        ]
        for s in ("train", "validation", "test")
    }
    check_leakage(held_out, splits)  # the real fold is clean

    leaked = dict(splits, train=[*splits["train"], splits["test"][0]])
    with pytest.raises(LeakageError, match="built from the held-out trajectory"):
        check_leakage(held_out, leaked)

    quoted = json.loads(json.dumps(splits["train"][0]))
    quoted["prompt"][1]["content"] += "\n" + held_out.sessions[0].text
    with pytest.raises(LeakageError, match="quotes a held-out"):
        check_leakage(held_out, dict(splits, validation=[quoted]))


def test_a_failed_build_keeps_what_was_written(tmp_path: Path, export_dir: Path) -> None:
    out = tmp_path / "ds"
    build(small(out, export_dir, folds=["all"], scenarios_per_family=2, noisy_per_family=0))
    before = (out / "all" / "update" / "train.jsonl").read_bytes()
    with pytest.raises(Exception, match="export not found"):
        build(small(out, tmp_path / "missing-export", folds=["all"]))
    assert (out / "all" / "update" / "train.jsonl").read_bytes() == before
