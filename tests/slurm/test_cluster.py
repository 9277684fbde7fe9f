"""The pipeline on a real single-node Slurm cluster (slurm/local/start-slurm.sh), on CPU. Every
test of the running cluster is in this file: ``make test`` gives a file to one worker, and one
cluster runs on a machine (its daemons' ports are fixed).

memops submit submits the tiny-model pipeline for one fold; the jobs run the real entry
points (build_data.py, accelerate launch train.py, loo.py, report.py) through the templates.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memops.core.config import compose_config, write_config
from memops.eval.scored import read_records
from memops.operators.registry import OPS
from memops.slurm.submit import BY, TEMPLATES
from tests.conftest import ROOT
from tests.slurm.cluster import Cluster, Task, array_tasks
from tests.slurm.test_preflight import preflight, status

pytestmark = pytest.mark.slow

FOLD = "patch-guardrails"
QUICK = ["max_steps=3", "max_eval_samples=8"]
"""The CPU profile's recipe (configs/recipe/cpu.yaml) cut to a few steps."""
LEAN_EVAL = ["extract_modes=[direct]", "replay=false", "contract=[]"]
"""The eval job scores one extraction row, replays nothing and leaves the contract suite: what the
chain checks is the jobs' order, files and merge, which every row, replay and case would only
lengthen."""


def submit(cluster: Cluster, tmp: Path, *overrides: str) -> subprocess.CompletedProcess:
    argv = [
        sys.executable,
        "-m",
        "memops",
        "submit",
        "profile=cpu",
        f"folds=[{FOLD}]",
        f"datasets_dir={tmp / 'datasets'}",
        f"adapters_dir={tmp / 'adapters'}",
        f"runs_dir={tmp / 'loo'}",
        f"logs_dir={tmp / 'logs'}",
        *QUICK,
        *overrides,
    ]
    return subprocess.run(argv, cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=300)


def submitted(tmp: Path) -> dict[str, dict[str, str]]:
    """The jobs of the latest submission, as submit.py recorded them."""
    lines = (tmp / "loo" / "tiny-hf" / "submissions.jsonl").read_text().splitlines()
    return json.loads(lines[-1])["jobs"]


def expected(jobs: dict[str, dict[str, str]]) -> list[tuple[str, int]]:
    return [(j["id"], t) for j in jobs.values() for t in array_tasks(j["array"])]


def of(tasks: dict[tuple[str, int], Task], job: dict[str, str]) -> list[Task]:
    return [tasks[job["id"], t] for t in array_tasks(job["array"])]


