"""The CPU recipe's speed-ups change how the loss is computed, never what it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.models import LoraSpec, ModelConfig
from train.config import OpConfig, TrainConfig
from train.cpu import labelled_positions_only, native_bf16
from train.recipe import precision
from train.throughput import TokenMix, flops_per_token, token_mix


def fused_log_probs(model, ids, labels):
    import torch

    with torch.no_grad():
        return model(input_ids=ids, labels=labels, fused_lm_head=True).log_probs


def test_the_lm_head_on_labelled_positions_gives_the_same_log_probs(tiny_model: Path) -> None:
    """TRL's compact path, opened on CPU, scores exactly the positions the full path scores,
    and leaves TRL as it was on exit."""
    import torch
    import trl.trainer.utils as trl_utils
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    model = AutoModelForCausalLM.from_pretrained(tiny_model, use_safetensors=True)
    add_fused_lm_head(model)
    ids = torch.randint(0, model.config.vocab_size, (2, 48), generator=torch.Generator().manual_seed(0))
    labels = torch.full_like(ids, -100)
    labels[:, 30:40] = ids[:, 30:40]  # a completion inside each row; the rest is prompt
    every = fused_log_probs(model, ids, labels)
    decide = trl_utils._use_triton
    with labelled_positions_only():
        assert trl_utils._use_triton(torch.device("cpu"))
        compact = fused_log_probs(model, ids, labels)
    assert trl_utils._use_triton is decide and not decide(torch.device("cpu"))
    assert (compact != 0).sum() == (labels[:, 1:] != -100).sum()
    torch.testing.assert_close(compact, every, rtol=1e-5, atol=1e-5)


def test_bf16_autocast_only_where_the_cpu_multiplies_bf16() -> None:
    model = ModelConfig(name="tiny", path="unused", compute_dtype="float32")
    cfg = TrainConfig(op=OpConfig(name="compare"), model=model)
    assert precision(cfg) == "float32"
    cfg.cpu_bf16 = True
    assert precision(cfg) == ("bf16" if native_bf16() else "float32")


def test_the_flop_count_is_four_per_weight_of_the_body(tiny_model: Path) -> None:
    """With no labelled token, no context and rank 0, a token costs 4 FLOPs per projection
    weight of the real model: 2 forward, 2 for the input gradients."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model, use_safetensors=True)
    names = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    weights = sum(
        p.numel() for n, p in model.named_parameters() if n.endswith(".weight") and n.split(".")[-2] in names
    )
    none = TokenMix(labelled=0.0, mean_context=0.0)
    assert flops_per_token(tiny_model, LoraSpec(r=0), none) == 4 * weights
    head = 2 * 2 * model.config.hidden_size * model.config.vocab_size
    labelled = flops_per_token(tiny_model, LoraSpec(r=0), TokenMix(labelled=1.0, mean_context=0.0))
    assert labelled - 4 * weights == pytest.approx(head)


def test_the_token_mix_counts_the_completion_as_labelled(tiny_model: Path) -> None:
    """Counted against the chat template rendered as text and tokenized on its own."""
    from datasets import Dataset
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    prompt = [{"role": "user", "content": "Which claim wins, the first or the second?"}]
    completion = [{"role": "assistant", "content": '{"relation":"conflicting","winner":"second"}'}]
    rows = Dataset.from_list([{"prompt": prompt, "completion": completion}])

    def tokens(messages, **kwargs) -> int:
        text = tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    whole, asked = tokens(prompt + completion), tokens(prompt, add_generation_prompt=True)
    mix = token_mix(rows, tokenizer)
    assert 0 < mix.labelled < 1
    assert mix.labelled == pytest.approx((whole - asked) / whole)
    assert mix.mean_context == pytest.approx((whole + 1) / 2)
