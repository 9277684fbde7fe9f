"""The submitter without a cluster: the planned job graph, the exact sbatch argument lists of a
dry run, and the errors that stop a submission before anything reaches Slurm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from memops.core.config import compose_config
from memops.core.sources import SHIPPED
from memops.operators.backends import BackendError
from memops.operators.backends.factory import adapter_dirs
from memops.operators.registry import DECISIONS, OPS, STAGES_ADAPTER
from memops.slurm.config import SubmitConfig
from memops.slurm.submit import ACCELERATE_CONFIGS, TEMPLATES, SubmitError, parse_job_id, plan, submit
from tests.conftest import ROOT


def config(tmp_path: Path, *overrides: str) -> SubmitConfig:
    return compose_config(
        "submit",
        [f"datasets_dir={tmp_path / 'ds'}", f"adapters_dir={tmp_path / 'ad'}", *overrides],
    )


def dry_run(tmp_path: Path, *overrides: str) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "memops",
        "submit",
        "dry_run=true",
        f"datasets_dir={tmp_path / 'ds'}",
        f"adapters_dir={tmp_path / 'ad'}",
        f"runs_dir={tmp_path / 'loo'}",
        *overrides,
    ]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def resolved(configs: str, name: str) -> DictConfig:
    """A job's config as the submitter wrote it, minus the defaults line its entry script reads."""
    config = OmegaConf.load(Path(configs) / f"{name}.yaml")
    assert config.pop("defaults") in (["train", "_self_"], ["loo", "_self_"], ["data", "_self_"])
    return config


