"""What the budgeted renderer keeps, per trajectory: python benchmarks/bench_render.py [--budget 1700]

For the gold replay of each trajectory: the transitions shown out of all, the characters of the
current-state section, and the share of queries answerable from the rendered document alone
(every required token in it, no forbidden token, one any-of token when given).
"""

from __future__ import annotations

import argparse

from memops.core.sources import ANNOTATIONS, EXPORTS, Sources
from memops.data.trajectory import load_trajectories
from memops.memory.renderer import CURRENT, TRANSITIONS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=1700)
    parser.add_argument("--annotations", nargs="+", default=ANNOTATIONS)
    parser.add_argument("--exports", nargs="+", default=EXPORTS)
    args = parser.parse_args()
    print("| trajectory | transitions shown | current-state chars | queries answerable | chars |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for episode in load_trajectories(Sources.of(args.annotations, args.exports)):
        mem = episode.replay()
        doc = mem.render(args.budget)
        sections: dict[str, list[str]] = {}
        for line in doc.splitlines():
            if line.startswith("## "):
                heading = line
            sections.setdefault(heading, []).append(line)
        shown = len(sections.get(TRANSITIONS, [None])) - 1
        current = sum(len(line) + 1 for line in sections.get(CURRENT, []))
        ok = sum(q.accepts(doc) for q in episode.queries)  # the document as the answer
        print(
            f"| {episode.id} | {shown}/{len(mem.transitions)} | {current} | "
            f"{ok}/{len(episode.queries)} | {len(doc)} |"
        )


if __name__ == "__main__":
    main()
