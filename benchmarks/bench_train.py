"""Training throughput of candidate recipes, side by side: same rows, same seed, same steps.

Every candidate is a list of train.py overrides, trained by train.py's own path
(``train_adapter``) in a fresh subprocess, so its peak memory is its own (CUDA peak allocated
on a GPU, peak RSS on CPU). The bench first measures this machine's matmul peak (fp32, and bf16
where the CPU multiplies bf16 natively), then prints per candidate:

- tokens/s after the first (warm-up) step, and as a multiple of the first candidate's: the
  tokens of the rows TRL packed. A ``shared_prefix`` candidate runs fewer of them (the start its
  examples share, once per row); its rows are those of the candidate before it with the same
  row length, so their tokens are counted from that one's run;
- the tokens/s it computed (fewer than the rows' for ``shared_prefix``);
- GFLOP/s of the work the loss needs on the rows as packed (``benchmarks/throughput.py``) and its
  share of the peak in the precision the candidate's matmuls ran in; a candidate that skips
  work (the LM head off the labels, the shared start) shows as a higher share. The count is the
  candidate's own: adapters on the top layers only need no backward pass below them;
- seconds per step, peak memory, and the training loss at each of the last steps.

    python benchmarks/bench_train.py                            # CPU: SmolLM2, compare, 10 steps
    python benchmarks/bench_train.py --model-shape qwen2.5-14b  # GPU: Qwen2.5-14B's shape in NF4

``qwen2.5-14b`` builds Qwen2.5-14B's architecture with random weights (no download) and trains
it through the same NF4 path as the real model, with the tiny tokenizer: its ids are valid in the
152k vocabulary, and only shapes matter for speed and memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from memops import schemas
from memops.core.config import compose_config
from memops.core.layout import DATASETS, MODELS
from memops.train.cpu import cpu_model, matmul_flags, native_bf16


def top_layers(k: int, of: int) -> str:
    """The override that puts the adapters on the top ``k`` of ``of`` decoder layers."""
    return f"model.lora.layers_to_transform=[{','.join(map(str, range(of - k, of)))}]"


DROPOUT = "model.lora.dropout=0.05"
"""The LoRA dropout of the design's recipe, which the SmolLM2 CPU recipe turned off."""
EVERY_LAYER = "~layers"
"""The recipe's adapted layers per adapter dropped: adapters on every layer, as in the first CPU recipe."""
CPU_CANDIDATES = {
    "before: fp32, LM head on every position": [
        "lm_head=all",
        "cpu_bf16=false",
        "packed_attention=mask",
        DROPOUT,
        EVERY_LAYER,
    ],
    "LM head on labelled positions": [
        "lm_head=labelled",
        "cpu_bf16=false",
        "packed_attention=mask",
        DROPOUT,
        EVERY_LAYER,
    ],
    "bf16 autocast": ["lm_head=all", "cpu_bf16=true", "packed_attention=mask", DROPOUT, EVERY_LAYER],
    "labelled positions, bf16 where native": [
        "lm_head=labelled",
        "cpu_bf16=true",
        "packed_attention=mask",
        DROPOUT,
        EVERY_LAYER,
    ],
    "and attention per packed example": [
        "lm_head=labelled",
        "cpu_bf16=true",
        "packed_attention=segments",
        DROPOUT,
        EVERY_LAYER,
    ],
    "and no LoRA dropout": ["packed_attention=segments", EVERY_LAYER],
    "and the rows' shared prompt start once": [EVERY_LAYER],
    "no LoRA dropout, 2,048-token rows": ["packed_attention=segments", "op.max_length=2048", EVERY_LAYER],
    "and the shared prompt start, 2,048-token rows": ["op.max_length=2048", EVERY_LAYER],
    "recipe: LoRA on the recipe's layers (compare: the top 15 of 30)": [],
    "LoRA on the top 8 of 30 layers": [top_layers(8, of=30)],
}
"""The first CPU recipe, each change alone, and the recipe (configs/recipe/smollm2-cpu,
which every candidate starts from; its adapted layers are per adapter, ``layers``)."""
REPEATS_WITHOUT_BF16 = ("bf16 autocast", "LM head on labelled positions")
"""The candidates a CPU without native bf16 would run as another, step for step (``cpu_bf16=true``
trains in fp32 there, train/cpu.py): bf16 autocast alone as the first, the labelled head alone
as the one after bf16 is added."""
COMPILE = ["+sft.torch_compile=true"]
GPU_CANDIDATES = {
    "padded baseline, 4 rows per step": [
        "sft.packing=false",
        "sft.padding_free=false",
        "op.per_device_batch=4",
        "packed_attention=mask",
    ],
    "bfd packing, padding-free, sdpa with the row's mask": ["op.per_device_batch=1", "packed_attention=mask"],
    "and sdpa per packed example": ["op.per_device_batch=1", "packed_attention=segments"],
    "recipe: and flash-attention varlen (torch)": ["op.per_device_batch=1"],
}

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


