"""Data build throughput: examples per second for the default full build (all folds).

Runs the same code as memops build-data into a temporary directory and prints where the
time goes. Target: the default full build in under 60 s on 2 cores.

Usage: python benchmarks/bench_data.py [--repeats 3] [--exports DIR ...]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from memops.core.sources import EXPORTS
from memops.data.build import build_folds, build_pool
from memops.data.config import DataConfig
from memops.data.scenarios.generate import scenarios
from memops.data.trajectory import load_trajectories


def once(cfg: DataConfig, out: Path) -> dict[str, float]:
    t = {"start": time.perf_counter()}
    trajectories = load_trajectories(cfg.sources())
    synthetic = scenarios(cfg.seed, cfg.scenarios_per_family, cfg.noisy_per_family, cfg.noise)
    t["episodes"] = time.perf_counter()
    pool = build_pool(synthetic + trajectories, cfg.seed, cfg.compare_per_label, progress=False)
    t["examples"] = time.perf_counter()
    sizes = build_folds(
        synthetic, trajectories, pool, out, list(cfg.folds), cfg.validation_fraction, progress=False
    )
    t["folds"] = time.perf_counter()
    written = sum(n for ops in sizes.values() for splits in ops.values() for n in splits.values())
    unique = sum(len(v) for e in pool.by_episode.values() for v in e.values())
    return {
        "episodes_s": t["episodes"] - t["start"],
        "examples_s": t["examples"] - t["episodes"],
        "folds_s": t["folds"] - t["examples"],
        "total_s": t["folds"] - t["start"],
        "unique": unique,
        "written": written,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--exports", nargs="+", default=EXPORTS, help="export directories, searched in order")
    args = parser.parse_args()
    cfg = DataConfig(exports=args.exports, progress=False)
    runs = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(once(cfg, Path(tmp)))
    r = min(runs, key=lambda x: x["total_s"])
    totals = [x["total_s"] for x in runs]
    unique, written = r["unique"], r["written"]
    print(f"default build: {len(cfg.folds)} folds x 3 ops, {unique} examples, {written} rows written")
    print(f"  scenarios + replay  {r['episodes_s']:7.2f} s")
    print(f"  label + prompts     {r['examples_s']:7.2f} s  ({unique / r['examples_s']:,.0f} examples/s)")
    print(f"  folds, write, check {r['folds_s']:7.2f} s  ({written / r['folds_s']:,.0f} rows/s)")
    best = f"total (best of {args.repeats})"
    print(f"  {best:<19} {r['total_s']:7.2f} s  ({unique / r['total_s']:,.0f} examples/s)")
    print(f"  total median        {statistics.median(totals):7.2f} s")


if __name__ == "__main__":
    main()
