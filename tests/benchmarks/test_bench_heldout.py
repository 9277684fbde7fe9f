"""benchmarks/bench_heldout.py: the span of its steps and a training's share of the cores' peak
(its lanes: tests/test_lanes.py)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from tests.conftest import ROOT


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script as a module, its helpers (timeline.py, throughput.py) found beside it as when it runs."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_heldout", ROOT / "benchmarks" / "bench_heldout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_span_of_jobs_in_lanes_runs_from_the_first_start_to_the_last_end(bench: ModuleType) -> None:
    ran = {"a": {"start": 10.0, "seconds": 5.0}, "b": {"start": 12.0, "seconds": 10.0}}
    assert bench.span(ran) == 12.0


def test_an_adapter_is_held_to_the_cores_its_manifest_records(bench: ModuleType) -> None:
    """A training on one core of two (in a lane, or linked from a run that had it in one) is
    measured against half the machine's peak, not all of it."""
    b = bench
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
