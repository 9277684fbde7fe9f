"""Training throughput as a share of what the machine can do.

Tokens/s alone does not say how far a recipe is from the hardware. Here a token's training
cost is counted in FLOPs (the matmuls of LoRA fine-tuning of a frozen base) and the machine's
own matmul rate is measured, so ``bench_train.py`` and ``bench_heldout.py`` can print both.

The FLOPs counted are the work the loss needs, whichever way a recipe does it: the body
forward and its input gradients, attention over each packed document, the LoRA matmuls, and
the LM head at the labelled positions only. A recipe that projects every position onto the
vocabulary does more arithmetic for the same step, and shows as a lower share.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from memops.core.models import LoraSpec


def matmul_peak(dtype: str, n: int = 2048, seconds: float = 2.0) -> float:
    """GFLOP/s of square ``n``-by-``n`` matmuls in ``dtype`` on every thread torch uses."""
    import torch

    a = torch.randn(n, n).to(getattr(torch, dtype))
    b = torch.randn(n, n).to(a.dtype)
    for _ in range(3):
        a @ b
    began, done = time.perf_counter(), 0
    while time.perf_counter() - began < seconds:
        a @ b
        done += 1
    return 2 * n**3 * done / (time.perf_counter() - began) / 1e9


@dataclass(frozen=True)
class TokenMix:
    """What the packed training rows hold, per token."""

    labelled: float
    """Share of tokens whose next token the loss reads (completion tokens)."""
    mean_context: float
    """Mean number of positions a token attends to, inside its own document."""


def token_mix(dataset, tokenizer, examples: int = 256) -> TokenMix:  # datasets.Dataset, tokenizer
    """Measured on the first ``examples`` rows of a prompt/completion dataset, tokenized with the
    chat template as SFT training does."""

    def length(messages: list[dict[str, str]], **kwargs) -> int:
        return len(tokenizer.apply_chat_template(messages, return_dict=True, **kwargs)["input_ids"])

    total = labelled = pairs = 0
    for row in dataset.select(range(min(examples, len(dataset)))):
        n = length(row["prompt"] + row["completion"])
        p = length(row["prompt"], add_generation_prompt=True)
        total, labelled, pairs = total + n, labelled + n - p, pairs + n * (n + 1) // 2
    return TokenMix(labelled=labelled / total, mean_context=pairs / total)


def flops_per_token(model_dir: str | Path, lora: LoraSpec, mix: TokenMix) -> float:
    """FLOPs one trained token needs: forward 2 per weight, backward 2 more for the input
    gradients (the base is frozen) from the top down to the lowest adapted layer, 6 per LoRA
    weight (forward, input and weight gradients), attention 4 per head dimension per attended
    position forward and twice that backward (again down to the lowest adapted layer), and the
    tied or untied LM head at labelled positions only."""
    config = json.loads((Path(model_dir) / "config.json").read_text())
    d, layers, vocab = config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]
    ffn = config["intermediate_size"]
    head = config.get("head_dim") or d // config["num_attention_heads"]
    q = config["num_attention_heads"] * head
    kv = config["num_key_value_heads"] * head
    shapes = {  # (in, out) of each projection
        "q_proj": (d, q),
        "k_proj": (d, kv),
        "v_proj": (d, kv),
        "o_proj": (q, d),
        "gate_proj": (d, ffn),
        "up_proj": (d, ffn),
        "down_proj": (ffn, d),
    }
    adapted_layers = lora.layers_to_transform or range(layers)
    backward = layers - min(adapted_layers)  # the layers a gradient passes through
    body = sum(i * o for i, o in shapes.values())  # per layer, as are the two below
    adapted = sum(lora.r * (i + o) for name, (i, o) in shapes.items() if name in lora.target_modules)
    attention = 4 * q * mix.mean_context
    head_flops = 2 * d * vocab * mix.labelled
    forward_and_back = 2 * layers * body + 2 * backward * body + 6 * len(adapted_layers) * adapted
    return forward_and_back + (layers + 2 * backward) * attention + 2 * head_flops
