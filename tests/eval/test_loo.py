"""The LOO harness end to end on the rules' own answers (the symbolic backend), and resume.

The symbolic backend puts the rules behind the same text interface a model uses, so these runs
go through prompts, parsing, records, metrics and the report exactly as a learned run does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memops.core.models import ModelConfig
from memops.core.sources import SHIPPED
from memops.data.problems import DataError
from memops.eval.config import LooConfig
from memops.eval.loo import PHASES, SETTINGS, check_settings, evaluate, run_settings
from memops.eval.scored import Records, RecordsError, json_lines, mend_tail, read_records
from memops.eval.summary import ENGINE_ONLY, LEARNED, METRICS, VARIANTS
from memops.eval.tables import table
from memops.operators.backends import BackendError
from memops.operators.backends.factory import check_served, check_unseen
from memops.operators.learned import OPT_IN_MODES
from memops.operators.registry import DECISIONS, OPS
from tests.conftest import ROOT

FOLDS = ["patch-guardrails"]


ENGINE = ("engine_state", "engine_queries")


def config(out: Path, datasets: Path, export_dir: Path) -> LooConfig:
    cfg = LooConfig(
        run="oracle",
        folds=FOLDS,
        model=ModelConfig(name="none", path="none", cpu_recipe="cpu"),
        runs_dir=str(out),
        datasets_dir=str(datasets),
        exports=[str(export_dir)],
        extract_stages=True,
        batch=4,
        progress=False,
    )
    cfg.backend.kind = "symbolic"
    return cfg


@pytest.fixture(scope="module")
def uninterrupted(small_datasets: Path, export_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("loo")
    summary = evaluate(config(out, small_datasets, export_dir))
    return out / "oracle", summary


def test_oracle_run_scores_perfectly_and_writes_everything(uninterrupted) -> None:
    run_dir, summary = uninterrupted
    for name in ("records.jsonl", "summary.json", "report.md", "manifest.json", "figures/folds.png"):
        assert (run_dir / name).exists(), name
    for op in DECISIONS:
        assert (run_dir / "figures" / f"confusion_{op}.png").stat().st_size > 1000
    fold = summary["folds"]["patch-guardrails"]
    # every variant but the opt-in overlap selection, which the oracle cannot answer (its fills
    # of pairs a note does not state)
    run = [v for v in VARIANTS if v not in OPT_IN_MODES]
    assert set(fold) == set(run) and all(set(fold[v]) == set(METRICS) for v in run)
    for variant in run:
        for metric in ENGINE if variant in ENGINE_ONLY else METRICS:
            assert fold[variant][metric]["mean"] == 1.0, (variant, metric)
            assert fold[variant][metric]["n"] > 0
    records = read_records(run_dir / "records.jsonl")
    keys = {(r["op"], r["variant"]) for r in records}
    assert keys == {
        ("extract", "direct"),
        ("extract", "two-stage"),
        ("extract", "two-stage-trained"),
        ("extract", "two-stage-scored"),
        ("extract", "prompted"),
        ("extract", "symbolic"),
        *{(op, v) for op in DECISIONS for v in ("learned", "prompted", "symbolic")},
        *{(op, v) for op in ENGINE for v in run},
    }
    assert all(r["error"] is None and r["prompt_hash"] for r in records if r["op"] in OPS)
    # each decision names the slot its incoming claim is at; the oracle misses none of them
    decisions = [r for r in records if r["op"] in DECISIONS]
    assert (
        all(re.fullmatch(r"\w+\.\w+", r["slot"]) for r in decisions)
        and len({r["slot"] for r in decisions}) > 1
    )
    assert summary["decision_misses"] == {op: {"learned": {}, "prompted": {}} for op in DECISIONS}
    assert "missed, by slot" not in (run_dir / "report.md").read_text()
    # every selection method, the scoring one included, picks exactly the gold pairs
    for variant, chosen in summary["selection"]["all folds"].items():
        assert chosen["precision"] == chosen["recall"] == 1.0 and chosen["gold"] > 0, variant
    assert set(summary["selection"]["all folds"]) == {*LEARNED, "prompted"} - set(OPT_IN_MODES)
    report = (run_dir / "report.md").read_text()
    assert "| Fold | Overall | " + " | ".join(op.capitalize() for op in OPS) + " |" in report
    assert "| patch-guardrails | 1.00 [1.00, 1.00]" in report
    # where the time went: a phase this run never entered reads 0, and together they fit the wall
    # (each figure rounded to 0.1 s)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert set(manifest["phases"]) == set(PHASES)
    assert all(manifest["phases"][p] == 0.0 for p in ("datasets", "base", "training", "calibration"))
    assert sum(manifest["phases"].values()) <= manifest["wall_seconds"] + 0.05 * (len(PHASES) + 1)


def test_the_oracle_run_scores_the_contract_suite_apart_from_the_folds(uninterrupted) -> None:
    """Every region of both decisions, for every variant, at 1.00 on the rules; its records
    sit in contract.jsonl and none joins the fold figures."""
    from memops.operators.contract import regions, suite

    run_dir, summary = uninterrupted
    records = read_records(run_dir / "contract.jsonl")
    assert {(r["op"], r["variant"]) for r in records} == {
        (op, v) for op in DECISIONS for v in ("learned", "prompted", "symbolic")
    }
    for op in DECISIONS:
        assert sum(r["op"] == op for r in records) == 3 * len(suite(op, "test"))
        for variant, stat in summary["contract"][op].items():
            assert list(stat["regions"]) == list(regions(op)), variant
            assert all(s["mean"] == 1.0 and s["n"] > 20 for s in stat["regions"].values()), variant
            assert stat["answers"] == stat["gold"]
    assert "contract" not in summary["folds"]
    assert all(r["fold"] != "contract" for r in read_records(run_dir / "records.jsonl"))
    report = (run_dir / "report.md").read_text()
    assert "## Contract suite" in report and "| recency decides |" in report


def test_killed_run_resumes_to_the_same_summary(
    uninterrupted, small_datasets: Path, export_dir: Path, tmp_path
):
    run_dir, summary = uninterrupted
    lines = (run_dir / "records.jsonl").read_text().splitlines(keepends=True)
    resumed = tmp_path / "oracle"
    resumed.mkdir()
    kept = len(lines) // 2
    torn = lines[kept][: len(lines[kept]) // 2]  # the write in flight when it was killed
    (resumed / "records.jsonl").write_text("".join(lines[:kept]) + torn)
    again = evaluate(config(tmp_path, small_datasets, export_dir))
    assert again == summary
    after = (resumed / "records.jsonl").read_text().splitlines(keepends=True)
    assert after[:kept] == lines[:kept]  # recorded samples were skipped, not redone
    assert len(after) == len(lines)


def test_a_resume_under_other_settings_is_refused_and_names_them(
    uninterrupted, small_datasets: Path, export_dir: Path
) -> None:
    """It once reused every record of a symbolic run for an hf run of the same name."""
    run_dir, _ = uninterrupted
    before = (run_dir / "records.jsonl").read_bytes()
    cfg = config(run_dir.parent, small_datasets, export_dir)
    cfg.backend.kind = "hf"
    with pytest.raises(RecordsError, match=r"backend: records made with 'symbolic', this run has 'hf'"):
        evaluate(cfg)
    assert (run_dir / "records.jsonl").read_bytes() == before
    cfg = config(run_dir.parent, small_datasets, export_dir)
    cfg.favour_note = 2.0
    with pytest.raises(RecordsError, match=r"favour_note: records made with None, this run has 2.0"):
        evaluate(cfg)
    assert (run_dir / "records.jsonl").read_bytes() == before


def test_the_dtype_a_run_scores_in_is_a_setting_however_it_is_chosen(
    uninterrupted, small_datasets: Path, export_dir: Path, tmp_path: Path
) -> None:
    """The dtype was recorded only when ``backend.dtype`` differed from ``model.compute_dtype``,
    so records scored in fp32 were resumed as bf16 ones under ``model.compute_dtype=bfloat16``."""
    run_dir, _ = uninterrupted
    cfg = config(tmp_path, small_datasets, export_dir)
    assert run_settings(cfg)["dtype"] is None  # the rules have no dtype
    cfg.backend.kind = "hf"
    cfg.model.compute_dtype = "float32"
    (tmp_path / SETTINGS).write_text(json.dumps(run_settings(cfg)))
    (tmp_path / "records.jsonl").write_bytes((run_dir / "records.jsonl").read_bytes())
    records = Records(tmp_path / "records.jsonl")
    check_settings(tmp_path, records, run_settings(cfg))  # the same settings resume
    cfg.model.compute_dtype = "bfloat16"
    with pytest.raises(RecordsError, match=r"dtype: records made with 'float32', this run has 'bfloat16'"):
        check_settings(tmp_path, records, run_settings(cfg))
    cfg.model.compute_dtype = "float32"
    cfg.backend.dtype = "bfloat16"
    with pytest.raises(RecordsError, match=r"dtype: records made with 'float32', this run has 'bfloat16'"):
        check_settings(tmp_path, records, run_settings(cfg))


def test_datasets_built_with_another_seed_are_refused(
    small_datasets: Path, export_dir: Path, tmp_path: Path
) -> None:
    """A run with seed=1 once read seed-0 datasets without a word, under any run name."""
    cfg = config(tmp_path, small_datasets, export_dir)
    cfg.seed = 1
    with pytest.raises(DataError, match=r"manifest.json: config: this run has seed=1 \(built with 0\)"):
        evaluate(cfg)
    assert not (tmp_path / cfg.run / "records.jsonl").exists()


def test_a_corrupt_record_in_the_middle_is_named(tmp_path: Path) -> None:
    (tmp_path / "records.jsonl").write_text('{"fold": 1}\nnot json\n{}\n')
    with pytest.raises(RecordsError, match=r"records.jsonl:1: record lacks field"):
        read_records(tmp_path / "records.jsonl")


def test_a_file_is_mended_to_end_on_a_line_boundary(tmp_path: Path) -> None:
    """A torn last line is cut off; a whole one that lost its newline gets it back, so the next
    append starts a line of its own either way."""
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n{"a": 2')
    read = list(json_lines(path))
    assert read == [(1, {"a": 1})]
    mend_tail(path, len(read))
    assert path.read_text() == '{"a": 1}\n'
    path.write_text('{"a": 1}\n{"a": 2}')
    read = list(json_lines(path))
    assert read == [(1, {"a": 1}), (2, {"a": 2})]
    mend_tail(path, len(read))
    assert path.read_text() == '{"a": 1}\n{"a": 2}\n'


def test_a_record_that_is_not_an_object_or_comes_twice_is_named(uninterrupted, tmp_path: Path) -> None:
    run_dir, _ = uninterrupted
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join([lines[0], "5", lines[1]]) + "\n")
    with pytest.raises(RecordsError, match=r"records.jsonl:2: a record is a JSON object, not int"):
        read_records(path)
    path.write_text("\n".join([lines[0], lines[1], lines[0]]) + "\n")
    with pytest.raises(RecordsError, match=r"records.jsonl:3: a second record for .* \(first at line 1\)"):
        read_records(path)


def test_report_script_rebuilds_from_records_alone(uninterrupted, tmp_path: Path) -> None:
    run_dir, summary = uninterrupted
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("records.jsonl", "contract.jsonl"):  # the folds' records and the suite's
        (copy / name).write_bytes((run_dir / name).read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "memops", "report", f"run={copy}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((copy / "summary.json").read_text()) == summary
    assert (copy / "figures" / "folds.png").exists() and "patch-guardrails" in done.stdout


def test_report_merges_per_fold_runs_as_slurm_eval_jobs_write_them(uninterrupted, tmp_path: Path) -> None:
    """Two fold directories, as two eval jobs leave them; the second is the first relabelled."""
    run_dir, summary = uninterrupted
    records = read_records(run_dir / "records.jsonl")
    merged = tmp_path / "run"
    for fold in ("patch-guardrails", "model-routing"):
        part = merged / "folds" / fold
        part.mkdir(parents=True)
        (part / "records.jsonl").write_text("".join(json.dumps({**r, "fold": fold}) + "\n" for r in records))
        (part / "manifest.json").write_text((run_dir / "manifest.json").read_text())
    # the contract suite as one of the jobs left it (the first fold's job had none yet)
    contract = merged / "folds" / "model-routing" / "contract.jsonl"
    contract.write_bytes((run_dir / "contract.jsonl").read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "memops", "report", f"run={merged}", "merge=[patch-guardrails,model-routing]"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert f"merged {2 * len(records)} records of 2 fold(s)" in done.stdout
    out = json.loads((merged / "summary.json").read_text())
    assert set(out["folds"]) == {"patch-guardrails", "model-routing"}
    assert out["folds"]["model-routing"] == summary["folds"]["patch-guardrails"]
    assert out["contract"] == summary["contract"] and out["contract"]
    assert out["mean"]["direct"]["overall"]["n"] == 2 * summary["mean"]["direct"]["overall"]["n"]
    manifest = json.loads((merged / "manifest.json").read_text())
    assert manifest["run"]["folds"] == ["patch-guardrails", "model-routing"]
    assert manifest["run"]["backend"] == "symbolic" and manifest["records"] == 2 * len(records)
    # each eval job's phases, as its own manifest timed them: the jobs ran side by side
    phases = json.loads((run_dir / "manifest.json").read_text())["phases"]
    assert manifest["part_phases"] == {"patch-guardrails": phases, "model-routing": phases}


def test_merge_refuses_a_missing_fold_or_records_filed_under_the_wrong_fold(
    uninterrupted, tmp_path: Path
) -> None:
    from memops.eval.report import merge_folds

    run_dir, _ = uninterrupted
    with pytest.raises(FileNotFoundError, match="no records for fold browser-surface"):
        merge_folds(tmp_path, ["browser-surface"])
    part = tmp_path / "folds" / "browser-surface"
    part.mkdir(parents=True)
    (part / "records.jsonl").write_bytes((run_dir / "records.jsonl").read_bytes())
    with pytest.raises(
        RecordsError, match=r"browser-surface/records.jsonl: holds records of fold\(s\) patch"
    ):
        merge_folds(tmp_path, ["browser-surface"])
    assert not (tmp_path / "records.jsonl").exists()


def test_a_parity_pass_scores_only_what_it_names(
    small_datasets: Path, export_dir: Path, tmp_path: Path
) -> None:
    """``replay=false extract_modes=[direct]``: what two backends' raw text is compared on,
    without the engine replays and two-stage calls a slow backend spends its time in."""
    cfg = config(tmp_path, small_datasets, export_dir)
    cfg.extract_modes, cfg.replay = ["direct"], False
    summary = evaluate(cfg)
    records = read_records(tmp_path / "oracle" / "records.jsonl")
    keys = {(r["op"], r["variant"]) for r in records}
    assert keys == {
        ("extract", "direct"),
        ("extract", "prompted"),
        ("extract", "symbolic"),
        *{(op, v) for op in DECISIONS for v in ("learned", "prompted", "symbolic")},
    }
    fold = summary["folds"]["patch-guardrails"]
    assert fold["direct"]["compare"]["mean"] == fold["direct"]["extract"]["mean"] == 1.0
    assert fold["two-stage"]["extract"]["n"] == fold["direct"]["engine_state"]["n"] == 0
    assert (tmp_path / "oracle" / "report.md").exists()
    assert table(summary).split()[1:3] == ["Overall", "direct"]  # its direct extraction is shown
    cfg.prompted, cfg.run = False, "unprompted"  # the base left out: its rows are too
    shown = table(evaluate(cfg))
    assert "prompted" not in shown and "symbolic (ref.)" in shown


def test_a_decisions_only_run_sets_the_prompted_base_against_the_same_examples(
    small_datasets: Path, export_dir: Path, tmp_path: Path
) -> None:
    """``extract_modes=[]`` (make demo, benchmarks/data_scaling.py): no learned extraction, so the
    prompted base neither extracts nor replays its extraction, and its overall, like the learned
    one, is over compare and update alone. The rules still extract: the reference row."""
    cfg = config(tmp_path, small_datasets, export_dir)
    cfg.extract_modes = []
    summary = evaluate(cfg)
    records = read_records(tmp_path / "oracle" / "records.jsonl")
    keys = {(r["op"], r["variant"]) for r in records}
    assert keys == {
        ("extract", "symbolic"),
        *{(op, v) for op in DECISIONS for v in ("learned", "prompted", "symbolic")},
        *{(op, v) for op in ENGINE for v in ("decisions", "symbolic")},
    }
    mean = summary["mean"]
    decisions = sum(mean["prompted"][op]["n"] for op in DECISIONS)
    assert mean["prompted"]["overall"]["n"] == mean["two-stage"]["overall"]["n"] == decisions > 0
    assert mean["prompted"]["extract"]["n"] == 0 and mean["symbolic"]["extract"]["n"] > 0
    header, *rows = table(summary).splitlines()
    assert header.split()[1:] == ["Compare", "learned", "Update", "learned", "Engine", "keys"]
    assert rows[-3].startswith("all folds") and rows[-3].split()[2::3] == ["1.00", "1.00", "1.00"]

    cfg.replay, cfg.run = False, "unreplayed"  # benchmarks/mined_scaling.py: no engine row at all
    _, *rows = table(evaluate(cfg)).splitlines()
    assert rows[-3].split()[1:] == ["folds", "1.00", "[1.00,", "1.00]", "1.00", "[1.00,", "1.00]", "–"]

    cfg.prompted, cfg.run = False, "unprompted"  # benchmarks/seed_sweep.py prompted=false: no base row
    _, *rows = table(evaluate(cfg)).splitlines()
    assert rows[-2].startswith("all folds") and rows[-1].startswith("symbolic (ref.)")


def test_extract_modes_are_checked_against_the_adapters(export_dir: Path) -> None:
    with pytest.raises(ValueError, match="unknown"):
        LooConfig(folds=FOLDS, exports=[str(export_dir)], extract_modes=["three-stage"])
    with pytest.raises(ValueError, match="needs extract_stages=true"):
        LooConfig(folds=FOLDS, exports=[str(export_dir)], extract_modes=["two-stage-trained"])


def test_a_run_naming_a_real_trajectory_count_reads_the_datasets_it_built(
    export_dir: Path, tmp_path: Path
) -> None:
    """``real_trajectories=k`` once built its datasets with k and then refused them as built with
    k where the run had None (benchmarks/data_scaling.py failed so on every count). It builds
    the folds it reads alone: every default fold once was, and one could fail a run that never
    read it."""
    cfg = config(tmp_path, tmp_path / "datasets", export_dir)
    cfg.real_trajectories = 1
    summary = evaluate(cfg)
    assert summary["folds"][FOLDS[0]]["symbolic"]["compare"]["mean"] == 1.0
    built = json.loads((tmp_path / "datasets" / "manifest.json").read_text())["config"]
    assert built["folds"] == FOLDS and built["real_trajectories"] == 1
    assert sorted(p.name for p in (tmp_path / "datasets").iterdir() if p.is_dir()) == FOLDS
    cfg.real_trajectories, cfg.run = 2, "other"
    with pytest.raises(DataError, match=r"this run has real_trajectories=2 \(built with 1\)"):
        evaluate(cfg)
    cfg.real_trajectories, cfg.real_repeat = 1, 3
    with pytest.raises(DataError, match=r"this run has real_repeat=3 \(built with 1\)"):
        evaluate(cfg)
    cfg.real_repeat, cfg.near_misses = 1, 0.5
    with pytest.raises(DataError, match=r"this run has near_misses=0.5 \(built with 0.0\)"):
        evaluate(cfg)


def test_what_the_synthetic_fold_trains_on_is_never_scored_with_its_adapters(
    export_dir: Path, tmp_path: Path
) -> None:
    """``synthetic_plus`` (a data-scaling point): a run leaves those trajectories out of its
    folds, refuses to score one, and a given server's adapter is judged by the trajectories its
    manifest lists, not by its fold's name."""
    plus = ["model-routing"]
    cfg = LooConfig(exports=[str(export_dir)], adapters_fold="synthetic", synthetic_plus=plus)
    assert cfg.folds == [t for t in SHIPPED if t not in plus]
    with pytest.raises(ValueError, match=r"folds: \['model-routing'\] are in synthetic_plus"):
        LooConfig(
            folds=[*FOLDS, *plus], exports=[str(export_dir)], adapters_fold="synthetic", synthetic_plus=plus
        )

    adapter = tmp_path / "tiny" / "synthetic" / "compare"
    adapter.mkdir(parents=True)
    manifest = {"config": {"fold": "synthetic"}, "trajectories": plus}
    (adapter / "manifest.json").write_text(json.dumps(manifest))
    served = {"compare": str(adapter)}
    check_served("http://127.0.0.1:1", served, ["compare"], FOLDS)
    with pytest.raises(BackendError, match="fold synthetic, whose training data hold model-routing"):
        check_served("http://127.0.0.1:1", served, ["compare"], plus)
    # Adapters given to a run (adapters=<root>): the same rule; without a manifest, the layout's fold.
    with pytest.raises(BackendError, match="whose training data hold model-routing"):
        check_unseen({"compare": adapter}, plus)
    check_unseen({"update": tmp_path / "tiny" / "synthetic" / "update"}, plus)
    with pytest.raises(BackendError, match="trained on fold all"):
        check_unseen({"update": tmp_path / "tiny" / "all" / "update"}, FOLDS)


def test_a_trajectory_checkpoints_were_chosen_on_is_never_scored(export_dir: Path) -> None:
    """``real_validation``: every fold's validation split holds it, so a run leaves it out of
    its folds and refuses to score it, whichever adapters serve."""
    real = ["model-routing"]
    cfg = LooConfig(exports=[str(export_dir)], adapters_fold="synthetic", real_validation=real)
    assert cfg.folds == [t for t in SHIPPED if t not in real]
    assert cfg.data().real_validation == real and cfg.synthetic_fold().saw("model-routing")
    for adapters_fold in ("synthetic", None):
        with pytest.raises(ValueError, match=r"folds: \['model-routing'\] are in real_validation"):
            LooConfig(
                folds=[*FOLDS, *real],
                exports=[str(export_dir)],
                adapters_fold=adapters_fold,
                real_validation=real,
            )


def test_weighting_trajectories_needs_each_fold_its_own_adapters(export_dir: Path) -> None:
    """The synthetic fold takes no trajectory, so a weight for them would change nothing."""
    with pytest.raises(ValueError, match="real_repeat=30 with adapters_fold=synthetic"):
        LooConfig(folds=FOLDS, exports=[str(export_dir)], adapters_fold="synthetic", real_repeat=30)
