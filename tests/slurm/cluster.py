"""A real single-node Slurm cluster for the tests: started by the project's own
slurm/local/start-slurm.sh, queried with scontrol, stopped by the PIDs in its pid files."""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tests.conftest import PACKAGE

START = PACKAGE / "slurm" / "local" / "start-slurm.sh"
STOP = PACKAGE / "slurm" / "local" / "stop-slurm.sh"
BINARIES = ("slurmctld", "slurmd", "sbatch", "munged")
TERMINAL = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
}
_FIELD = re.compile(r"(\w+)=(\S*)")


@dataclass
class Task:
    """One array task as scontrol last showed it."""

    job: str
    task: int
    state: str
    reason: str
    start: datetime | None
    end: datetime | None


def _time(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value)
    except ValueError:  # "Unknown", "None"
        return None


@dataclass
class Cluster:
    lab: Path
    env: dict[str, str]

    @classmethod
    def start(cls, lab: Path) -> Cluster:
        env = {**os.environ, "SLURM_LAB": str(lab)}
        done = subprocess.run(["bash", str(START)], env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            subprocess.run(["bash", str(STOP)], env=env, capture_output=True, timeout=120)  # what did start
            raise RuntimeError(f"start-slurm.sh failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        conf = (lab / "slurm.env").read_text().strip().removeprefix("export SLURM_CONF=")
        return cls(lab, {**env, "SLURM_CONF": conf})

    def pids(self) -> dict[str, int]:
        files = {
            "munged": self.lab / "munge" / "munged.pid",
            "slurmctld": self.lab / "state" / "slurmctld.pid",
            "slurmd": self.lab / "spool" / "slurmd-localhost.pid",
        }
        return {name: int(f.read_text()) for name, f in files.items() if f.exists()}

    def stop(self) -> None:
        """stop-slurm.sh signals only the PIDs in the pid files; check that they are gone."""
        pids = self.pids()
        subprocess.run(["scancel", "--user=root"], env=self.env, capture_output=True, timeout=60)
        done = subprocess.run(["bash", str(STOP)], env=self.env, capture_output=True, text=True, timeout=120)
        alive = [f"{name} {pid}" for name, pid in pids.items() if _alive(pid)]
        if done.returncode != 0 or alive:
            raise RuntimeError(f"daemons still running: {alive}\n{done.stdout}{done.stderr}")

    def run(self, *argv: str) -> str:
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=60, check=True
        ).stdout

    def tasks(self) -> dict[tuple[str, int], Task]:
        """Every array task the controller still knows (finished jobs stay for MinJobAge=300 s)."""
        out = {}
        for line in self.run("scontrol", "-o", "show", "job").splitlines():
            f = dict(_FIELD.findall(line))
            if "ArrayJobId" not in f:
                continue
            # A pending (or cancelled while pending) array is one line for all its tasks.
            for task in array_tasks(f["ArrayTaskId"].split("%")[0]):
                start, end = _time(f["StartTime"]), _time(f["EndTime"])
                out[f["ArrayJobId"], task] = Task(
                    f["ArrayJobId"], task, f["JobState"], f["Reason"], start, end
                )
        return out

    def wait(self, expected: list[tuple[str, int]], timeout_s: float) -> dict[tuple[str, int], Task]:
        """Poll until every expected task has ended; keep the last view of each."""
        seen: dict[tuple[str, int], Task] = {}
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            seen.update(self.tasks())
            if all(k in seen and seen[k].state in TERMINAL for k in expected):
                return seen
            time.sleep(2)
        self.run("scancel", *sorted({job for job, _ in expected}))
        raise TimeoutError(f"jobs not done after {timeout_s:.0f} s: {seen}")


def _alive(pid: int) -> bool:
    """A zombie still answers kill -0; read its state instead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def array_tasks(spec: str) -> list[int]:
    """``0-2`` or ``0,2,5`` as sbatch takes them."""
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out
