"""Submit the leave-one-out pipeline as Slurm jobs:

    prepare ─▶ train (array over fold × op) ─▶ eval (one per fold) ─▶ report

An eval job waits (``afterok``) for its own fold's training tasks only, so a fold is evaluated
as soon as its three adapters exist; the report waits for every eval. With
``--kill-on-invalid-dep=yes`` a failure cancels what depends on it instead of leaving it
pending forever. Finished adapters are not trained again and present datasets are not rebuilt,
so resubmitting a run picks up where it stopped.

Each job gets its own config resolved: this script composes it from the entry script's config
(train.py's for a training task, scripts/loo.py's for a fold's eval) and writes it to
``<out_dir>/<run>/configs/``; the template hands it over with ``--config-dir``/``--config-name``.
Every call is an argument list. A failed submission cancels what was already submitted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from core.layout import run_dir
from data.build import datasets_of
from data.config import DataConfig
from eval.config import LooConfig, compose_config
from eval.plan import steps
from slurm.config import SubmitConfig
from train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = {
    "prepare": ROOT / "slurm" / "prepare.sbatch",
    "train": ROOT / "slurm" / "train.sbatch",
    "eval": ROOT / "slurm" / "loo_eval.sbatch",
    "report": ROOT / "slurm" / "report.sbatch",
}
LOG_PATTERN = "%x-%A_%a.out"
_JOB_ID = re.compile(r"(\d+)(;\S+)?")


class SubmitError(RuntimeError):
    pass


@dataclass
class Job:
    key: str
    """Unique in a plan: ``prepare``, ``train``, ``eval/<fold>``, ``report``."""
    step: str
    """Which template and which resources."""
    array: list[int]
    args: list[str]
    after: list[tuple[str, int | None]] = field(default_factory=list)
    """(job key, array task or None for the whole job) that must end successfully first."""
    what: str = ""


def compose(name: str, overrides: list[str], where: str) -> Any:
    try:
        return compose_config(name, overrides)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        raise SubmitError(f"{where} would not start: {exc}") from exc


@dataclass
class JobConfigs:
    """Every job's own config, composed here from its entry script's config and this script's
    settings. A job runs with it as resolved: nothing is re-parsed or sliced on the node."""

    prepare: DataConfig
    train: dict[tuple[str, str], TrainConfig]
    """(fold, op) -> one training task's config."""
    eval: dict[str, LooConfig]
    """fold -> its eval job's config, scoring that fold into ``<run>/folds/<fold>``."""


