"""Run the symbolic engine on the built-in example and print each decision and the rendered memory."""

from __future__ import annotations

import argparse

from memops.memory import StateMemory
from memops.memory.example import example_claims


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=int, default=1700, help="character budget of the rendered memory")
    args = parser.parse_args()
    mem = StateMemory()
    for claim in example_claims():
        d = mem.apply(claim)
        print(f"{d.action:>10}  {d.key} = {claim.value}  [{claim.evidence.type}] ({d.reason})")
    print(f"\n{mem.render(budget=args.budget)}")


if __name__ == "__main__":
    main()
