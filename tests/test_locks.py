"""One writer per output folder: a live owner blocks at once and is named; a dead one does not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memops.core.locks import Busy, exclusive
from tests.conftest import ROOT

TAKE = (
    "import sys; from memops.core.locks import exclusive\n"
    "with exclusive(sys.argv[1], 'dataset build'): print('taken')"
)


def take_in_another_process(lock: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", TAKE, str(lock)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_a_second_process_is_told_who_holds_the_folder(tmp_path: Path) -> None:
    lock = tmp_path / ".datasets.lock"
    with exclusive(lock, "dataset build"):
        proc = take_in_another_process(lock)
    assert proc.returncode != 0
    assert f"another dataset build is running in {tmp_path} (pid {os.getpid()})" in proc.stderr
    assert take_in_another_process(lock).stdout.strip() == "taken"  # released on exit


def test_a_lock_left_by_a_killed_process_is_taken_over(tmp_path: Path) -> None:
    lock = tmp_path / ".run.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            TAKE.replace("print('taken')", "print('taken', flush=True); input()"),
            str(lock),
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "taken"
    with pytest.raises(Busy, match=f"pid {holder.pid}"), exclusive(lock, "dataset build"):
        pass
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert lock.read_text().strip() == str(holder.pid)  # the dead owner's pid is still written there
    with exclusive(lock, "dataset build"):
        assert lock.read_text().strip() == str(os.getpid())


def test_build_data_refuses_a_folder_another_build_holds(tmp_path: Path, export_dir: Path) -> None:
    out = tmp_path / "datasets"
    with exclusive(tmp_path / ".datasets.lock", "dataset build"):
        proc = subprocess.run(
            [sys.executable, "-m", "memops", "build-data", f"datasets_dir={out}", f"exports=[{export_dir}]"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 1 and "another dataset build is running" in proc.stderr
    assert not out.exists()


def test_a_process_that_needs_what_is_being_built_waits_for_it(tmp_path: Path) -> None:
    """``wait=True`` (a model build): the second process blocks until the owner lets go, then
    takes the lock, where without it it would be refused at once."""
    lock = tmp_path / ".tiny.lock"
    script = (
        "import sys; from memops.core.locks import exclusive\n"
        "print('trying', flush=True)\n"
        "with exclusive(sys.argv[1], 'build of this model', wait=True): print('taken', flush=True)"
    )
    with exclusive(lock, "build of this model"):
        waiter = subprocess.Popen(
            [sys.executable, "-c", script, str(lock)], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        assert waiter.stdout is not None and waiter.stdout.readline().strip() == "trying"
        with pytest.raises(subprocess.TimeoutExpired):
            waiter.wait(timeout=2)  # refused, it would have exited at once
    assert waiter.stdout.readline().strip() == "taken"
    assert waiter.wait(timeout=60) == 0 and lock.read_text().strip() == str(waiter.pid)
