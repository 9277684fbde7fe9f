"""Children in lanes of cores (core/lanes.py), as the held-out benchmark and a LOO run's CPU
training use them: each on its lane's cores, the next job on the first lane free, a job that
needs another after it, and a failure stops the rest."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from memops.core.lanes import LaneFailed, halves, in_lanes

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
    cores = halves(os.sched_getaffinity(0))
    a, c = tmp_path / "a", tmp_path / "c"
    children = {
        "hf": ([sys.executable, "-c", MEET, str(a), str(c)], tmp_path / "hf.log"),
        "vllm": ([sys.executable, "-c", MEET, str(c), str(a)], tmp_path / "vllm.log"),
    }
    ran = in_lanes(children, cores, clock=0.0)
    assert [ran[n]["cores"] for n in ("hf", "vllm")] == [sorted(cores[0]), sorted(cores[1])]
    assert a.read_text() == " ".join(map(str, sorted(cores[0])))
    assert c.read_text() == " ".join(map(str, sorted(cores[1])))
    assert not cores[0] & cores[1]
    assert os.sched_getaffinity(0) == cores[0] | cores[1]  # the parent's own cores back


def test_a_failure_stops_the_others_and_names_its_log(tmp_path: Path) -> None:
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
    with pytest.raises(LaneFailed, match=r"\[hf\] failed with exit code 3 after .* see .*hf\.log"):
        in_lanes(children, [own, own], clock=0.0)
    with pytest.raises(ProcessLookupError):  # stopped and reaped, not left running
        os.kill(int(pid.read_text()), 0)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to split")
def test_a_job_past_the_lanes_waits_for_the_first_lane_free(tmp_path: Path) -> None:
    cores = halves(os.sched_getaffinity(0))
    gate = tmp_path / "gate"
    # "long" ends only once "last" has run, so "last" must start on the lane "short" frees.
    children = {
        "long": ([sys.executable, "-c", MEET, str(tmp_path / "long"), str(gate)], tmp_path / "long.log"),
        "short": ([sys.executable, "-c", "pass"], tmp_path / "short.log"),
        "last": ([sys.executable, "-c", MEET, str(gate), str(tmp_path / "long")], tmp_path / "last.log"),
    }
    ran = in_lanes(children, cores, clock=0.0)
    assert [ran[n]["cores"] for n in ("long", "short", "last")] == [sorted(cores[0]), *[sorted(cores[1])] * 2]
    assert ran["last"]["start"] >= ran["short"]["start"] + ran["short"]["seconds"] - 0.1  # rounded to 0.1 s


def test_a_job_that_needs_another_is_passed_over_until_that_one_has_ended(tmp_path: Path) -> None:
    """How the vLLM pass waits for every training while the hf pass takes the lane before it."""
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
    ran = in_lanes(children, [own, own], clock=0.0, after={"server": ["training"]})
    assert ran["local"]["start"] < ran["server"]["start"]  # it took the lane the server could not
    assert ran["server"]["start"] >= ran["training"]["start"] + ran["training"]["seconds"] - 0.1
    with pytest.raises(ValueError, match="wait on each other"):
        in_lanes(
            children,
            [own, own],
            clock=0.0,
            after={"server": ["local"], "local": ["server"], "training": ["server"]},
        )
    with pytest.raises(ValueError, match="not given"):
        in_lanes(children, [own], clock=0.0, after={"server": ["trainings"]})