def random_14b(out: Path, tokenizer: str) -> Path:
    """Qwen2.5-14B's shape with random bf16 weights, initialised on the GPU (seconds, where the
    CPU takes minutes and 59 GB in fp32)."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    if not (out / "config.json").exists():
        torch.manual_seed(0)
        with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
            model = Qwen2ForCausalLM._from_config(Qwen2Config(**QWEN25_14B), dtype=torch.bfloat16)
        model.to("cpu").save_pretrained(str(out), safe_serialization=True)
        AutoTokenizer.from_pretrained(tokenizer).save_pretrained(str(out))  # with its chat template
    return out


def one(overrides: list[str]) -> dict:
    """Train one candidate in this process; what its manifest says."""
    from memops.train.recipe import train_adapter

    schemas.register()
    manifest = train_adapter(compose_config("train", overrides))
    steps = [e for e in manifest["log_history"] if "loss" in e and "num_input_tokens_seen" in e]
    first, last = steps[0], steps[-1]
    tokens = last["num_input_tokens_seen"] - first["num_input_tokens_seen"]
    seconds = float(last["train_runtime"]) - float(first["train_runtime"])
    return {
        "steps": manifest["global_step"],
        "tokens": tokens,
        "seconds": seconds,
        "packed_attention": manifest["device"]["packed_attention"],
        "max_length": manifest["config"]["op"]["max_length"],
        "lora": manifest["config"]["model"]["lora"],
        "computed_per_s": tokens / seconds,
        "step_s": seconds / (len(steps) - 1),
        "peak_gib": manifest["peak_memory_bytes"] / 2**30,
        "losses": [round(float(e["loss"]), 4) for e in steps],
        "precision": manifest["device"]["precision"],
        "device": manifest["device"]["device"],
    }


def row_tokens(result: dict, before: list[dict]) -> float:
    """The tokens of the rows ``result`` trained on, as TRL packed them: its own count, or for a
    ``shared_prefix`` run, that of the last run before it on the same rows (same row length;
    every candidate trains the same rows of the same seed) that ran them uncut."""
    if result["packed_attention"] != "shared_prefix":
        return result["tokens"]
    same = [
        r
        for r in before
        if r["max_length"] == result["max_length"] and r["packed_attention"] != "shared_prefix"
    ]
    return same[-1]["tokens"] if same else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-instruct", help="a config name in configs/model/ (CPU)")
    ap.add_argument("--model-shape", choices=["qwen2.5-14b"], help="GPU: random weights of this shape")
    ap.add_argument("--op", default="compare")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--max-length", type=int, help="default: 2,048 on a GPU, the CPU recipe's 1,024")
    ap.add_argument("--datasets-dir", default=DATASETS)
    ap.add_argument("--compile", action="store_true", help="add the recipe with torch.compile")
    ap.add_argument(
        "--shape-dir", help="keep the random weights here for later runs (default: a temporary folder)"
    )
    ap.add_argument("--only", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.only:
        print("RESULT " + json.dumps(one(json.loads(args.only))), flush=True)
        return

    import torch
    from throughput import flops_per_token, matmul_peak, token_mix

    from memops.core.models import LoraSpec, model_config
    from memops.train.builds import ensure_model

    gpu = args.model_shape is not None
    candidates = dict(GPU_CANDIDATES if gpu else CPU_CANDIDATES)
    if args.compile:
        candidates["recipe + torch.compile"] = COMPILE
    if not gpu and not native_bf16():
        for name in REPEATS_WITHOUT_BF16:
            del candidates[name]
        print(f"no native bf16 here: the recipe runs in fp32; left out: {', '.join(REPEATS_WITHOUT_BF16)}")
    with tempfile.TemporaryDirectory() as scratch:
        if gpu:
            path = random_14b(Path(args.shape_dir or Path(scratch) / "qwen2.5-14b"), f"{MODELS}/tiny")
            model = ["model=qwen2.5-14b-instruct", f"model.path={path}", "recipe=gpu"]
        else:
            cfg = model_config(args.model)
            ensure_model(cfg)
            path = cfg.path
            model = [f"model={args.model}", "recipe=smollm2-cpu" if cfg.cpu_recipe else "recipe=cpu"]
        common = [
            f"op={args.op}",
            *model,
            f"op.max_length={args.max_length or (2048 if gpu else 1024)}",
            f"max_steps={args.steps}",
            f"datasets_dir={args.datasets_dir}",
            "logging_steps=1",
            "max_eval_samples=2",
            "eval_steps=100000",
            "save_steps=100000",
            "prepare=false",
        ]
        from datasets import load_from_disk
        from transformers import AutoTokenizer

        rows = load_from_disk(str(Path(args.datasets_dir) / "all" / args.op))["train"]
        mix = token_mix(rows, AutoTokenizer.from_pretrained(path))
        peaks = {"float32": matmul_peak("float32")} if not gpu else {}
        if not gpu and native_bf16():
            peaks["bf16"] = matmul_peak("bfloat16")
        results = {}
        for name, overrides in candidates.items():
            where = [f"adapters_dir={Path(scratch) / str(len(results))}"]
            cmd = [sys.executable, __file__, "--only", json.dumps([*common, *overrides, *where])]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if proc.returncode != 0 or line is None:  # the others still run: a GPU hour is dear
                print(f"{name}: failed\n{proc.stderr[-3000:]}", flush=True)
                continue
            r = results[name] = json.loads(line.removeprefix("RESULT "))
            r["tokens_per_s"] = row_tokens(r, list(results.values())[:-1]) / r["seconds"]
            r["flops_per_token"] = flops_per_token(path, LoraSpec(**r["lora"]), mix)
            print(f"{name}: {r['tokens_per_s']:.1f} tokens/s, {r['peak_gib']:.2f} GiB", flush=True)

    first = next(iter(results.values()))
    device = (
        first["device"]
        if gpu
        else f"{cpu_model()} ({' '.join(matmul_flags())}), {torch.get_num_threads()} threads"
    )
    print(f"\n{device}; {args.model_shape or args.model}, op {args.op}, {args.steps} steps")
    print(
        f"{first['flops_per_token'] / 1e9:.3f} GFLOP per trained token, first candidate"
        " (benchmarks/throughput.py)"
    )
    if peaks:
        print("matmul peak: " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in peaks.items()))
    columns = (
        "candidate | precision | tokens/s | × first | computed/s | GFLOP/s | of peak | s/step | GiB | losses"
    )
    print(f"\n| {columns} |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for name, r in results.items():
        rate = r["tokens_per_s"]
        achieved = rate * r["flops_per_token"] / 1e9
        peak = peaks.get(r["precision"])
        share = f"{achieved / peak:.0%}" if peak else "-"
        losses = ", ".join(f"{x:.3f}" for x in r["losses"][-3:])  # the last three steps
        print(
            f"| {name} | {r['precision']} | {rate:.1f} | {rate / first['tokens_per_s']:.2f} "
            f"| {r['computed_per_s']:.1f} | {achieved:.0f} "
            f"| {share} | {r['step_s']:.2f} | {r['peak_gib']:.2f} | {losses} |"
        )


if __name__ == "__main__":
    main()
