"""The store's speed: notes per second and the latency of ``add_note`` and of each query on a
store of 100,000 claims, in an SQLite file or (``--store postgresql://...``) on a PostgreSQL
server, in a namespace of its own there.

A store is filled with notes of ten claims each (thousands of keys over ten entities, most on
``main``/``production``, values that recur so merges and contests happen, every evidence type),
each note one transaction as ``ProjectMemory.add_note`` writes it. On the full store it times
one-claim and ten-claim notes and every query (``get``, ``history``, ``value_at``, ``keys`` of one
entity and of all, ``snapshot`` now and at a time, ``contested``, ``find``): each call's first
(this process has read nothing yet: a fresh process, or keys a writer changed) and the p50 and p95
of its repetitions (the live items read are kept until a write changes them), the rules deciding.
With ``--adapters`` it also times notes the learned operators read and decide on that store
(``open_memory("learned")`` on ``--model``: extraction against the python-project catalog, then
the learned decisions), where the model's time is most of a note's. Prints a table and writes
``<out>/store.json`` with the CPU named.

Usage: python benchmarks/bench_store.py [--claims 100000] [--out outputs/bench/store] [--seed 0]
           [--store postgresql://user:password@127.0.0.1/db]
           [--adapters outputs/adapters/smollm2-demo/smollm2-135m-instruct/synthetic
            --model smollm2-135m-instruct --learned 30]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memops.memory import EVIDENCE_TYPES
from memops.track import ProjectMemory
from memops.track.store import Store

ENTITIES = ["database", "orm", "deployment", "hosting", "auth", "cache", "queue", "ci", "api", "feature"]
BRANCHES = ["main"] * 8 + ["release-2.1", "exp-fast-path"]
ENVS = ["production"] * 6 + ["staging"] * 2 + ["preview", "dev"]
CLAIMS_PER_NOTE = 10
START = datetime(2001, 1, 1, tzinfo=UTC)


def claims(rng: random.Random, slots: list[tuple[str, str]], n: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        entity, slot = rng.choice(slots)
        commit = f"{rng.getrandbits(28):07x}" if rng.random() < 0.5 else None
        out.append(
            {
                "entity": entity,
                "slot": slot,
                "value": f"value {rng.randrange(5)}",
                "branch": rng.choice(BRANCHES),
                "env": rng.choice(ENVS),
                "evidence": {"type": rng.choice(EVIDENCE_TYPES), "commit": commit},
            }
        )
    return out


def timed(call: Callable[[], object], repeat: int) -> dict[str, float]:
    """The first of ``repeat`` calls (before this process has read what it asks for), and the
    p50 and p95 of all of them, in milliseconds."""
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    first = times[0]
    times.sort()
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    return {"first_ms": first, "p50_ms": statistics.median(times), "p95_ms": p95}


NOTES = [
    "Switch the build backend to hatchling",
    "Require Python >=3.10 and drop 3.8",
    "Lint with ruff instead of flake8",
    "Run the tests with pytest on GitHub Actions",
    "Relicense under the MIT license",
    "Format with black, line length 100",
]


def learned_notes(db: Path | str, adapters: Path, model: str, n: int) -> dict[str, float]:
    """p50 and p95 of ``n`` notes read and decided by the learned operators on the store."""
    from memops import open_memory

    with open_memory(
        "learned", adapters=adapters, model=model, catalog="python-project", store=db, namespace="learned"
    ) as memory:
        count = iter(range(n))

        def call() -> object:
            i = next(count)
            return memory.add_note(NOTES[i % len(NOTES)], START + timedelta(days=i), note_id=f"learned-{i}")

        return timed(call, n)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/store"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=200, help="calls timed per query")
    parser.add_argument("--adapters", type=Path, help="a fold's adapters: time learned notes too")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--learned", type=int, default=30, help="learned notes timed")
    parser.add_argument("--store", help="a PostgreSQL server's database (default: <out>/store.db)")
    args = parser.parse_args()
    from memops.train.cpu import cpu_model

    rng = random.Random(args.seed)
    slots = [(e, f"slot_{i}") for e in ENTITIES for i in range(max(2, args.claims // 200))]
    args.out.mkdir(parents=True, exist_ok=True)
    db: Path | str = args.store or args.out / "store.db"
    if isinstance(db, Path):
        for path in (db, db.with_name("store.db-wal"), db.with_name("store.db-shm")):
            path.unlink(missing_ok=True)
    memory = ProjectMemory(store=Store(db, namespace=f"bench-{datetime.now(UTC):%Y%m%dT%H%M%S%f}"))
    notes = args.claims // CLAIMS_PER_NOTE
    began = time.perf_counter()
    for i in tqdm(range(notes), desc="filling", unit="note"):
        at = START + timedelta(minutes=i)
        memory.add_note(f"note {i}", at, note_id=f"n{i}", claims=claims(rng, slots, CLAIMS_PER_NOTE))
    fill_s = time.perf_counter() - began
    n = notes

    def add(k: int) -> Callable[[], object]:
        def call() -> object:
            nonlocal n
            n += 1
            return memory.add_note(
                f"note {n}", START + timedelta(minutes=n), note_id=f"n{n}", claims=claims(rng, slots, k)
            )

        return call

    entity, slot = slots[0]
    few = max(5, args.repeat // 10)  # the calls that read every key
    figures = {
        "add_note, 1 claim": timed(add(1), args.repeat),
        "add_note, 10 claims": timed(add(10), args.repeat),
        "get": timed(lambda: memory.get(entity, slot), args.repeat),
        "history": timed(lambda: memory.history(entity, slot), args.repeat),
        "value_at": timed(lambda: memory.value_at(entity, slot, START + timedelta(days=3)), args.repeat),
        "keys(entity)": timed(lambda: memory.keys(entity), few),
        "find": timed(lambda: memory.find("value 3"), args.repeat),
        "keys()": timed(memory.keys, few),
        "snapshot": timed(memory.snapshot, few),
        "snapshot(at)": timed(lambda: memory.snapshot(at=START + timedelta(days=3)), few),
        "contested": timed(memory.contested, few),
    }
    if args.adapters:
        figures["add_note, learned"] = learned_notes(db, args.adapters, args.model, args.learned)
    result = {
        "cpu": cpu_model(),
        "store": memory.store.dialect.name,
        "claims": args.claims,
        "keys": len(memory.store.entries()),
        "fill_notes_per_s": notes / fill_s,
        "fill_claims_per_s": notes * CLAIMS_PER_NOTE / fill_s,
        "store_mb": db.stat().st_size / 2**20 if isinstance(db, Path) else None,
        "latency": figures,
    }
    (args.out / "store.json").write_text(json.dumps(result, indent=1) + "\n")
    size = f"{args.claims} claims in {notes} notes, {result['keys']} keys"
    if result["store_mb"] is not None:
        size += f", {result['store_mb']:.0f} MB"
    print(f"{result['cpu']}, {result['store']}: {size}")
    print(f"filling: {result['fill_notes_per_s']:.0f} notes/s ({result['fill_claims_per_s']:.0f} claims/s)")
    print(f"{'call':<22} {'first ms':>9} {'p50 ms':>9} {'p95 ms':>9}")
    for name, f in figures.items():
        print(f"{name:<22} {f['first_ms']:>9.2f} {f['p50_ms']:>9.2f} {f['p95_ms']:>9.2f}")


if __name__ == "__main__":
    main()
