"""What a training run would do, without doing it (``train.py dry_run=true``).

It reads the built dataset and the base's tokenizer, and nothing else: no model is loaded, built
or trained, and nothing is written. It gives the example counts, the token statistics of the
rows as SFT tokenizes them (chat template, prompt and completion apart), the packed rows per
epoch, the steps, and the time those steps take at the throughput this machine recorded before
(a finished adapter of the same base on the same device) or, failing that, says how to measure it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from memops.core.layout import ADAPTER_MANIFEST, dataset_dir
from memops.train.config import TrainConfig
from memops.train.cpu import cpu_model
from memops.train.recipe import conversation_tokens


def token_stats(rows: Any, tokenizer: Any, max_length: int) -> dict[str, Any]:
    """Prompt and completion tokens per example (mean, max), the examples training leaves out for
    their length, and the rows bfd packing fills with the rest."""

    prompts, completions = [], []
    for row in rows:
        whole = conversation_tokens(row, tokenizer)
        prompt = tokenizer.apply_chat_template(row["prompt"], return_dict=True, add_generation_prompt=True)
        prompts.append(len(prompt["input_ids"]))
        completions.append(whole - prompts[-1])
    kept = [n for n in map(sum, zip(prompts, completions, strict=True)) if n <= max_length]
    return {
        "examples": len(prompts),
        "over_length": len(prompts) - len(kept),
        "prompt_tokens": {"mean": round(sum(prompts) / len(prompts), 1), "max": max(prompts)},
        "completion_tokens": {"mean": round(sum(completions) / len(completions), 1), "max": max(completions)},
        "tokens": sum(kept),
        "packed_rows_per_epoch": math.ceil(sum(kept) / max_length),
    }


def duration(seconds: float) -> str:
    """An estimate in words: seconds under two minutes, minutes above."""
    return f"about {seconds:.0f} s" if seconds < 120 else f"about {seconds / 60:.0f} min"


def this_device() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else cpu_model()


def recorded_rate(adapters_dir: str, model: str, device: str) -> tuple[float, Path] | None:
    """Tokens/s of the newest finished adapter of this base trained on this device."""
    found = []
    for manifest in Path(adapters_dir, model).glob(f"*/*/{ADAPTER_MANIFEST}"):
        m = json.loads(manifest.read_text())
        if m.get("device", {}).get("device") == device and m.get("wall_seconds"):
            found.append((manifest.stat().st_mtime, m["tokens_seen"] / m["wall_seconds"], manifest))
    if not found:
        return None
    _, rate, where = max(found)
    return rate, where


def training_plan(cfg: TrainConfig) -> dict[str, Any]:
    """Everything the dry run prints, as data (the test reads it)."""
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    path = dataset_dir(cfg.datasets_dir, cfg.fold, cfg.op.name)
    if not (path / "dataset_dict.json").exists():
        return {"missing": f"no dataset at {path}: a real run builds it first (memops build-data)"}
    if not (Path(cfg.model.path) / "tokenizer.json").exists() and cfg.model.build:
        return {
            "missing": f"the {cfg.model.name} base is not built at {cfg.model.path}: a real run builds it"
        }
    splits = load_from_disk(str(path))
    tokenizer = AutoTokenizer.from_pretrained(cfg.model.path, trust_remote_code=False)
    max_length = cfg.op.max_length or 1024
    stats = token_stats(splits["train"], tokenizer, max_length)
    per_step = cfg.op.per_device_batch * cfg.op.grad_accum
    per_epoch = math.ceil(stats["packed_rows_per_epoch"] / per_step)
    steps = cfg.max_steps if cfg.max_steps and cfg.max_steps > 0 else math.ceil(per_epoch * cfg.op.epochs)
    evaluated = len(splits["validation"])
    if cfg.max_eval_samples is not None:
        evaluated = min(evaluated, cfg.max_eval_samples)
    plan: dict[str, Any] = {
        "dataset": str(path),
        "examples": {split: len(rows) for split, rows in splits.items()},
        "train_tokens": stats,
        "eval_examples": evaluated,
        "steps": steps,
        "steps_per_epoch": per_epoch,
        "tokens_per_step": per_step * max_length,
        "max_length": max_length,
    }
    device = this_device()
    recorded = recorded_rate(cfg.adapters_dir, cfg.model.name, device)
    if recorded is None:
        plan["estimate"] = (
            f"no {cfg.model.name} adapter trained on {device} is recorded under {cfg.adapters_dir}; "
            "benchmarks/bench_train.py measures this machine's tokens/s"
        )
    else:
        rate, where = recorded
        seconds = steps * per_step * max_length / rate
        plan["estimate"] = f"{duration(seconds)} at {rate:.0f} tokens/s (recorded in {where})"
        plan["estimated_seconds"] = round(seconds)
    return plan


def describe(cfg: TrainConfig, plan: dict[str, Any]) -> str:
    from omegaconf import OmegaConf

    lines = ["resolved config:", OmegaConf.to_yaml(OmegaConf.structured(cfg)).rstrip(), ""]
    if "missing" in plan:
        return "\n".join([*lines, plan["missing"], "(dry run: nothing was built, trained or written)"])
    t = plan["train_tokens"]
    lines += [
        f"dataset {plan['dataset']}: "
        + ", ".join(f"{split} {n}" for split, n in plan["examples"].items())
        + f" examples; evaluated on {plan['eval_examples']}",
        f"prompt tokens mean {t['prompt_tokens']['mean']}, max {t['prompt_tokens']['max']}; "
        f"completion tokens mean {t['completion_tokens']['mean']}, max {t['completion_tokens']['max']}",
        f"{t['over_length']} train examples longer than {plan['max_length']} tokens are left out",
        f"{t['tokens']:,} train tokens in {t['packed_rows_per_epoch']} packed rows per epoch; "
        f"{plan['steps_per_epoch']} steps per epoch of {plan['tokens_per_step']:,} tokens",
        f"steps: {plan['steps']}",
        f"time: {plan['estimate']}",
        "(dry run: nothing was built, trained or written)",
    ]
    return "\n".join(lines)
