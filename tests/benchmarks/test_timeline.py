"""The benchmark's timeline: each step on the lane of its cores, when it started; the passes'
phases in order; a lane's idle stretch while the other runs; and a figure on disk."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from benchmarks.timeline import ALL_CORES, IDLE, PASS_STAGE, plot, spans

BOTH, LOW, HIGH = [0, 1], [0], [1]


def result(lanes: bool) -> dict:
    """model, datasets; compare, update and extract-stages; the two passes. ``lanes``: the
    adapters two at a time and the passes side by side, else each step on both cores in turn."""
    schedule = {"model": (BOTH, 0, 20), "datasets": (BOTH, 21, 25)}
    if lanes:
        schedule |= {
            "train update": (HIGH, 47, 300),  # in the order they ended, as bench_heldout writes them
            "train extract-stages": (HIGH, 348, 300),
            "train compare": (LOW, 47, 700),
            "hf": (LOW, 748, 1000),
            "vllm": (HIGH, 748, 900),
        }
    else:
        schedule |= {
            "train compare": (BOTH, 47, 500),
            "train update": (BOTH, 548, 200),
            "train extract-stages": (BOTH, 749, 200),
            "hf": (BOTH, 950, 800),
            "vllm": (BOTH, 1751, 700),
        }
    stages = {
        PASS_STAGE["hf"]: schedule["hf"][2],
        "  hf: backend start": 2.0,
        "  hf: calibration": 80.0,
        "  hf: operators": 600.0,
        "  hf: engine replays": 100.0,
        PASS_STAGE["vllm"]: schedule["vllm"][2],
        "  vllm: backend start": 40.0,
        "  vllm: operators": 500.0,
        "  vllm: engine replays": 150.0,
    }
    return {
        "schedule": {n: {"cores": c, "start": s, "seconds": t} for n, (c, s, t) in schedule.items()},
        "stages": stages,
        "wall_seconds": {"total": 1748.0},
        "cpu": "a test CPU",
    }


def test_steps_in_lanes_sit_on_their_cores_and_the_shorter_lane_idles() -> None:
    drawn = spans(result(lanes=True))
    assert [(s.label, s.start) for s in drawn if s.lane == ALL_CORES] == [("model", 0), ("datasets", 21)]
    assert list(dict.fromkeys(s.lane for s in drawn)) == [ALL_CORES, "core 0", "core 1"]
    low = [s for s in drawn if s.lane == "core 0"]
    high = [s for s in drawn if s.lane == "core 1"]
    assert [s.label for s in low] == [
        "train compare",
        "hf pass",
        "backend start",
        "calibration",
        "operators",
        "engine replays",
    ]
    assert [s.label for s in high if s.label.startswith("train")] == ["train update", "train extract-stages"]
    hf = [s for s in low if s.within == "hf"]
    assert hf[0].start == 748
    for before, after in pairwise(hf):  # phases follow one another
        assert after.start == before.end
    assert hf[-1].end == 748 + 782  # 218 s of the pass outside its phases stay unlabelled
    # update then extract-stages end at 648 against compare's 747; vLLM ends 100 s before hf.
    assert [(s.start, s.seconds) for s in high if s.label == IDLE] == [(648, 99), (1648, 100)]
    assert not [s for s in low if s.label == IDLE]


def test_steps_apart_follow_one_another_on_all_cores() -> None:
    drawn = spans(result(lanes=False))
    assert {s.lane for s in drawn} == {ALL_CORES}
    passes = [s for s in drawn if s.label.endswith(" pass")]
    assert [(s.label, s.start) for s in passes] == [("hf pass", 950), ("vllm pass", 1751)]
    assert [s.within for s in drawn if s.label == "operators"] == ["hf", "vllm"]
    assert not [s for s in drawn if s.label == IDLE]


def test_plot_writes_a_png(tmp_path: Path) -> None:
    path = plot(result(lanes=True), tmp_path / "figures" / "timeline.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
