"""The held-out benchmark as a timeline: which cores ran each step, when, and for how long.

``benchmarks/bench_heldout.py`` keeps each step's cores, start and wall seconds (``schedule``) and
each pass's phases (``stages``) in ``<root>/heldout.json``. Laid out on lanes, one per set of
cores a step ran on, they show at a glance what a table of seconds hides: the steps that run
alone, the adapters trained two at a time, the passes beside them or beside each other, and a
lane that idles while the other finishes. A pass's phases follow one another from its start in
the order ``PHASES`` lists them, which is the order they ran but for an hf pass that waited for
an adapter: it did so between its operators, after those the loaded adapters served. What a
pass spent outside its phases (the process start, the report) is the end of its bar, unlabelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memops.eval.loo import PHASES

IN_LANES = "adapters, trained two at a time"
"""The wall of the adapters' training on two lanes, each on half the cores."""
SIDE_BY_SIDE = "hf and vllm passes, side by side"
"""The wall of the two passes run at once, each on half the cores."""
OVERLAPPED = "adapters and passes, in lanes"
"""The wall of the trainings and the passes on two lanes, each pass starting on the first lane
free (the hf pass beside the last training)."""
PASS_STAGE = {"hf": "hf pass: scoring and replays", "vllm": "vllm pass (server start included)"}
"""Each pass's row in ``stages``, in the order the passes run when apart."""
PASSES = tuple(PASS_STAGE)
ALL_CORES = "all cores"
IDLE = "idle"
SLACK_S = 10.0
"""A lane's gaps shorter than this are the parent's polling and a child's start, not idling."""


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


def lane_name(cores: list[int], every: set[int]) -> str:
    """A lane's name: ``all cores``, or the cores it had (``core 1``, ``cores 8-15``)."""
    if set(cores) == every:
        return ALL_CORES
    if len(cores) == 1:
        return f"core {cores[0]}"
    if cores == list(range(cores[0], cores[-1] + 1)):
        return f"cores {cores[0]}-{cores[-1]}"
    return "cores " + ",".join(map(str, cores))


def spans(result: dict[str, Any]) -> list[Span]:
    """A benchmark's steps and each pass's phases, each on the lane of its cores, in the order
    they started (the lowest cores first), and the idle stretches of a lane while another lane
    still runs."""
    schedule, stages = result["schedule"], result["stages"]
    every = set().union(*(step["cores"] for step in schedule.values()))
    out = []
    for name, step in sorted(schedule.items(), key=lambda item: (item[1]["start"], item[1]["cores"])):
        where = lane_name(step["cores"], every)
        out.append(Span(where, f"{name} pass" if name in PASSES else name, step["start"], step["seconds"]))
        if name in PASSES:
            at = step["start"]
            for phase in PHASES:
                if (seconds := stages.get(phase_row(name, phase))) is not None:
                    out.append(Span(where, phase, at, seconds, name))
                    at += seconds
    return out + idle([s for s in out if s.lane != ALL_CORES and not s.within])


def idle(steps: list[Span]) -> list[Span]:
    """Where a lane ran nothing while some lane ran: within each stretch of overlapping steps on
    split lanes, the gaps of each of those lanes."""
    stretches: list[list[Span]] = []
    for step in sorted(steps, key=lambda s: s.start):
        if stretches and step.start < max(s.end for s in stretches[-1]):
            stretches[-1].append(step)
        else:
            stretches.append([step])
    gaps = []
    for stretch in stretches:
        begin, end = min(s.start for s in stretch), max(s.end for s in stretch)
        for name in dict.fromkeys(s.lane for s in stretch):
            at = begin
            for s in sorted((s for s in stretch if s.lane == name), key=lambda s: s.start):
                if s.start - at >= SLACK_S:
                    gaps.append(Span(name, IDLE, at, s.start - at))
                at = max(at, s.end)
            if end - at >= SLACK_S:
                gaps.append(Span(name, IDLE, at, end - at))
    return gaps


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
                name = f"{s.within} {s.label}" if s.within else s.label
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