def test_dry_run_prints_the_full_five_fold_graph_as_argument_lists(tmp_path: Path) -> None:
    lines = dry_run(tmp_path)
    argvs = [json.loads(line) for line in lines if line.startswith("[")]
    assert len(argvs) == 1 + 1 + 5 + 1  # prepare, the train array, an eval per fold, report
    assert all(a[:2] == ["sbatch", "--parsable"] for a in argvs)

    def opt(argv: list[str], name: str) -> str | None:
        return next((a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")), None)

    prepare, train, *evals, report = argvs
    at = train.index(str(TEMPLATES["train"]))
    configs = train[at + 1]
    assert configs == str(tmp_path / "loo" / "qwen2.5-14b-instruct-vllm" / "configs")
    assert train[at + 2 : at + 4] == [",".join(SHIPPED), ",".join(OPS)]  # the op list travels with the job
    for fold in SHIPPED:  # each task's own config, resolved: the template only picks it
        for op in OPS:
            task = resolved(configs, f"train/{fold}/{op}")
            assert (task.op.name, task.fold, task.resume, task.prepare) == (op, fold, True, False)
            assert task.model.name == "qwen2.5-14b-instruct"
    assert opt(train, "array") == f"0-{len(SHIPPED) * len(OPS) - 1}"  # 0-14: five folds, three ops
    assert opt(train, "dependency") == "afterok:<prepare>"
    assert (opt(train, "gres"), opt(train, "cpus-per-task"), opt(train, "mem")) == ("gpu:1", "16", "96G")
    assert opt(prepare, "gres") == "none" and opt(prepare, "dependency") is None
    for i, argv in enumerate(evals):
        assert opt(argv, "array") == str(i)  # the task id picks the fold
        own = ":".join(f"<train>_{len(OPS) * i + j}" for j in range(len(OPS)))
        assert opt(argv, "dependency") == f"afterok:{own}"
        assert "--kill-on-invalid-dep=yes" in argv
        assert argv[-2:] == [configs, ",".join(SHIPPED)]
        job = resolved(configs, f"eval/{SHIPPED[i]}/job")
        assert (job.folds, job.run) == ([SHIPPED[i]], f"qwen2.5-14b-instruct-vllm/folds/{SHIPPED[i]}")
        assert (job.backend.kind, job.backend.serve.port, job.progress) == ("vllm", 0, False)
    folds = ":".join(f"<eval/{f}>" for f in SHIPPED)
    assert opt(report, "dependency") == f"afterok:{folds}"
    for argv in argvs:
        assert opt(argv, "output") == "logs/%x-%A_%a.out"
        assert opt(argv, "export").startswith("ALL,MEMOPS_PYTHON=")
    graph = "\n".join(lines)
    assert "run qwen2.5-14b-instruct-vllm: 8 jobs for 5 fold(s)" in graph
    last = [f"<train>_{len(OPS) * 4 + j}" for j in range(len(OPS))]  # 12, 13, 14 for three ops
    assert f"after {', '.join(last)}" in graph


def test_extract_stages_adds_a_fourth_adapter_per_fold_and_reaches_every_job(tmp_path: Path) -> None:
    lines = dry_run(tmp_path, "extract_stages=true", "folds=[model-routing,patch-guardrails]")
    prepare, train, *evals, _ = [json.loads(line) for line in lines if line.startswith("[")]
    ops = [*OPS, STAGES_ADAPTER]
    at = train.index(str(TEMPLATES["train"]))
    configs = train[at + 1]
    assert train[at + 3] == ",".join(ops) and f"--array=0-{2 * len(ops) - 1}" in train  # 0-7
    assert prepare[-1] == configs and resolved(configs, "prepare").extract_stages is True
    assert resolved(configs, f"train/patch-guardrails/{STAGES_ADAPTER}").op.name == STAGES_ADAPTER
    for i, (fold, argv) in enumerate(zip(["model-routing", "patch-guardrails"], evals, strict=True)):
        assert resolved(configs, f"eval/{fold}/job").extract_stages is True  # fold i waits for its adapters
        own = ":".join(f"<train>_{len(ops) * i + j}" for j in range(len(ops)))
        assert f"--dependency=afterok:{own}" in argv


def test_cpu_profile_runs_the_tiny_model_on_the_local_backend_without_gpus(tmp_path: Path) -> None:
    argvs = [json.loads(x) for x in dry_run(tmp_path, "profile=cpu", "folds=[model-routing]") if x[:1] == "["]
    assert all("--gres=none" in a for a in argvs)
    configs = argvs[2][-2]
    job = resolved(configs, "eval/model-routing/job")
    assert (job.model.name, job.backend.kind) == ("tiny", "hf")
    assert resolved(configs, "train/model-routing/compare").max_steps == 30  # the demo's short training


def test_finished_adapters_and_present_datasets_are_not_redone(tmp_path: Path) -> None:
    cache_holding(tmp_path / "hf", "Qwen/Qwen2.5-14B-Instruct")  # the base is fetched already
    cfg = config(tmp_path, "folds=[permissions-flow,browser-surface]", f"hf_home={tmp_path / 'hf'}")
    for op in OPS:
        for fold in ("permissions-flow", "browser-surface"):
            (tmp_path / "ds" / fold / op).mkdir(parents=True)
            (tmp_path / "ds" / fold / op / "dataset_dict.json").write_text('{"splits": ["test"]}')
            (tmp_path / "ds" / fold / op / "test.jsonl").write_text('{"inputs": {}}\n')
        (tmp_path / "ad" / cfg.model.name / "permissions-flow" / op).mkdir(parents=True)
        (tmp_path / "ad" / cfg.model.name / "permissions-flow" / op / "manifest.json").write_text("{}")
    (tmp_path / "ad" / cfg.model.name / "browser-surface" / "compare").mkdir(parents=True)
    (tmp_path / "ad" / cfg.model.name / "browser-surface" / "compare" / "manifest.json").write_text("{}")
    jobs = {job.key: job for job in plan(cfg).jobs}
    assert list(jobs) == ["train", "eval/permissions-flow", "eval/browser-surface", "report"]
    # task fold * len(OPS) + op: browser-surface's adapters but compare, [3, 5] for three ops
    untrained = [len(OPS) + i for i, op in enumerate(OPS) if op != "compare"]
    assert jobs["train"].array == untrained
    assert jobs["eval/permissions-flow"].after == []
    assert jobs["eval/browser-surface"].after == [("train", i) for i in untrained]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("folds=[nope]", "folds"),
        ("resources.train.mem=lots", "resources.train.mem"),
        ("resources.eval.time=tomorrow", "resources.eval.time"),
        ("run=a/b", "run="),
        ("backend=symbolic", "needs no cluster"),
        ("op.learning_rat=1", "learning_rat"),
        ("batch=many", "batch"),
        ("recipe=auto", "recipe=auto"),
        ("adapters_fold=synthetic", "adapters_fold"),
        ('train_overrides=["max_steps=3"]', "train_overrides"),
    ],
)
def test_bad_settings_stop_before_anything_is_submitted(tmp_path: Path, override: str, message: str) -> None:
    with pytest.raises((SubmitError, ValueError, HydraException), match=message):
        plan(config(tmp_path, override))


def test_a_missing_sbatch_is_named_and_nothing_is_submitted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = config(tmp_path, f"sbatch={tmp_path / 'bin' / 'sbatch'}", f"runs_dir={tmp_path / 'loo'}")
    with pytest.raises(SubmitError, match=r"bin/sbatch not found(.|\n)*nothing had been submitted"):
        submit(cfg, [])
    run_dir = tmp_path / "loo" / cfg.run
    assert not (run_dir / "configs").exists() and not (run_dir / "submissions.jsonl").exists()


@pytest.mark.parametrize(("stdout", "job"), [("4242\n", "4242"), ("4242;lab\n", "4242")])
def test_parsable_job_ids(stdout: str, job: str) -> None:
    assert parse_job_id(stdout) == job


