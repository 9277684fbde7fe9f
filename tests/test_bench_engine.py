"""``make bench`` must not depend on the day it runs: its stream once dated claims past the
machine's clock, which the engine rightly refuses (probe 15)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from datetime import UTC, datetime, timedelta

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("bench_engine", ROOT / "benchmarks" / "bench_engine.py")
assert spec and spec.loader
bench_engine = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_engine)


def test_the_largest_stream_ends_in_the_past_of_any_clock() -> None:
    last = bench_engine.START + timedelta(minutes=max(bench_engine.SIZES) + 30)
    assert last < datetime(2005, 1, 1, tzinfo=UTC)


def test_the_bench_runs_and_prints_its_figures() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_engine.py"), "--sizes", "2000"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    row = done.stdout.splitlines()[-1].split()
    assert row[0] == "2000" and sum(map(int, row[-1].split("/"))) == 2000
