"""Operator throughput of both backends on the same adapters and prompts, in one run.

Each backend (``hf``: transformers + peft, the base loaded unquantized; ``vllm``: a real server
started by the launcher from ``.venv-serve``) answers the same requests, built from one fold's
held-out trajectory and repeated up to --requests: requests/s, generated tokens/s and the share
of answers that parse and validate. Rows run with and without the operators' JSON schemas, so
the grammar's cost shows too. Extraction is measured direct and as the two-stage pair of calls.

    python benchmarks/bench_operators.py --adapters outputs/adapters/tiny/patch-guardrails
    python benchmarks/bench_operators.py --model smollm2-135m-instruct \\
        --adapters outputs/adapters/smollm2-135m-instruct/synthetic
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memops.core.models import model_config
from memops.core.sources import ANNOTATIONS, EXPORTS, Sources
from memops.data.trajectory import load_trajectory
from memops.operators.backends.factory import BackendConfig, open_backend
from memops.operators.learned import LearnedOperators, Outcome
from memops.train.builds import ensure_model


def timed(fn: Callable[[], list[Outcome]]) -> tuple[list[Outcome], float]:
    began = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny", help="a config name in configs/model/")
    ap.add_argument("--adapters", required=True, help="a directory holding extract/, compare/, update/")
    ap.add_argument("--backends", default="hf,vllm")
    ap.add_argument("--fold", default="patch-guardrails")
    ap.add_argument("--exports", nargs="+", default=EXPORTS, help="export directories, searched in order")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=8, help="hf: requests per generate call")
    args = ap.parse_args()

    model = model_config(args.model)
    ensure_model(model)
    episode = load_trajectory(args.fold, Sources.of(ANNOTATIONS, args.exports))
    notes = [(s.note(), episode.catalog) for s in episode.sessions]
    notes = (notes * (args.requests // len(notes) + 1))[: args.requests]
    claims = [c for s in episode.sessions for c in s.memory_claims()]
    pairs = [(a, b) for a in claims for b in claims][: args.requests]
    entries = [(None, c) for c in claims]
    entries = (entries * (args.requests // len(entries) + 1))[: args.requests]

    print(
        f"{args.model}, adapters {args.adapters}, {args.requests} requests per row (CPU unless served on GPU)"
    )
    header = f"{'backend':<9}{'operator':<20}{'grammar':<10}{'requests':>9}{'seconds':>9}{'req/s':>8}"
    print(f"{header}{'tokens/s':>10}{'parsed':>8}")
    for kind in args.backends.split(","):
        cfg = BackendConfig(kind=kind, batch_size=args.batch_size, unquantized=True)
        with (
            tempfile.TemporaryDirectory() as scratch,
            open_backend(cfg, model, args.adapters, [episode], Path(scratch) / "serve.log") as backend,
        ):
            LearnedOperators(backend).compare(pairs[:4])  # warm-up: first-request costs are not throughput
            for constrained in (False, True):
                ops = LearnedOperators(backend, constrained=constrained)
                rows: list[tuple[str, Callable[[], list[Outcome]]]] = [
                    ("compare", lambda ops=ops: ops.compare(pairs)),
                    ("update", lambda ops=ops: ops.update(entries)),
                    ("extract direct", lambda ops=ops: [c for e in ops.extract(notes) for c in e.calls]),
                    (
                        "extract two-stage",
                        lambda ops=ops: [c for e in ops.extract(notes, "two-stage") for c in e.calls],
                    ),
                ]
                for name, call in rows:
                    outcomes, seconds = timed(call)
                    tokens = sum(o.completion_tokens for o in outcomes)
                    parsed = sum(o.error is None for o in outcomes) / len(outcomes)
                    grammar = "xgrammar" if constrained else "none"
                    print(
                        f"{kind:<9}{name:<20}{grammar:<10}{len(outcomes):>9}{seconds:>9.2f}"
                        f"{len(outcomes) / seconds:>8.1f}{tokens / seconds:>10.0f}{parsed:>8.0%}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