def job_configs(cfg: SubmitConfig) -> JobConfigs:
    """Compose each job's config now, so a typo fails here and not hours into the queue, and
    refuse model or backend settings given to this script that the jobs would not receive."""
    model = [f"model={cfg.model.name}", f"model.path={cfg.model.path}"]
    common = [f"datasets_dir={cfg.datasets_dir}", *cfg.source_overrides(), f"seed={cfg.seed}"]
    stages = ["extract_stages=true"] if cfg.extract_stages else []
    tokenizer = [f"tokenizer_dir={cfg.model.path}"] if cfg.model.build else []
    data = [f"out_dir={cfg.datasets_dir}", *cfg.source_overrides(), f"seed={cfg.seed}", *tokenizer, *stages]
    prepare = compose("data", [*data, "progress=false", *cfg.data_overrides], "scripts/build_data.py")
    if unbuilt := [f for f in cfg.folds if f not in prepare.folds]:
        raise SubmitError(f"data_overrides leave out fold(s) {', '.join(unbuilt)} that this run evaluates")

    trained = [*model, *common, f"adapters_dir={cfg.adapters_dir}", "resume=true", "prepare=false"]
    train = {
        (fold, op): compose("train", [f"op={op}", f"fold={fold}", *trained, *cfg.train_overrides], "train.py")
        for fold in cfg.folds
        for op in datasets_of(cfg.extract_stages)
    }
    if asdict(compose("train", trained, "train.py").model) != asdict(cfg.model):
        raise SubmitError(
            "model settings other than model.path do not reach the training jobs; pass them as "
            "train_overrides, e.g. 'train_overrides=[\"model.lora.r=8\"]'"
        )

    serve = (
        ["backend.serve.port=0", f"backend.serve.tensor_parallel_size={max(cfg.resources.eval.gpus, 1)}"]
        if cfg.backend.kind == "vllm"
        else []
    )
    evaluated = [
        *model,
        f"backend={cfg.backend.kind}",
        f"adapters={Path(cfg.adapters_dir) / cfg.model.name}",  # loo.py adds each fold
        f"out_dir={cfg.out_dir}",
        *common,
        *serve,
        *stages,
        "progress=false",
    ]
    evals = {
        fold: compose(
            "loo",
            [f"folds=[{fold}]", f"run={cfg.run}/folds/{fold}", *evaluated, *cfg.eval_overrides],
            "scripts/loo.py",
        )
        for fold in cfg.folds
    }

    def settings(backend: Any) -> dict[str, Any]:
        per_job = {"port", "tensor_parallel_size"}  # set above for each eval job
        return {
            **asdict(backend),
            "serve": {k: v for k, v in asdict(backend.serve).items() if k not in per_job},
        }

    if settings(compose("loo", evaluated, "scripts/loo.py").backend) != settings(cfg.backend):
        raise SubmitError(
            "backend settings do not reach the eval jobs; pass them as eval_overrides, "
            "e.g. 'eval_overrides=[\"backend.batch_size=16\"]'"
        )
    return JobConfigs(prepare, train, evals)


def configs_dir(cfg: SubmitConfig) -> Path:
    return run_dir(cfg.out_dir, cfg.run).resolve() / "configs"


def write_config(path: Path, entry: str, config: Any) -> None:
    """The config in full, on the entry script's own config (for its Hydra settings only)."""
    from omegaconf import OmegaConf

    body = OmegaConf.to_yaml(OmegaConf.create(asdict(config)))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"# resolved by scripts/submit.py\ndefaults:\n  - {entry}\n  - _self_\n\n{body}")
    tmp.replace(path)


def write_configs(cfg: SubmitConfig, configs: JobConfigs) -> Path:
    """``<run>/configs/``: prepare.yaml, train/<fold>/<op>.yaml and eval/<fold>/job.yaml, which
    the templates hand to the entry scripts with ``--config-dir`` and ``--config-name``. Hydra
    searches configs/ before ``--config-dir``, so no file is named after a fold: a trajectory
    called ``loo`` would otherwise get configs/loo.yaml."""
    root = configs_dir(cfg)
    write_config(root / "prepare.yaml", "data", configs.prepare)
    for (fold, op), config in configs.train.items():
        write_config(root / "train" / fold / f"{op}.yaml", "train", config)
    for fold, config in configs.eval.items():
        write_config(root / "eval" / fold / "job.yaml", "loo", config)
    return root


def job_args(cfg: SubmitConfig) -> dict[str, list[str]]:
    """The template arguments of each step: where the resolved configs are, and which ones."""
    root, folds = str(configs_dir(cfg)), ",".join(cfg.folds)
    return {
        "prepare": [cfg.model.name, cfg.model.path, root],
        "train": [root, folds, ",".join(datasets_of(cfg.extract_stages))],
        "eval": [root, folds],
        "report": [str(run_dir(cfg.out_dir, cfg.run)), folds],
    }


@dataclass
class Submission:
    jobs: list[Job]
    """The jobs still needed, in submission order."""
    configs: JobConfigs
    missing: list[str]
    """What the prepare job builds (submitted only when ``prepare=true``)."""


