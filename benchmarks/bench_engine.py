"""Engine throughput: claims/s and per-claim cost at 10^4, 10^5 and 10^6 claims.

The claim stream mimics a project's: a few hundred tracked slots, most claims on
``main``/``production``, a long tail of branches and environments, values that recur (so
merges and contests happen), every evidence type, and timestamps that mostly move forward.
Claims arrive as a stream, in chunks of 10^4 that are built and validated off the clock (a
live system receives claims one session at a time; it never holds the whole stream as
objects). Two clocks: ``build`` is validating and normalising a claim (the caller's cost),
``apply`` is the engine's write path alone. The memory keeps every claim it is given.
Run it pinned to one core for the one-core figure: ``taskset -c 0 python benchmarks/bench_engine.py``.

Usage: python benchmarks/bench_engine.py [--sizes 10000 100000 1000000] [--seed 0]
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from memops.memory import EVIDENCE_TYPES, Claim, StateMemory

ENTITIES = ["database", "orm", "deployment", "hosting", "auth", "cache", "queue", "ci", "api", "feature"]
BRANCHES = ["main"] * 8 + ["release/2.1", "exp/fast-path"]
ENVS = ["production"] * 6 + ["staging"] * 2 + ["preview", "dev"]
TYPE_WEIGHTS = [10, 3, 8, 8, 3, 5, 4]  # aligned with EVIDENCE_TYPES


CHUNK = 10_000
SIZES = [10_000, 100_000, 1_000_000]
START = datetime(2000, 1, 1, tzinfo=UTC)
"""The stream's first instant: a claim a minute from here, so 10^6 claims end in 2001, in the past
on any machine's clock (the engine refuses a claim dated past it)."""


def stream(n: int, seed: int, clock: list[float]) -> Iterator[list[Claim]]:
    """``n`` claims in chunks; about 17 claims per key at every size, so keys grow with ``n``."""
    rng = random.Random(seed)
    slots = [(e, f"slot_{i}") for e in ENTITIES for i in range(max(2, n // 2000))]
    out: list[Claim] = []
    for i in range(n):
        entity, slot = rng.choice(slots)
        kind = rng.choices(EVIDENCE_TYPES, TYPE_WEIGHTS)[0]
        commit = f"{rng.getrandbits(28):07x}" if rng.random() < 0.5 else None
        fields = dict(
            entity=entity,
            slot=slot,
            value=f"v{rng.randrange(5)}",
            branch=rng.choice(BRANCHES),
            env=rng.choice(ENVS),
            evidence={"type": kind, "commit": commit, "source": f"s{i}"},
            at=START + timedelta(minutes=i + rng.randrange(-30, 30)),
        )
        t0 = time.perf_counter()
        out.append(Claim.model_validate(fields))
        clock[0] += time.perf_counter() - t0
        if len(out) == CHUNK:
            yield out
            out = []
    if out:
        yield out


def bench(n: int, seed: int, collect: bool) -> dict[str, float]:
    mem = StateMemory()
    actions: Counter[str] = Counter()
    build, apply = [0.0], 0.0
    for chunk in stream(n, seed, build):
        if not collect:
            gc.disable()
        t0 = time.perf_counter()
        actions.update(mem.apply(c).action for c in chunk)
        apply += time.perf_counter() - t0
        gc.enable()
    return {"build": build[0], "apply": apply, "keys": len(mem), **actions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-gc", action="store_true", help="pause the cyclic collector while applying, to show its share"
    )
    args = parser.parse_args()
    print(
        f"{'claims':>9} {'keys':>7} {'apply s':>8} {'claims/s':>10} {'apply us':>9} {'build us':>9}  "
        "add/merge/supersede/contested"
    )
    for n in args.sizes:
        r = bench(n, args.seed, collect=not args.no_gc)
        print(
            f"{n:>9} {r['keys']:>7} {r['apply']:>8.3f} {n / r['apply']:>10,.0f} "
            f"{1e6 * r['apply'] / n:>9.2f} {1e6 * r['build'] / n:>9.2f}  "
            f"{r['add']}/{r['merge']}/{r['supersede']}/{r['contested']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
