"""Training throughput: a padded baseline against the project's recipe, on the same data.

- baseline: no packing, rows padded to the longest in the batch (4 rows per step);
- recipe:   bfd packing, padding-free, one packed row of up to --max-length tokens per step.

Both use the same 4-bit QLoRA model and LoRA config as train.py, the same examples and the
same number of optimizer steps. Each runs in a fresh subprocess, so its peak memory is its own
(CUDA peak allocated on a GPU, peak RSS on CPU). Tokens/s counts real (non-padding) tokens.

    python scripts/bench_train.py                            # CPU: the tiny model
    python scripts/bench_train.py --model-shape qwen2.5-14b  # GPU: the real 14B architecture

``qwen2.5-14b`` builds Qwen2.5-14B's architecture with random weights (no download), saves it,
and loads it through the same NF4 path as training. It reuses the tiny tokenizer: its ids are
valid in the 152k vocabulary, and only shapes matter for speed and memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from core.layout import DATASETS, MODELS

QWEN25_14B = {
    "hidden_size": 5120,
    "intermediate_size": 13824,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "vocab_size": 152064,
    "max_position_embeddings": 32768,
    "rope_theta": 1_000_000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}


def random_14b(out: Path) -> Path:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    if (out / "config.json").exists():
        return out
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(**QWEN25_14B)).to(torch.bfloat16)
    model.save_pretrained(str(out), safe_serialization=True)
    return out


def one(args: argparse.Namespace) -> dict:
    import torch
    from datasets import load_from_disk
    from transformers import AutoTokenizer
    from trl import SFTTrainer

    from core.models import load_model
    from train.config import TrainConfig
    from train.recipe import lora_config, peak_memory_bytes, sft_config

    cfg = TrainConfig()
    cfg.op.name, cfg.op.max_length, cfg.max_steps = args.op, args.max_length, args.steps
    cfg.op.per_device_batch, cfg.op.grad_accum = (4, 1) if args.only == "baseline" else (1, 1)
    cfg.model.name, cfg.model.path = args.model_shape, args.model_path
    cfg.model.compute_dtype = "bfloat16" if torch.cuda.is_available() else "float32"
    cfg.logging_steps, cfg.eval_steps, cfg.save_steps = args.steps, 10**6, 10**6
    data = load_from_disk(str(Path(args.datasets_dir) / "all" / args.op))["train"]
    data = data.select(range(min(len(data), args.examples))).select_columns(["prompt", "completion"])

    model, _ = load_model(cfg.model)
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    sft = sft_config(cfg, Path(args.scratch) / args.only)
    sft.eval_strategy, sft.save_strategy = "no", "no"
    sft.include_num_input_tokens_seen = "non_padding"
    if args.only == "baseline":
        sft.packing, sft.padding_free = False, False
    trainer = SFTTrainer(
        model=model, args=sft, train_dataset=data, processing_class=tokenizer, peft_config=lora_config(cfg)
    )
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    tokens = int(trainer.state.num_input_tokens_seen)
    return {
        "config": args.only,
        "steps": trainer.state.global_step,
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_s": tokens / seconds,
        "step_s": seconds / max(1, trainer.state.global_step),
        "peak_gib": peak_memory_bytes() / 2**30,
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-shape", choices=["tiny", "qwen2.5-14b"], default="tiny")
    parser.add_argument("--op", default="extract")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--examples", type=int, default=256)
    parser.add_argument("--max-length", type=int, default=2048)
    parser.add_argument("--datasets-dir", default=DATASETS)
    parser.add_argument("--tokenizer", default=f"{MODELS}/tiny")
    parser.add_argument("--only", choices=["baseline", "recipe"], help=argparse.SUPPRESS)
    parser.add_argument("--model-path", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.only:
        print("RESULT " + json.dumps(one(args)), flush=True)
        return

    with tempfile.TemporaryDirectory() as scratch:
        path = (
            args.tokenizer if args.model_shape == "tiny" else str(random_14b(Path(scratch) / "qwen2.5-14b"))
        )
        results = []
        for config in ("baseline", "recipe"):
            cmd = [sys.executable, __file__, "--only", config, "--model-path", path, "--scratch", scratch]
            cmd += ["--model-shape", args.model_shape, "--op", args.op, "--steps", str(args.steps)]
            cmd += ["--examples", str(args.examples), "--max-length", str(args.max_length)]
            cmd += ["--datasets-dir", args.datasets_dir, "--tokenizer", args.tokenizer]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if proc.returncode != 0 or line is None:
                sys.exit(f"{config} run failed:\n{proc.stderr[-3000:]}")
            results.append(json.loads(line.removeprefix("RESULT ")))

    base, recipe = results
    print(
        f"model {args.model_shape}, op {args.op}, {args.steps} steps, max length {args.max_length}, "
        f"device {base['device']}"
    )
    print(f"{'config':<9} {'tokens':>8} {'tokens/s':>9} {'step s':>7} {'peak GiB':>9}")
    for r in results:
        rate, step, peak = r["tokens_per_s"], r["step_s"], r["peak_gib"]
        print(f"{r['config']:<9} {r['tokens']:>8} {rate:>9.1f} {step:>7.2f} {peak:>9.2f}")
    print(
        f"recipe / baseline: {recipe['tokens_per_s'] / base['tokens_per_s']:.2f}x tokens/s, "
        f"{recipe['peak_gib'] / base['peak_gib']:.2f}x peak memory"
    )


if __name__ == "__main__":
    main()