def plan(cfg: SubmitConfig) -> Submission:
    """Every job's config, composed first, then the jobs ``eval.plan`` says are still needed."""
    configs = job_configs(cfg)
    args = job_args(cfg)
    jobs: list[Job] = []
    planned = steps(cfg)
    missing = planned.missing(cfg.model)
    prepare: list[tuple[str, int | None]] = []
    if missing and cfg.prepare:
        jobs.append(Job("prepare", "prepare", [0], args["prepare"], what="build " + ", ".join(missing)))
        prepare = [("prepare", None)]
    ops = planned.ops
    tasks = [cfg.folds.index(fold) * len(ops) + ops.index(op) for fold, op in planned.untrained]
    if tasks:
        what = ", ".join(f"{cfg.folds[t // len(ops)]}/{ops[t % len(ops)]}" for t in tasks)
        if len(tasks) == len(cfg.folds) * len(ops):
            what = f"{len(tasks)} adapters: {len(cfg.folds)} fold(s) × {', '.join(ops)}"
        jobs.append(Job("train", "train", tasks, args["train"], prepare, what=what))
    for i, fold in enumerate(cfg.folds):
        own = [("train", t) for t in tasks if t // len(ops) == i]
        jobs.append(Job(f"eval/{fold}", "eval", [i], args["eval"], own or prepare, what=f"fold {fold}"))
    report = run_dir(cfg.out_dir, cfg.run) / "report.md"
    evals = [(f"eval/{fold}", None) for fold in cfg.folds]
    jobs.append(Job("report", "report", [0], args["report"], evals, what=f"merged into {report}"))
    return Submission(jobs, configs, missing)


def array_spec(tasks: list[int]) -> str:
    """``0-14`` for a run of indices, else ``0,2,5``."""
    if tasks == list(range(tasks[0], tasks[-1] + 1)) and len(tasks) > 1:
        return f"{tasks[0]}-{tasks[-1]}"
    return ",".join(map(str, tasks))


def dependencies(job: Job, ids: dict[str, str]) -> list[str]:
    return [ids[key] if task is None else f"{ids[key]}_{task}" for key, task in job.after]


def export(cfg: SubmitConfig, job: Job) -> str:
    env = {"MEMOPS_ROOT": str(ROOT), "MEMOPS_PYTHON": cfg.python or sys.executable}
    if job.step == "train" and cfg.accelerate_config:
        env["MEMOPS_ACCELERATE_CONFIG"] = str(Path(cfg.accelerate_config).resolve())
    bad = [f"{k}={v}" for k, v in env.items() if "," in v]
    if bad:
        raise SubmitError(f"sbatch --export cannot carry a comma: {', '.join(bad)}")
    return "ALL," + ",".join(f"{k}={v}" for k, v in env.items())


def sbatch_argv(cfg: SubmitConfig, job: Job, ids: dict[str, str]) -> list[str]:
    res = getattr(cfg.resources, job.step)
    argv = [
        cfg.sbatch,
        "--parsable",
        f"--job-name={cfg.run}-{job.step}",
        f"--chdir={Path.cwd()}",
        f"--output={Path(cfg.logs_dir) / LOG_PATTERN}",
        f"--array={array_spec(job.array)}",
        f"--export={export(cfg, job)}",
        f"--gres=gpu:{res.gpus}" if res.gpus else "--gres=none",
        f"--cpus-per-task={res.cpus}",
        f"--mem={res.mem}",
        f"--time={res.time}",
    ]
    if res.partition:
        argv.append(f"--partition={res.partition}")
    if cfg.account:
        argv.append(f"--account={cfg.account}")
    if job.after:
        argv += [f"--dependency=afterok:{':'.join(dependencies(job, ids))}", "--kill-on-invalid-dep=yes"]
    return [*argv, *res.extra, str(TEMPLATES[job.step]), *job.args]


def parse_job_id(stdout: str) -> str:
    """``sbatch --parsable`` prints ``<id>`` or ``<id>;<cluster>``."""
    match = _JOB_ID.fullmatch(stdout.strip())
    if not match:
        raise ValueError(f"expected a job id from sbatch --parsable, got {stdout.strip()!r}")
    return match.group(1)


def cancel(cfg: SubmitConfig, ids: dict[str, str]) -> str:
    """scancel what was submitted; says what happened, for the error message."""
    if not ids:
        return "nothing had been submitted"
    scancel = str(Path(cfg.sbatch).with_name("scancel")) if os.sep in cfg.sbatch else "scancel"
    try:
        done = subprocess.run([scancel, *ids.values()], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        return f"could not cancel jobs {', '.join(ids.values())} ({exc}); cancel them by hand"
    if done.returncode != 0:
        return f"scancel {' '.join(ids.values())} failed: {done.stderr.strip()}; cancel them by hand"
    return f"cancelled the jobs already submitted: {', '.join(ids.values())}"


def sbatch_jobs(cfg: SubmitConfig, jobs: list[Job]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for job in jobs:
        argv = sbatch_argv(cfg, job, ids)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        except FileNotFoundError as exc:
            raise SubmitError(
                f"{cfg.sbatch} not found; submit from a Slurm login node or set sbatch=<path>. "
                + cancel(cfg, ids)
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise SubmitError(
                f"sbatch for the {job.key} job did not answer within 120 s; it may or may not have "
                f"been submitted (check squeue). {cancel(cfg, ids)}"
            ) from exc
        if done.returncode != 0:
            raise SubmitError(
                f"sbatch for the {job.key} job failed: exited with code {done.returncode}: "
                f"{done.stderr.strip()}. {cancel(cfg, ids)}"
            )
        try:
            ids[job.key] = parse_job_id(done.stdout)
        except ValueError as exc:
            raise SubmitError(
                f"sbatch for the {job.key} job succeeded but {exc}; that job could not be cancelled "
                f"(check squeue). {cancel(cfg, ids)}"
            ) from exc
    return ids


def graph(cfg: SubmitConfig, jobs: list[Job], ids: dict[str, str]) -> str:
    """One line per job: key, id, array tasks, what it does, and what it waits for."""
    rows = [
        (job.key, ids[job.key], f"[{array_spec(job.array)}]", job.what, ", ".join(dependencies(job, ids)))
        for job in jobs
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        f"run {cfg.run}: {len(jobs)} jobs for {len(cfg.folds)} fold(s); logs: {cfg.logs_dir}/{LOG_PATTERN}"
    ]
    for *cells, after in rows:
        line = "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
        lines.append(f"  {line}  {'after ' + after if after else ''}".rstrip())
    return "\n".join(lines)


def submit(cfg: SubmitConfig, overrides: list[str]) -> dict[str, str]:
    """Plan and write every job's config, then print the argument lists (dry run) or submit and
    record the submission. A submission that fails takes its configs back with its jobs."""
    submission = plan(cfg)
    jobs = submission.jobs
    written = write_configs(cfg, submission.configs)
    if submission.missing and not cfg.prepare:
        print(f"warning: prepare=false, yet missing: {', '.join(submission.missing)}", file=sys.stderr)
    if cfg.dry_run:
        ids = {job.key: f"<{job.key}>" for job in jobs}
        for job in jobs:
            print(json.dumps(sbatch_argv(cfg, job, ids)))
        print()
        print(graph(cfg, jobs, ids))
        print(f"job configs: {written}")
        return ids
    Path(cfg.logs_dir).mkdir(parents=True, exist_ok=True)
    try:
        ids = sbatch_jobs(cfg, jobs)
    except SubmitError:
        shutil.rmtree(written)
        raise
    print(graph(cfg, jobs, ids))
    record(cfg, overrides, jobs, ids)
    return ids


def record(cfg: SubmitConfig, overrides: list[str], jobs: list[Job], ids: dict[str, str]) -> None:
    """Append this submission (config, overrides, commit, job ids) to the run's history."""
    from data.manifest import git_commit

    out = run_dir(cfg.out_dir, cfg.run)
    out.mkdir(parents=True, exist_ok=True)
    entry = {
        "submitted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git_commit": git_commit(),
        "overrides": overrides,
        "config": asdict(cfg),
        "jobs": {job.key: {"id": ids[job.key], "array": array_spec(job.array)} for job in jobs},
    }
    with (out / "submissions.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