@pytest.mark.parametrize("stdout", ["Submitted batch job 12", "", "12 13"])
def test_anything_else_is_not_a_job_id(stdout: str) -> None:
    with pytest.raises(ValueError, match="expected a job id"):
        parse_job_id(stdout)


def test_multi_gpu_training_passes_the_accelerate_config(tmp_path: Path) -> None:
    lines = dry_run(tmp_path, "accelerate_config=ddp", "resources.train.gpus=4")
    train = json.loads(lines[1])
    assert "--gres=gpu:4" in train
    export = next(a for a in train if a.startswith("--export="))
    assert export.endswith(f"MEMOPS_ACCELERATE_CONFIG={ACCELERATE_CONFIGS / 'ddp.yaml'}")
    assert "MEMOPS_ACCELERATE_CONFIG" not in json.loads(lines[2])[6]  # the eval job does not get it


def test_the_accelerate_configs_load_with_accelerates_own_parser() -> None:
    """Not run here (no GPU): this checks only that accelerate accepts the files as written."""
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.utils import DistributedType

    ddp = load_config_from_file(str(ACCELERATE_CONFIGS / "ddp.yaml"))
    fsdp = load_config_from_file(str(ACCELERATE_CONFIGS / "fsdp_qlora.yaml"))
    assert ddp.distributed_type == DistributedType.MULTI_GPU and ddp.mixed_precision == "bf16"
    assert fsdp.distributed_type == DistributedType.FSDP
    assert fsdp.fsdp_config["fsdp_cpu_ram_efficient_loading"] is True
    assert fsdp.fsdp_config["fsdp_use_orig_params"] is False


def test_a_decisions_only_run_neither_trains_nor_needs_an_extract_adapter(tmp_path: Path) -> None:
    """``extract_modes=[]`` (benchmarks/data_scaling.py reads compare and update only): the plan
    trains the decisions' adapters alone, and a backend opens on a folder without ``extract/``."""
    cfg = config(tmp_path, "folds=[permissions-flow]", "extract_modes=[]")
    assert cfg.served_adapters() == DECISIONS
    jobs = {job.key: job for job in plan(cfg).jobs}
    assert [OPS[t % len(OPS)] for t in jobs["train"].array] == list(DECISIONS)
    root = tmp_path / "ad" / cfg.model.name / "permissions-flow"
    for op in DECISIONS:
        (root / op).mkdir(parents=True)
        (root / op / "manifest.json").write_text("{}")
    assert sorted(adapter_dirs(root, cfg.served_adapters())) == sorted(DECISIONS)
    with pytest.raises(BackendError, match=f"no finished adapter in: {root / 'extract'}"):
        adapter_dirs(root)  # a run that scores learned extraction needs it


def test_a_hub_base_is_fetched_once_and_every_later_job_runs_offline(tmp_path: Path) -> None:
    """The prepare job fetches Qwen into the cluster's cache (``hf_home``); the training, eval and
    report jobs get the same cache with the Hub offline, so none downloads the base again."""
    hf_home = tmp_path / "hf"
    lines = dry_run(tmp_path, f"hf_home={hf_home}")
    argvs = [json.loads(line) for line in lines if line.startswith("[")]
    exports = {option(a, "job-name"): option(a, "export") for a in argvs}
    for name, export in exports.items():
        assert f"HF_HOME={hf_home}" in export, name
        assert ("HF_HUB_OFFLINE=1" in export) == (not name.endswith("-prepare")), name
    assert any("the qwen2.5-14b-instruct model at Qwen/Qwen2.5-14B-Instruct" in line for line in lines)


def option(argv: list[str], name: str) -> str:
    return next(a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}="))


def cache_holding(hf_home: Path, repo: str) -> None:
    """A stand-in for a finished download (no Hub here): the cache layout huggingface_hub reads,
    with the snapshot's config.json."""
    folder = hf_home / "hub" / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("0" * 40)
    (folder / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (folder / "snapshots" / ("0" * 40) / "config.json").write_text("{}")


def test_a_cached_hub_base_needs_no_prepare_job_and_a_missing_one_fails_offline_in_one_line(
    tmp_path: Path,
) -> None:
    hf_home = tmp_path / "hf"
    cache_holding(hf_home, "Qwen/Qwen2.5-14B-Instruct")
    lines = dry_run(tmp_path, f"hf_home={hf_home}")
    assert not any("qwen2.5-14b-instruct model" in line for line in lines)  # only the datasets

    env = {**os.environ, "HF_HOME": str(tmp_path / "empty"), "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, "-m", "memops", "make-model", "qwen2.5-14b-instruct"]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (said,) = [line for line in done.stderr.splitlines() if line.startswith("memops make-model: ")]
    assert "base Qwen/Qwen2.5-14B-Instruct is not in the Hugging Face cache" in said
    assert "the Hub is offline (HF_HUB_OFFLINE=1)" in said
