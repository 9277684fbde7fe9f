"""Submit the leave-one-out pipeline as Slurm jobs:

    prepare ─▶ train (array over fold × op) ─▶ eval (one per fold) ─▶ report

An eval job waits (``afterok``) for its own fold's training tasks only, so a fold is evaluated
as soon as its three adapters exist; the report waits for every eval. With
``--kill-on-invalid-dep=yes`` a failure cancels what depends on it instead of leaving it
pending forever. Finished adapters are not trained again and present datasets are not rebuilt,
so resubmitting a run picks up where it stopped.

Each job gets its own config resolved: this script makes it from the run's typed config with
the functions memops loo uses (``train_config``, ``LooConfig.data``) and writes it to
``<runs_dir>/<run>/configs/``; the template hands it over with ``--config-dir``/``--config-name``.
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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from memops.core.config import shared, write_config
from memops.core.layout import run_dir
from memops.core.models import base_cached, on_hub
from memops.data.config import DataConfig
from memops.eval.config import LooConfig
from memops.eval.plan import AdapterMismatch, steps
from memops.operators.registry import adapters
from memops.slurm.config import SubmitConfig
from memops.train.config import TrainConfig, train_config

HERE = Path(__file__).resolve().parent
TEMPLATES = {
    "prepare": HERE / "prepare.sbatch",
    "train": HERE / "train.sbatch",
    "eval": HERE / "loo_eval.sbatch",
    "report": HERE / "report.sbatch",
}
ACCELERATE_CONFIGS = HERE / "accelerate"
"""The shipped accelerate configs, named by their stem: ``accelerate_config=ddp``."""
LOG_PATTERN = "%x-%A_%a.out"
BY = "memops submit"
"""The writer each resolved job config names in its header."""
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


@dataclass
class JobConfigs:
    """Every job's own config, made here from this run's as typed values. A job runs with it as
    resolved: nothing is re-parsed or sliced on the node."""

    prepare: DataConfig
    train: dict[tuple[str, str], TrainConfig]
    """(fold, op) -> one training task's config."""
    eval: dict[str, LooConfig]
    """fold -> its eval job's config, scoring that fold into ``<run>/folds/<fold>``."""


def eval_config(cfg: SubmitConfig, fold: str) -> LooConfig:
    """One fold's eval job: this run's LOO config, cut to that fold, writing its own part of the
    run, on the adapters the training jobs leave (or the ``adapters`` given)."""
    serve = replace(cfg.backend.serve, port=0, tensor_parallel_size=max(cfg.resources.eval.gpus, 1))
    return LooConfig(
        **{
            **shared(cfg, LooConfig),
            "run": f"{cfg.run}/folds/{fold}",
            "folds": [fold],
            "adapters": cfg.adapters or str(Path(cfg.adapters_dir) / cfg.model.name),
            "backend": replace(cfg.backend, serve=serve),
            "progress": False,
            "dry_run": False,  # a dry run of the submission still writes jobs that would really run
        }
    )


def job_configs(cfg: SubmitConfig) -> JobConfigs:
    """Every job's config, made from this run's by the functions memops loo uses too."""
    return JobConfigs(
        prepare=cfg.data(progress=False),
        train={
            (fold, op): train_config(cfg, fold, op, prepare=False)
            for fold in cfg.folds
            for op in adapters(cfg.extract_stages)
        },
        eval={fold: eval_config(cfg, fold) for fold in cfg.folds},
    )


def configs_dir(cfg: SubmitConfig) -> Path:
    return run_dir(cfg.runs_dir, cfg.run).resolve() / "configs"


def write_configs(cfg: SubmitConfig, configs: JobConfigs) -> Path:
    """``<run>/configs/``: prepare.yaml, train/<fold>/<op>.yaml and eval/<fold>/job.yaml, which
    the templates hand to the entry scripts with ``--config-dir`` and ``--config-name``. Hydra
    searches configs/ before ``--config-dir``, so no file is named after a fold: a trajectory
    called ``loo`` would otherwise get configs/loo.yaml."""
    root = configs_dir(cfg)
    write_config(root / "prepare.yaml", "data", configs.prepare, by=BY)
    for (fold, op), config in configs.train.items():
        write_config(root / "train" / fold / f"{op}.yaml", "train", config, by=BY)
    for fold, config in configs.eval.items():
        write_config(root / "eval" / fold / "job.yaml", "loo", config, by=BY)
    return root


def job_args(cfg: SubmitConfig) -> dict[str, list[str]]:
    """The template arguments of each step: where the resolved configs are, and which ones."""
    root, folds = str(configs_dir(cfg)), ",".join(cfg.folds)
    return {
        "prepare": [cfg.model.name, cfg.model.path, root],
        "train": [root, folds, ",".join(adapters(cfg.extract_stages))],
        "eval": [root, folds],
        "report": [str(run_dir(cfg.runs_dir, cfg.run)), folds],
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
    try:
        configs = job_configs(cfg)
    except ValueError as exc:
        raise SubmitError(f"a job's config would not start: {exc}") from exc
    args = job_args(cfg)
    jobs: list[Job] = []
    try:
        planned = steps(cfg, trains=not cfg.adapters)
    except AdapterMismatch as exc:
        raise SubmitError(str(exc)) from exc
    if on_hub(cfg.model):  # in the cluster's cache, not this shell's
        planned = replace(planned, base_missing=not base_cached(cfg.model, cfg.hf_home))
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
    report = run_dir(cfg.runs_dir, cfg.run) / "report.md"
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
    env = {"MEMOPS_PYTHON": cfg.python or sys.executable}
    if cfg.hf_home:
        env["HF_HOME"] = str(Path(cfg.hf_home).expanduser().resolve())
    if on_hub(cfg.model) and job.step != "prepare":
        env["HF_HUB_OFFLINE"] = "1"  # the prepare job fetched the base; no job downloads it again
    if job.step == "train" and cfg.accelerate_config:
        env["MEMOPS_ACCELERATE_CONFIG"] = str(accelerate_config(cfg.accelerate_config))
    bad = [f"{k}={v}" for k, v in env.items() if "," in v]
    if bad:
        raise SubmitError(f"sbatch --export cannot carry a comma: {', '.join(bad)}")
    return "ALL," + ",".join(f"{k}={v}" for k, v in env.items())


def accelerate_config(value: str) -> Path:
    """A shipped config by name (``ddp``), else a path of the user's."""
    shipped = ACCELERATE_CONFIGS / f"{value}.yaml"
    return shipped if shipped.is_file() else Path(value).resolve()


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
    from memops.data.manifest import git_commit

    out = run_dir(cfg.runs_dir, cfg.run)
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