@pytest.fixture(scope="module")
def pipeline(slurm: Cluster, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("pipeline")
    began = time.monotonic()
    done = submit(slurm, tmp, f"model.path={tiny_model}", *LEAN_EVAL)
    assert done.returncode == 0, done.stderr
    jobs = submitted(tmp)
    tasks = slurm.wait(expected(jobs), timeout_s=900)
    print(f"one-fold chain on Slurm: {time.monotonic() - began:.0f} s from submission to report")
    return tmp, jobs, tasks, done.stdout


def test_one_fold_pipeline_runs_in_dependency_order(pipeline) -> None:
    tmp, jobs, tasks, stdout = pipeline
    assert set(jobs) == {"prepare", "train", f"eval/{FOLD}", "report"}
    assert jobs["train"]["array"] == f"0-{len(OPS) - 1}"
    failed = {k: (t.state, t.reason) for k, t in tasks.items() if t.state != "COMPLETED"}
    logs = "\n".join(p.read_text()[-2000:] for p in (tmp / "logs").glob("*.out"))
    assert not failed, f"{failed}\n{logs}"

    [prepare] = of(tasks, jobs["prepare"])
    train = of(tasks, jobs["train"])
    [evaluate] = of(tasks, jobs[f"eval/{FOLD}"])
    [report] = of(tasks, jobs["report"])
    assert all(t.start >= prepare.end for t in train)
    assert evaluate.start >= max(t.end for t in train), "eval started before training ended"
    assert report.start >= evaluate.end
    train_id = jobs["train"]["id"]
    assert f"after {train_id}_0, {train_id}_1, {train_id}_2" in stdout  # the printed graph

    for op in OPS:
        adapter = tmp / "adapters" / "tiny" / FOLD / op
        assert (adapter / "adapter_model.safetensors").exists() and (adapter / "manifest.json").exists()
        # One core per task (profile cpu): two tasks share the node without oversubscribing it.
        assert json.loads((adapter / "manifest.json").read_text())["threads"] == 1
    run = tmp / "loo" / "tiny-hf"
    part = read_records(run / "folds" / FOLD / "records.jsonl")
    assert part and {r["fold"] for r in part} == {FOLD}
    assert read_records(run / "records.jsonl") == part
    summary = json.loads((run / "summary.json").read_text())
    assert set(summary["folds"]) == {FOLD}
    assert (run / "report.md").read_text().startswith("# Leave-one-out report: tiny-hf")
    assert (run / "figures" / "folds.png").exists()
    names = {p.name for p in (tmp / "logs").glob("*.out")}
    assert {f"tiny-hf-train-{jobs['train']['id']}_{t}.out" for t in range(3)} <= names


def test_resubmitting_a_finished_run_trains_nothing_and_redoes_no_sample(
    slurm: Cluster, pipeline, tiny_model: Path
) -> None:
    tmp, _, _, _ = pipeline
    records = (tmp / "loo" / "tiny-hf" / "folds" / FOLD / "records.jsonl").read_bytes()
    adapter = (tmp / "adapters" / "tiny" / FOLD / "update" / "adapter_model.safetensors").stat().st_mtime_ns
    done = submit(slurm, tmp, f"model.path={tiny_model}", *LEAN_EVAL)
    assert done.returncode == 0, done.stderr
    jobs = submitted(tmp)
    assert set(jobs) == {f"eval/{FOLD}", "report"}
    tasks = slurm.wait(expected(jobs), timeout_s=600)
    assert {t.state for t in tasks.values() if t.job in {j["id"] for j in jobs.values()}} == {"COMPLETED"}
    assert (tmp / "loo" / "tiny-hf" / "folds" / FOLD / "records.jsonl").read_bytes() == records
    assert (
        tmp / "adapters" / "tiny" / FOLD / "update" / "adapter_model.safetensors"
    ).stat().st_mtime_ns == adapter


def test_a_failing_train_task_cancels_eval_and_report(slurm: Cluster, tmp_path: Path) -> None:
    """No datasets and no prepare job: every training task exits 2 on its missing dataset."""
    done = submit(slurm, tmp_path, "prepare=false")
    assert done.returncode == 0, done.stderr
    assert "warning: prepare=false, yet missing: datasets" in done.stderr
    jobs = submitted(tmp_path)
    assert set(jobs) == {"train", f"eval/{FOLD}", "report"}
    tasks = slurm.wait(expected(jobs), timeout_s=600)
    assert {t.state for t in of(tasks, jobs["train"])} == {"FAILED"}
    for key in (f"eval/{FOLD}", "report"):
        [task] = of(tasks, jobs[key])
        assert (task.state, task.reason) == ("CANCELLED", "DependencyNeverSatisfied"), key
    log = (tmp_path / "logs" / f"tiny-hf-train-{jobs['train']['id']}_0.out").read_text()
    assert "no dataset at" in log and "memops build-data" in log


def test_a_rejected_submission_cancels_the_jobs_already_submitted(slurm: Cluster, tmp_path: Path) -> None:
    """The eval job asks for more memory than the node has, so sbatch refuses it."""
    done = submit(slurm, tmp_path, "resources.eval.mem=9000G")
    assert done.returncode == 1
    assert f"sbatch for the eval/{FOLD} job failed: exited with code 1" in done.stderr
    ids = re.search(r"cancelled the jobs already submitted: (\d+), (\d+)\n", done.stderr).groups()
    tasks = slurm.wait([(ids[0], 0), *((ids[1], t) for t in range(3))], timeout_s=120)
    assert {tasks[k].state for k in tasks if k[0] in ids} == {"CANCELLED"}
    assert not (tmp_path / "loo" / "tiny-hf" / "submissions.jsonl").exists()


def test_a_requeued_training_task_resumes_from_its_checkpoint(
    slurm: Cluster, pipeline, tmp_path: Path
) -> None:
    """The template straight through sbatch: preempt (requeue) a running task after its first
    checkpoint; the restarted task resumes there and finishes."""
    tmp, _, _, _ = pipeline
    adapters = tmp_path / "adapters"
    configs = tmp_path / "configs"
    task = [
        "op=update",
        f"fold={FOLD}",
        "model=tiny",
        f"datasets_dir={tmp / 'datasets'}",
        f"adapters_dir={adapters}",
        "resume=true",
        "prepare=false",
        "recipe=cpu",
        "max_steps=40",
        "save_steps=5",
        "max_eval_samples=8",
    ]
    write_config(configs / "train" / FOLD / "update.yaml", "train", compose_config("train", task), by=BY)
    argv = [
        "sbatch",
        "--parsable",
        "--array=2",
        f"--chdir={ROOT}",
        f"--output={tmp_path}/%x-%A_%a.out",
        "--gres=none",
        "--cpus-per-task=2",
        "--mem=4G",
        f"--export=ALL,MEMOPS_PYTHON={sys.executable}",
        str(TEMPLATES["train"]),
        str(configs),
        FOLD,
        ",".join(OPS),  # task 2: update
    ]
    job = slurm.run(*argv).strip()
    checkpoint = adapters / "tiny" / FOLD / "update" / "checkpoints" / "checkpoint-5"
    deadline = time.monotonic() + 300
    while not (checkpoint / "trainer_state.json").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert slurm.tasks()[job, 2].state == "RUNNING", "the task ended before it could be requeued"
    slurm.run("scontrol", "requeue", f"{job}_2")
    while slurm.tasks()[job, 2].state != "PENDING" and time.monotonic() < deadline:
        time.sleep(0.2)
    # A requeue waits 2 min by default. Not "now": slurmd refuses a launch credential that is not
    # newer, to the second, than its revocation of the killed run; on a fast node the relaunch lands
    # within that second and the task FAILs without running (seen on CI).
    slurm.run("scontrol", "update", f"JobId={job}_2", "StartTime=now+3")
    task = slurm.wait([(job, 2)], timeout_s=600)[job, 2]
    log = (tmp_path / f"memops-train-{job}_2.out").read_text()
    assert task.state == "COMPLETED", f"{task.state} ({task.reason})\n{log[-3000:]}"
    assert "restart 0" in log and "restart 1" in log  # --open-mode=append keeps both runs
    manifest = json.loads((adapters / "tiny" / FOLD / "update" / "manifest.json").read_text())
    assert int(manifest["resumed_from"].rsplit("-", 1)[1]) >= 5  # a checkpoint of the first run
    assert manifest["global_step"] == 40


def test_preflight_finds_slurm_on_the_running_cluster(slurm: Cluster, tmp_path: Path) -> None:
    proc = preflight("profile=cpu", f"adapters_dir={tmp_path}", env=slurm.env)
    assert status(proc.stdout, "Slurm") == "ok", proc.stdout
    assert status(proc.stdout, "GPU") == "note"  # the cpu profile asks for no GPU
