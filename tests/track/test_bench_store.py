"""benchmarks/bench_store.py runs on a small store, an SQLite file or a PostgreSQL server, and reports
every call it times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_store_bench_runs_and_writes_its_figures(
    database: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    argv = [sys.executable, str(ROOT / "benchmarks" / "bench_store.py"), "--claims", "500", "--repeat", "5"]
    if database == "postgresql":
        argv += ["--store", request.getfixturevalue("postgres").url()]
    done = subprocess.run([*argv, "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads((tmp_path / "store.json").read_text())
    assert figures["store"] == database
    assert figures["claims"] == 500 and figures["keys"] > 0 and figures["fill_notes_per_s"] > 0
    assert {"add_note, 1 claim", "get", "snapshot(at)", "find", "contested"} <= set(figures["latency"])
    assert all(0 < f["p50_ms"] <= f["p95_ms"] for f in figures["latency"].values())
    assert "p95 ms" in done.stdout
