"""What a trajectory's length costs: validation, example build and gold replay, 500 to 5,000 commits.

A long trajectory is a shipped one tiled: every copy of its commits gets fresh hashes and is
dated before the copy after it (the last copy keeps the shipped dates), and the annotation
follows the copies; distractors and queries are kept once. So the same few keys collect ever
longer histories, the case that once made the cost quadratic. For each size it prints the
seconds of each stage and the bytes of the update examples; last, each stage's exponent from
the smallest size to the largest (1: linear, 2: quadratic).

Usage: python benchmarks/bench_long.py [--base patch-guardrails] [--sizes 500 1000 2000 5000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from memops.core.sources import ANNOTATIONS, EXPORTS, Sources
from memops.data.trajectory import check_trajectory
from memops.operators.registry import OPERATORS, UPDATE


def tile(base: str, commits: int, out: Path) -> str:
    """Write ``<out>/annotations/<name>.yaml`` and ``<out>/exports/<name>.jsonl``: ``base``'s
    commits copied until there are ``commits`` of them. Returns the trajectory's name."""
    sources = Sources.of(ANNOTATIONS, EXPORTS)
    name = f"{base}-x{commits}"
    records = [json.loads(line) for line in sources.export(base).read_text().splitlines() if line.strip()]
    annotation = yaml.safe_load(sources.annotation(base).read_text())
    by_short = {a["commit"]: a for a in annotation["commits"]}
    dates = [datetime.fromisoformat(r["author_date"]) for r in records]
    span = max(dates) - min(dates) + timedelta(days=1)
    copies = -(-commits // len(records))
    lines, annotated = [], []
    for n in range(commits):
        copy, record = divmod(n, len(records))
        original = records[record]
        full = hashlib.sha1(f"{original['commit']}:{copy}".encode()).hexdigest()
        moved = {  # earlier copies further back, so that no time lies in the future
            k: (datetime.fromisoformat(original[k]) - (copies - 1 - copy) * span).isoformat()
            for k in ("author_date", "committed_at")
            if original.get(k)
        }
        lines.append(json.dumps({**original, **moved, "trajectory": name, "commit": full, "short": full[:9]}))
        said = next(a for short, a in by_short.items() if original["commit"].startswith(short))
        annotated.append({**said, "commit": full[:9]})
    (out / "exports").mkdir(parents=True, exist_ok=True)
    (out / "annotations").mkdir(parents=True, exist_ok=True)
    (out / "exports" / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    tiled = {**annotation, "trajectory": name, "commits": annotated}
    (out / "annotations" / f"{name}.yaml").write_text(
        yaml.safe_dump(tiled, sort_keys=False, allow_unicode=True)
    )
    return name


def measure(base: str, commits: int, scratch: Path) -> dict[str, float]:
    name = tile(base, commits, scratch)
    sources = Sources.of([scratch / "annotations"], [scratch / "exports"])
    began = time.perf_counter()
    episode, problems = check_trajectory(name, sources)
    validated = time.perf_counter()
    assert episode is not None and not problems, problems[:3]
    examples = {
        op: spec.examples(episode, random.Random(f"0:{op}:{name}"), 2) for op, spec in OPERATORS.items()
    }
    built = time.perf_counter()
    episode.replay()
    replayed = time.perf_counter()
    update_bytes = sum(len(json.dumps(e, ensure_ascii=False)) for e in examples[UPDATE.name])
    return {
        "validate s": validated - began,
        "build s": built - validated,
        "replay s": replayed - built,
        "update MB": update_bytes / 1e6,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="patch-guardrails", help="the shipped trajectory to tile")
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 5000])
    args = ap.parse_args()
    rows = {}
    for commits in args.sizes:
        with tempfile.TemporaryDirectory() as scratch:
            rows[commits] = measure(args.base, commits, Path(scratch))
        print(
            f"{commits:6d} commits: " + ", ".join(f"{k} {v:.2f}" for k, v in rows[commits].items()),
            flush=True,
        )
    small, large = min(rows), max(rows)
    print(f"\nexponent from {small} to {large} commits (time ~ commits^k):")
    for stage in rows[small]:
        a, b = rows[small][stage], rows[large][stage]
        k = math.log(b / a) / math.log(large / small) if a > 0 and b > 0 else float("nan")
        print(f"  {stage:12s} k = {k:.2f}")


if __name__ == "__main__":
    main()
