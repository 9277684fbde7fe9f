"""Training speed of a model under each precision, through the real entry point.

    python benchmarks/bench_precision.py                                  # SmolLM2, all four
    python benchmarks/bench_precision.py --precisions fp32 --steps 4
    taskset -c 0 python benchmarks/bench_precision.py --precisions fp32   # one core, as
                                                                       # OMP_NUM_THREADS=1 had it

Each precision is one `accelerate launch train.py` run of --steps packed 1,024-token rows on
the synthetic fold, into a scratch adapters directory. Tokens/s is the trainer's own count of
tokens over its train_runtime (model loading and the final evaluation excluded); peak memory
is the run's peak RSS. Precisions: fp32 and bf16 LoRA on unquantized weights; NF4 4-bit QLoRA
(bitsandbytes' CPU kernels) with fp32 or bf16 compute.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from memops.core.layout import DATASETS

ROOT = Path(__file__).resolve().parents[1]
PRECISIONS = {
    "fp32": ["model.load_in_4bit=false", "model.compute_dtype=float32"],
    "bf16": ["model.load_in_4bit=false", "model.compute_dtype=bfloat16"],
    "nf4+fp32": ["model.load_in_4bit=true", "model.compute_dtype=float32"],
    "nf4+bf16": ["model.load_in_4bit=true", "model.compute_dtype=bfloat16"],
}


def measure(precision: str, args: argparse.Namespace, scratch: Path) -> dict:
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1"]
    launch += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    overrides = [
        f"op={args.op}",
        "fold=synthetic",
        f"model={args.model}",
        "recipe=gpu",  # the settings below, as measured before recipes existed; not the model's CPU recipe
        f"datasets_dir={args.datasets_dir}",
        f"adapters_dir={scratch / precision}",
        f"max_steps={args.steps}",
        "op.max_length=1024",
        "op.per_device_batch=1",
        "op.grad_accum=1",
        "max_eval_samples=4",
        "eval_steps=100000",
        "save_steps=100000",
        f"logging_steps={args.steps}",
        *PRECISIONS[precision],
    ]
    done = subprocess.run([*launch, str(ROOT / "train.py"), *overrides], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{precision}: train.py failed ({done.returncode}):\n{done.stderr[-3000:]}")
    [manifest] = (scratch / precision).glob(f"*/synthetic/{args.op}/manifest.json")
    m = json.loads(manifest.read_text())
    runtime = next(float(e["train_runtime"]) for e in reversed(m["log_history"]) if "train_runtime" in e)
    return {
        "precision": precision,
        "tokens": m["tokens_seen"],
        "seconds": runtime,
        "tokens_per_s": m["tokens_seen"] / runtime,
        "threads": m["threads"],
        "peak_gib": m["peak_memory_bytes"] / 2**30,
        "loss": m["train_loss"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--precisions", default=",".join(PRECISIONS), help=f"some of {', '.join(PRECISIONS)}")
    parser.add_argument("--op", default="compare")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--datasets-dir", default=DATASETS)
    args = parser.parse_args()
    chosen = args.precisions.split(",")
    if unknown := [p for p in chosen if p not in PRECISIONS]:
        parser.error(f"unknown precision {unknown}; known: {', '.join(PRECISIONS)}")

    print(f"model {args.model}, op {args.op}, {args.steps} steps of one packed 1,024-token row")
    header = ("tokens", "train s", "tokens/s", "threads", "peak GiB", "loss")
    print(f"{'precision':<10}" + "".join(f"{h:>9}" for h in header))
    with tempfile.TemporaryDirectory() as scratch:
        for precision in chosen:
            r = measure(precision, args, Path(scratch))
            print(
                f"{r['precision']:<10}{r['tokens']:>9}{r['seconds']:>9.1f}{r['tokens_per_s']:>9.1f}"
                f"{r['threads']:>9}{r['peak_gib']:>9.2f}{r['loss']:>9.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
