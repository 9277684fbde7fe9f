"""The benchmark's timeline: steps in the order they ran, the passes on lanes of their own when
side by side, the shorter pass's idle end, and a figure on disk."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from eval.timeline import ALL_CORES, IDLE, PASS_STAGE, SIDE_BY_SIDE, plot, spans


def result(side_by_side: bool) -> dict:
    walls = {"model": 20.0, "datasets": 25.0, "train compare": 700.0}
    stages = {
        PASS_STAGE["hf"]: 1000.0,
        "  hf: backend start": 2.0,
        "  hf: calibration": 80.0,
        "  hf: operators": 600.0,
        "  hf: engine replays": 300.0,
        PASS_STAGE["vllm"]: 900.0,
        "  vllm: backend start": 40.0,
        "  vllm: operators": 500.0,
        "  vllm: engine replays": 350.0,
    }
    walls |= {SIDE_BY_SIDE: 1000.0} if side_by_side else {"hf": 1000.0, "vllm": 900.0}
    walls["total"] = sum(walls.values())
    return {"wall_seconds": walls, "stages": stages, "cpu": "a test CPU"}


def test_side_by_side_passes_start_together_and_the_shorter_idles() -> None:
    drawn = spans(result(side_by_side=True))
    steps = [s for s in drawn if s.lane == ALL_CORES]
    assert [(s.label, s.start) for s in steps] == [("model", 0), ("datasets", 20), ("train compare", 45)]
    hf = [s for s in drawn if s.lane == "hf pass"]
    vllm = [s for s in drawn if s.lane == "vllm pass"]
    assert hf[0].start == vllm[0].start == 745
    assert [s.label for s in hf] == ["hf pass", "backend start", "calibration", "operators", "engine replays"]
    for before, after in pairwise(hf[1:]):  # phases follow one another
        assert after.start == before.end
    assert hf[-1].end == 745 + 982  # 18 s of the pass outside its phases stay unlabelled
    assert [(s.label, s.start, s.seconds) for s in vllm if s.label == IDLE] == [(IDLE, 745 + 900, 100)]
    assert not [s for s in hf if s.label == IDLE]


def test_passes_apart_run_one_after_the_other_on_all_cores() -> None:
    drawn = spans(result(side_by_side=False))
    assert {s.lane for s in drawn} == {ALL_CORES}
    passes = [s for s in drawn if s.label.endswith(" pass")]
    assert [(s.label, s.start) for s in passes] == [("hf pass", 745), ("vllm pass", 1745)]
    assert [s.within for s in drawn if s.label == "operators"] == ["hf", "vllm"]
    assert not [s for s in drawn if s.label == IDLE]


def test_plot_writes_a_png(tmp_path: Path) -> None:
    path = plot(result(side_by_side=True), tmp_path / "figures" / "timeline.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
