"""The benchmarks' count of what a trained token costs (benchmarks/throughput.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.throughput import TokenMix, flops_per_token, token_mix
from memops.core.models import LoraSpec


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


def test_the_flop_count_drops_the_input_gradients_below_the_lowest_adapted_layer(tiny_model: Path) -> None:
    from transformers import AutoConfig

    layers = AutoConfig.from_pretrained(tiny_model).num_hidden_layers
    none = TokenMix(labelled=0.0, mean_context=0.0)
    every = flops_per_token(tiny_model, LoraSpec(r=0), none)
    assert flops_per_token(tiny_model, LoraSpec(r=0, layers_to_transform=list(range(layers))), none) == every
    per_layer = every / (4 * layers)  # 2 forward + 2 input-gradient FLOPs per weight, per layer
    assert flops_per_token(
        tiny_model, LoraSpec(r=0, layers_to_transform=[layers - 1]), none
    ) == pytest.approx((2 * layers + 2) * per_layer)
