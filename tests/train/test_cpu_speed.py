"""The CPU recipe's speed-ups change how the loss is computed, never what it is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memops.core.models import LoraSpec, ModelConfig
from memops.train.config import OpConfig, TrainConfig
from memops.train.cpu import labelled_positions_only, native_bf16
from memops.train.recipe import precision


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


def test_a_slurm_task_takes_the_cores_it_was_granted(monkeypatch: pytest.MonkeyPatch) -> None:
    from memops.core.determinism import cpu_threads

    cores = len(os.sched_getaffinity(0))
    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
    assert cpu_threads() == cores
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "1")
    assert cpu_threads() == 1
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", str(cores + 8))  # more than this machine has
    assert cpu_threads() == cores


def packed_row(vocab: int, lengths: list[int]):
    """One padding-free row of examples of these lengths, as TRL's collator lays it out."""
    import torch

    ids = torch.randint(0, vocab, (1, sum(lengths)), generator=torch.Generator().manual_seed(0))
    positions = torch.cat([torch.arange(n) for n in lengths]).unsqueeze(0)
    starts = torch.tensor([0, *lengths]).cumsum(0).to(torch.int32)
    return ids, positions, starts


def test_attention_per_packed_example_is_each_example_on_its_own(tiny_model: Path) -> None:
    """``packed_attention=segments`` gives a packed row the logits of its examples run one by one,
    whether the boundaries come as TRL's ``cu_seq_lens_q`` or only as ``position_ids``; the masked
    sdpa it replaces gives the same to float rounding."""
    import torch
    from transformers import AutoModelForCausalLM

    from memops.train.attention import attend_per_example

    model = AutoModelForCausalLM.from_pretrained(tiny_model, use_safetensors=True, attn_implementation="sdpa")
    lengths = [40, 7, 81]
    ids, positions, starts = packed_row(model.config.vocab_size, lengths)
    with torch.no_grad():
        masked = model(input_ids=ids, position_ids=positions, use_cache=False).logits
        attend_per_example(model, "segments")
        parts = ids.split(lengths, dim=1)
        alone = torch.cat([model(input_ids=part, use_cache=False).logits for part in parts], dim=1)
        by_positions = model(input_ids=ids, position_ids=positions, use_cache=False).logits
        by_bounds = model(
            input_ids=ids, position_ids=positions, cu_seq_lens_q=starts, cu_seq_lens_k=starts, use_cache=False
        ).logits
    torch.testing.assert_close(by_positions, alone, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(by_bounds, alone, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(masked, alone, rtol=1e-4, atol=1e-4)
    one_long_example = model(input_ids=ids, use_cache=False).logits
    assert not torch.allclose(one_long_example, alone, atol=1e-3)


def test_a_shared_prefix_row_gives_the_logits_of_the_whole_row(tiny_model: Path) -> None:
    """Three examples that open with the same 20 tokens: the row with those tokens cut from the
    second and third gives, at every token it keeps, the logits of the uncut row run per example;
    the collator cuts exactly the shared start, short of the first label."""
    import torch
    from transformers import AutoModelForCausalLM

    from memops.train.attention import attend_per_example, cut_shared_prefix

    model = AutoModelForCausalLM.from_pretrained(tiny_model, use_safetensors=True, attn_implementation="sdpa")
    attend_per_example(model, "segments")
    lengths = [40, 27, 61]
    ids, positions, starts = packed_row(model.config.vocab_size, lengths)
    for a in starts[1:-1].tolist():
        ids[0, a : a + 20] = ids[0, :20]
    labels = ids.clone()
    for a in starts[:-1].tolist():
        labels[0, a : a + 24] = -100  # the prompts: 24 tokens each
    batch = {"input_ids": ids, "labels": labels, "position_ids": positions, "cu_seq_lens_q": starts}
    cut = cut_shared_prefix(batch)
    assert cut["input_ids"].shape[1] == sum(lengths) - 2 * 20
    assert cut["cu_seq_lens_q"].tolist() == [0, 40, 47, 88]
    assert cut["position_ids"][0, 40:43].tolist() == [20, 21, 22]
    kept = torch.ones(sum(lengths), dtype=torch.bool)
    for a in starts[1:-1].tolist():
        kept[a : a + 20] = False
    assert torch.equal(cut["labels"][0], labels[0, kept])
    with torch.no_grad():
        whole = model(input_ids=ids, position_ids=positions, use_cache=False).logits[0, kept]
        shared = model(input_ids=cut["input_ids"], position_ids=cut["position_ids"], use_cache=False)
    shared = shared.logits[0]
    torch.testing.assert_close(shared, whole, rtol=1e-5, atol=1e-5)

    labels[0, starts[1] + 5] = 7  # a label inside the shared start: the cut stops short of it
    assert cut_shared_prefix({**batch, "labels": labels})["input_ids"].shape[1] == sum(lengths) - 2 * 4


def test_attention_per_packed_example_leaves_padded_batches_and_decoding_to_sdpa(tiny_model: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from memops.train.attention import attend_per_example

    model = AutoModelForCausalLM.from_pretrained(tiny_model, use_safetensors=True, attn_implementation="sdpa")
    ids = torch.randint(0, model.config.vocab_size, (2, 30), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :9] = 0  # left padding
    with torch.no_grad():
        before = model(input_ids=ids, attention_mask=mask).logits
        greedy = model.generate(ids[:1], max_new_tokens=6, do_sample=False)
        attend_per_example(model, "segments")
        assert model.config._attn_implementation == "sdpa_segments"
        torch.testing.assert_close(model(input_ids=ids, attention_mask=mask).logits, before, rtol=0, atol=0)
        assert torch.equal(model.generate(ids[:1], max_new_tokens=6, do_sample=False), greedy)


def test_attention_per_packed_example_refuses_another_kernel(tiny_model: Path) -> None:
    from transformers import AutoModelForCausalLM

    from memops.train.attention import attend_per_example

    model = AutoModelForCausalLM.from_pretrained(
        tiny_model, use_safetensors=True, attn_implementation="eager"
    )
    with pytest.raises(ValueError, match="packed_attention=mask"):
        attend_per_example(model, "segments")


def test_varlen_attention_is_refused_off_cuda(tiny_model: Path) -> None:
    """torch's flash-attention varlen kernel exists on CUDA alone: a CPU model is told to use
    ``segments`` instead of failing inside the first forward pass."""
    import torch
    from transformers import AutoModelForCausalLM

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: varlen is allowed (tests/train/test_attention_cuda.py)")

    from memops.train.attention import attend_per_example

    model = AutoModelForCausalLM.from_pretrained(tiny_model, use_safetensors=True, attn_implementation="sdpa")
    with pytest.raises(ValueError, match=r"needs CUDA.*packed_attention=segments"):
        attend_per_example(model, "varlen")
    assert model.config._attn_implementation == "sdpa"


def test_a_packed_training_run_learns_the_same_with_either_attention(
    tiny_model: Path, small_datasets: Path, tmp_path: Path
) -> None:
    """train.py's own path, three steps of packed compare rows each way: the same losses to
    float rounding, and the manifest says which attention ran. Without LoRA dropout, as in the
    SmolLM2 recipe: its masks are drawn per token, so a row with fewer tokens draws others.
    ``shared_prefix`` runs fewer tokens for it."""
    from memops.train.recipe import train_adapter

    seen = {}

    def losses(attention: str) -> list[float]:
        cfg = TrainConfig(
            op=OpConfig(
                name="compare", max_length=1024, per_device_batch=1, grad_accum=1, learning_rate=1e-3
            ),
            model=ModelConfig(
                name="tiny",
                path=str(tiny_model),
                compute_dtype="float32",
                lora=LoraSpec(dropout=0.0),
                cpu_recipe="cpu",  # as configs/model/tiny.yaml has it: a model this machine may train
            ),
            fold="patch-guardrails",
            max_steps=3,
            datasets_dir=str(small_datasets),
            adapters_dir=str(tmp_path / attention),
            packed_attention=attention,
            report_to="none",
            logging_steps=1,
            eval_steps=1000,
            save_steps=1000,
            prepare=False,
        )
        manifest = train_adapter(cfg)
        assert manifest["device"]["packed_attention"] == attention
        seen[attention] = manifest["tokens_seen"]
        return [e["loss"] for e in manifest["log_history"] if "loss" in e]

    mask, segments, shared = losses("mask"), losses("segments"), losses("shared_prefix")
    assert len(mask) == 3
    assert segments == pytest.approx(mask, rel=2e-3)
    assert shared == pytest.approx(segments, rel=2e-3)
    assert seen["shared_prefix"] < 0.9 * seen["segments"]


def test_lora_on_the_top_layers_leaves_the_layers_below_without_a_backward_pass(tiny_model: Path) -> None:
    """peft's ``layers_to_transform``: adapters only where it says, and no gradient reaches a
    hidden state below the lowest adapted layer."""
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    from memops.train.recipe import lora_config

    model = AutoModelForCausalLM.from_pretrained(tiny_model, use_safetensors=True)
    layers = model.config.num_hidden_layers
    top = LoraSpec(layers_to_transform=[layers - 1])
    peft_model = get_peft_model(model, lora_config(top))
    adapted = {n.split(".layers.")[1].split(".")[0] for n, _ in peft_model.named_parameters() if "lora_" in n}
    assert adapted == {str(layers - 1)}
    ids = torch.randint(0, model.config.vocab_size, (1, 16), generator=torch.Generator().manual_seed(0))
    hidden = peft_model(input_ids=ids, output_hidden_states=True).hidden_states
    # hidden_states[i] is the input of layer i: only the last layer's output carries a gradient
    assert [h.requires_grad for h in hidden] == [False] * layers + [True]
