"""Child processes on lanes of cores: two small CPU jobs side by side, one core each, do more
work a second than one after the other on both (a 135M model's matmuls barely use a second
thread; docs/log/speed.md). A child's torch threads follow the affinity it inherits
(``determinism.cpu_threads``)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

POLL_S = 1.0
"""How often the running children are looked at."""


class LaneFailed(RuntimeError):
    """A child exited with an error; its message names the child, its exit code and its log."""


def halves(cores: set[int]) -> list[set[int]]:
    """The cores in two halves, lowest first: two lanes."""
    ordered = sorted(cores)
    return [set(ordered[: len(ordered) // 2]), set(ordered[len(ordered) // 2 :])]


def in_lanes(
    jobs: dict[str, tuple[list[str], Path]],
    lanes: list[set[int]],
    clock: float,
    after: Mapping[str, Collection[str]] | None = None,
    cwd: Path | None = None,
    watch: Callable[[], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, dict]:
    """Run jobs on lanes of cores: each lane takes the next job in order once its last one has
    ended, so the first ``len(lanes)`` start at once. A job named in ``after`` is passed over
    until the jobs it names have ended. Each writes to its log; ``watch`` is called at every
    look (a progress bar reading the logs), and ``say`` writes where each starts and how long it
    took (a progress bar's own ``write`` keeps the bar whole). Returns each job's ``cores``,
    ``start`` (seconds since ``clock``) and wall ``seconds``. A failure stops the others
    (``LaneFailed``): what they finished is kept, and a rerun resumes it."""
    own, after = os.sched_getaffinity(0), after or {}
    say = say or (lambda line: print(line, flush=True))
    unknown = {name: set(need) - set(jobs) for name, need in after.items() if set(need) - set(jobs)}
    if unknown:
        raise ValueError(f"after: jobs that are not given: {unknown}")
    queue, free = list(jobs.items()), list(range(len(lanes)))
    running: dict[str, tuple[subprocess.Popen, int, float]] = {}
    ran = {}
    try:
        while queue or running:
            while free and (job := next((j for j in queue if set(after.get(j[0], ())) <= set(ran)), None)):
                queue.remove(job)
                lane, (name, (argv, log)) = free.pop(0), job
                say(f"[{name}] on cores {sorted(lanes[lane])}, log: {log}")
                # The child inherits it; no preexec_fn in a threaded parent.
                os.sched_setaffinity(0, lanes[lane])
                try:
                    log.parent.mkdir(parents=True, exist_ok=True)
                    with log.open("w") as out:
                        child = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
                finally:
                    os.sched_setaffinity(0, own)
                running[name] = (child, lane, time.perf_counter())
            if queue and not running:
                raise ValueError(f"after: {', '.join(name for name, _ in queue)} wait on each other")
            time.sleep(POLL_S)
            if watch:
                watch()
            for name, (child, lane, began) in list(running.items()):
                if (code := child.poll()) is None:
                    continue
                del running[name]
                seconds = time.perf_counter() - began
                if code != 0:
                    said = f"[{name}] failed with exit code {code} after {seconds:.0f} s; see {jobs[name][1]}"
                    raise LaneFailed(said)
                say(f"[{name}] {seconds:.0f} s")
                start = round(began - clock, 1)
                ran[name] = {"cores": sorted(lanes[lane]), "start": start, "seconds": round(seconds, 1)}
                free = sorted([*free, lane])
    finally:  # a failure, or an interrupt of the parent: no child is left running
        for child, *_ in running.values():
            child.terminate()
            child.wait()
    return ran
