"""The held-out benchmark as a timeline: which cores ran each step, when, and for how long.

``scripts/bench_heldout.py`` keeps each step's wall seconds (``wall_seconds``, in the order the
steps ran) and each pass's phases (``stages``) in ``<root>/heldout.json``. Laid out on lanes,
they show at a glance what a table of seconds hides: the steps that run alone, the two passes
side by side, and the core that idles once the shorter pass ends. Starts are the sums of the
walls before them (the parent's own few seconds between steps are left out), and a pass's
phases follow one another from its start; what a pass spent outside its phases (the process
start, the report) is the end of its bar, unlabelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.loo import PHASES

SIDE_BY_SIDE = "hf and vllm passes, side by side"
"""The wall of the two passes run at once, each on half the cores."""
PASS_STAGE = {"hf": "hf pass: scoring and replays", "vllm": "vllm pass (server start included)"}
"""Each pass's row in ``stages``, in the order the passes run when apart."""
PASSES = tuple(PASS_STAGE)
ALL_CORES = "all cores"
IDLE = "idle"


def phase_row(backend: str, phase: str) -> str:
    """A pass's phase as its row in ``stages``, indented under the pass."""
    return f"  {backend}: {phase}"


@dataclass(frozen=True)
class Span:
    lane: str
    label: str
    start: float
    seconds: float
    within: str = ""
    """The pass a phase belongs to ("" for a step of its own)."""

    @property
    def end(self) -> float:
        return self.start + self.seconds


def spans(result: dict[str, Any]) -> list[Span]:
    """A benchmark's steps, each pass's phases and the idle end of the shorter pass, as spans on
    lanes: ``all cores`` for the steps that ran alone, one lane per pass when they ran side by
    side."""
    walls, stages = result["wall_seconds"], result["stages"]
    out, now = [], 0.0
    for name, seconds in walls.items():
        if name in ("total", SIDE_BY_SIDE, *PASSES):
            continue
        out.append(Span(ALL_CORES, name, now, seconds))
        now += seconds
    side = SIDE_BY_SIDE in walls
    for backend in PASSES:
        lane = f"{backend} pass" if side else ALL_CORES
        took = stages[PASS_STAGE[backend]]
        out.append(Span(lane, f"{backend} pass", now, took))
        at = now
        for phase in PHASES:
            if (seconds := stages.get(phase_row(backend, phase))) is not None:
                out.append(Span(lane, phase, at, seconds, backend))
                at += seconds
        if not side:
            now += took
        elif took < walls[SIDE_BY_SIDE]:
            out.append(Span(lane, IDLE, now + took, walls[SIDE_BY_SIDE] - took))
    return out


def plot(result: dict[str, Any], path: Path) -> Path:
    """Draw ``spans(result)`` as one row per lane, minutes on the x axis, to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = spans(result)
    lanes = list(dict.fromkeys(s.lane for s in drawn))
    colours = plt.get_cmap("tab10")
    labels = list(dict.fromkeys(s.label for s in drawn if s.label != IDLE and not s.label.endswith(" pass")))
    handles = {}
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.9 * len(lanes)))
    for row, lane in enumerate(lanes):
        y = len(lanes) - 1 - row
        for s in (s for s in drawn if s.lane == lane):
            start, width = s.start / 60, s.seconds / 60
            if s.label.endswith(" pass"):  # the pass's whole wall, under its phases
                ax.barh(y, width, left=start, height=0.7, color="0.85")
                continue
            if s.label == IDLE:
                bar = ax.barh(y, width, left=start, height=0.7, color="white", edgecolor="0.5", hatch="//")
            else:
                colour = colours(labels.index(s.label) % 10)
                bar = ax.barh(y, width, left=start, height=0.7, color=colour, edgecolor="white")
            handles.setdefault(s.label, bar)
            if width > 1.5:  # the legend names the narrow ones
                name = f"{s.within} {s.label}" if s.within and lane == ALL_CORES else s.label
                text = f"{name}\n{width:.1f} min" if width > 8 else f"{width:.1f}"
                ax.text(start + width / 2, y, text, ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(lanes)), list(reversed(lanes)))
    ax.set_xlabel("minutes")
    total = result["wall_seconds"]["total"] / 60
    ax.set_title(f"held-out benchmark: {total:.1f} min in all, {result['cpu']}", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(handles.values(), handles.keys(), loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
