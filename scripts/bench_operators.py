"""Operator throughput of the hf backend: requests/s and tokens/s, free vs grammar-constrained.

The same prompts (a fold's test examples, repeated up to --requests) run once unconstrained
and once under each operator's JSON schema, so the difference is the cost of the grammar.
Tokens/s counts generated tokens. Extraction is measured direct and as the two-stage pair of
calls (stage 1 on every note, stage 2 on every pair stage 1 chose).

    python scripts/bench_operators.py                          # tiny base, no adapters
    python scripts/bench_operators.py --adapters outputs/adapters/tiny/patch-guardrails
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from data.replay import load_trajectory
from eval.backend import adapter_dirs
from operators.backends.hf import HFBackend
from operators.learned import Extraction, LearnedOperators, Outcome
from train.config import ModelConfig
from train.tiny import build


def timed(fn) -> tuple[list[Outcome], float]:
    began = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - began


def calls(extractions: list[Extraction]) -> list[Outcome]:
    return [c for e in extractions for c in e.calls]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="outputs/models/tiny")
    ap.add_argument("--adapters", help="a directory holding extract/, compare/, update/")
    ap.add_argument("--datasets", default="outputs/datasets")
    ap.add_argument("--fold", default="patch-guardrails")
    ap.add_argument("--export-dir", default="../shared/data/codex-trajectories")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()

    if args.model == "outputs/models/tiny":
        build(Path(args.model), log=False)
    model = ModelConfig(name="bench", path=args.model, compute_dtype="float32", gradient_checkpointing=False)
    backend = HFBackend.load(model, adapter_dirs(args.adapters) if args.adapters else {}, args.batch_size)
    episode = load_trajectory(args.fold, Path(args.export_dir))
    notes = [(s.note(), episode.catalog) for s in episode.sessions]
    notes = (notes * (args.requests // len(notes) + 1))[: args.requests]
    claims = [c for s in episode.sessions for c in s.memory_claims()]
    pairs = [(a, b) for a in claims for b in claims][: args.requests]
    entries = [(None, c) for c in claims]
    entries = (entries * (args.requests // len(entries) + 1))[: args.requests]

    device = "GPU" if backend.model.device.type == "cuda" else "CPU"
    print(
        f"hf backend, {args.model} ({'adapters ' + args.adapters if args.adapters else 'no adapters'}), "
        f"{device}, batch {args.batch_size}, {args.requests} requests per row"
    )
    print(
        f"{'operator':<22}{'grammar':<10}{'requests':>9}{'seconds':>9}{'req/s':>9}{'tokens/s':>10}{'parsed':>8}"
    )
    for constrained in (False, True):
        ops = LearnedOperators(backend, constrained=constrained)
        rows = [
            ("compare", lambda ops=ops: ops.compare(pairs)),
            ("update", lambda ops=ops: ops.update(entries)),
            ("extract direct", lambda ops=ops: [c for e in ops.extract(notes) for c in e.calls]),
            (
                "extract two-stage",
                lambda ops=ops: [c for e in ops.extract(notes, "two-stage") for c in e.calls],
            ),
        ]
        for name, run in rows:
            outcomes, seconds = timed(run)
            tokens = sum(o.completion_tokens for o in outcomes)
            parsed = sum(o.error is None for o in outcomes) / len(outcomes)
            print(
                f"{name:<22}{'xgrammar' if constrained else 'none':<10}{len(outcomes):>9}{seconds:>9.2f}"
                f"{len(outcomes) / seconds:>9.1f}{tokens / seconds:>10.0f}{parsed:>8.0%}"
            )


if __name__ == "__main__":
    main()
