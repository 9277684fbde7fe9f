"""benchmarks/bench_heldout.py's children in lanes: each on its lane's cores, the next job on the first
lane free, and a failure stops the rest; and a training's share of the cores' peak."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def bench():
    spec = importlib.util.spec_from_file_location("bench_heldout", ROOT / "benchmarks" / "bench_heldout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Writes its cores, then waits for the other child's file: it ends (with the code given, else 0)
# only if both run at once.
MEET = """
import os, sys, time
from pathlib import Path
me, other = Path(sys.argv[1]), Path(sys.argv[2])
me.write_text(" ".join(map(str, sorted(os.sched_getaffinity(0)))))
for _ in range(600):
    if other.exists():
        sys.exit(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    time.sleep(0.05)
sys.exit(1)
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to split")
def test_children_run_at_once_each_on_its_half(tmp_path: Path) -> None:
    b = bench()
    cores = b.halves(os.sched_getaffinity(0))
    a, c = tmp_path / "a", tmp_path / "c"
    children = {
        "hf": ([sys.executable, "-c", MEET, str(a), str(c)], tmp_path / "hf.log"),
        "vllm": ([sys.executable, "-c", MEET, str(c), str(a)], tmp_path / "vllm.log"),
    }
    ran = b.in_lanes(children, cores, clock=0.0)
    assert [ran[n]["cores"] for n in ("hf", "vllm")] == [sorted(cores[0]), sorted(cores[1])]
    assert a.read_text() == " ".join(map(str, sorted(cores[0])))
    assert c.read_text() == " ".join(map(str, sorted(cores[1])))
    assert not cores[0] & cores[1]
    assert os.sched_getaffinity(0) == cores[0] | cores[1]  # the parent's own cores back


def test_a_failure_stops_the_others_and_names_its_log(tmp_path: Path) -> None:
    b = bench()
    pid = tmp_path / "pid"
    slow = (
        f"import os, pathlib, time; pathlib.Path({str(pid)!r}).write_text(str(os.getpid())); time.sleep(600)"
    )
    children = {
        "vllm": ([sys.executable, "-c", slow], tmp_path / "vllm.log"),
        # Fails once the other child runs, so the stop has a live process to stop.
        "hf": ([sys.executable, "-c", MEET, str(tmp_path / "hf"), str(pid), "3"], tmp_path / "hf.log"),
    }
    own = os.sched_getaffinity(0)
    with pytest.raises(SystemExit, match=r"\[hf\] failed with exit code 3 after .* see .*hf\.log"):
        b.in_lanes(children, [own, own], clock=0.0)
    with pytest.raises(ProcessLookupError):  # stopped and reaped, not left running
        os.kill(int(pid.read_text()), 0)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to split")
def test_a_job_past_the_lanes_waits_for_the_first_lane_free(tmp_path: Path) -> None:
    b = bench()
    cores = b.halves(os.sched_getaffinity(0))
    gate = tmp_path / "gate"
    # "long" ends only once "last" has run, so "last" must start on the lane "short" frees.
    children = {
        "long": ([sys.executable, "-c", MEET, str(tmp_path / "long"), str(gate)], tmp_path / "long.log"),
        "short": ([sys.executable, "-c", "pass"], tmp_path / "short.log"),
        "last": ([sys.executable, "-c", MEET, str(gate), str(tmp_path / "long")], tmp_path / "last.log"),
    }
    ran = b.in_lanes(children, cores, clock=0.0)
    assert [ran[n]["cores"] for n in ("long", "short", "last")] == [sorted(cores[0]), *[sorted(cores[1])] * 2]
    assert ran["last"]["start"] >= ran["short"]["start"] + ran["short"]["seconds"] - 0.1  # rounded to 0.1 s


def test_the_span_of_jobs_in_lanes_runs_from_the_first_start_to_the_last_end() -> None:
    ran = {"a": {"start": 10.0, "seconds": 5.0}, "b": {"start": 12.0, "seconds": 10.0}}
    assert bench().span(ran) == 12.0


def test_a_job_that_needs_another_is_passed_over_until_that_one_has_ended(tmp_path: Path) -> None:
    """How the vLLM pass waits for every training while the hf pass takes the lane before it."""
    b = bench()
    own, done = os.sched_getaffinity(0), tmp_path / "done"
    children = {
        "training": (
            [
                sys.executable,
                "-c",
                f"import pathlib, time; time.sleep(2); pathlib.Path({str(done)!r}).touch()",
            ],
            tmp_path / "t.log",
        ),
        "server": (
            [
                sys.executable,
                "-c",
                f"import pathlib, sys; sys.exit(0 if pathlib.Path({str(done)!r}).exists() else 5)",
            ],
            tmp_path / "s.log",
        ),
        "local": ([sys.executable, "-c", "pass"], tmp_path / "l.log"),
    }
    ran = b.in_lanes(children, [own, own], clock=0.0, after={"server": ["training"]})
    assert ran["local"]["start"] < ran["server"]["start"]  # it took the lane the server could not
    assert ran["server"]["start"] >= ran["training"]["start"] + ran["training"]["seconds"] - 0.1
    with pytest.raises(ValueError, match="wait on each other"):
        b.in_lanes(
            children,
            [own, own],
            clock=0.0,
            after={"server": ["local"], "local": ["server"], "training": ["server"]},
        )
    with pytest.raises(ValueError, match="not given"):
        b.in_lanes(children, [own], clock=0.0, after={"server": ["trainings"]})


def test_an_adapter_is_held_to_the_cores_its_manifest_records() -> None:
    """A training on one core of two (in a lane, or linked from a run that had it in one) is
    measured against half the machine's peak, not all of it."""
    b = bench()
    manifest = {
        "tokens_seen": 2000,
        "wall_seconds": 10.0,
        "global_step": 20,
        "eval_loss": 0.1,
        "device": {"precision": "bf16"},
    }
    peaks = {"bf16": 400.0, "float32": 100.0}  # GFLOP/s on both cores
    one, two = ({**manifest, "threads": n} for n in (1, 2))
    # 200 tokens/s at 1 GFLOP a token: 200 GFLOP/s
    assert b.training_figures(one, 1e9, peaks, cores=2)["share_of_peak"] == 1.0
    assert b.training_figures(two, 1e9, peaks, cores=2)["share_of_peak"] == 0.5
    assert b.training_figures(one, 1e9, peaks, cores=2)["cores"] == 1
