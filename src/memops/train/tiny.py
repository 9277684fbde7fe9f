"""A tiny Qwen2-architecture model built locally, for CPU runs and tests.

The tokenizer is a byte-level BPE trained on the project's own generated text, with the
Qwen2.5 special tokens and a chat template that renders system/user/assistant turns exactly
as Qwen2.5-Instruct's does, so prompts, label masks and stop tokens behave as on the real
model. The model is then briefly pretrained (all parameters, causal LM) on the same corpus:
LoRA on a randomly initialised base does not even learn the output format.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from memops.core.determinism import deterministic_cpu
from memops.core.locks import beside, exclusive

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
QWEN_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\n" + QWEN_DEFAULT_SYSTEM + "<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] != 'system' or not loop.first %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@dataclass(frozen=True)
class TinySpec:
    vocab_size: int = 4096
    hidden_size: int = 128
    intermediate_size: int = 384
    layers: int = 4
    heads: int = 4
    kv_heads: int = 2
    max_positions: int = 4096
    pretrain_steps: int = 200
    batch_size: int = 8
    seq_len: int = 384
    learning_rate: float = 3e-3
    seed: int = 0
    data_seed: int = 0
    scenarios_per_family: int = 12
    corpus_ops: tuple[str, ...] = ("extract", "compare", "update")
    """The operators whose chats the base is pretrained on. Part of the build's identity, so a
    new operator's adapters train on the same base, and its pinned losses hold."""


def corpus(spec: TinySpec) -> list[str]:
    """Chat-rendered examples of ``spec.corpus_ops`` from synthetic scenarios (never from
    trajectories)."""
    from memops.data.scenarios.generate import scenarios
    from memops.operators.registry import OPERATORS

    texts = []
    for episode in scenarios(spec.data_seed, spec.scenarios_per_family, spec.scenarios_per_family // 4, 2):
        rng = random.Random(f"tiny:{episode.id}")
        for name in spec.corpus_ops:
            examples = OPERATORS[name].examples(episode, rng, 1)
            texts += [render(ex["prompt"] + ex["completion"]) for ex in examples]
    return texts


def render(messages: list[dict[str, str]]) -> str:
    """The chat template in plain Python, for the tokenizer's training text only."""
    parts = []
    if messages[0]["role"] != "system":
        parts.append(f"<|im_start|>system\n{QWEN_DEFAULT_SYSTEM}<|im_end|>\n")
    parts += [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    return "".join(parts)


def build_tokenizer(texts: list[str], spec: TinySpec):  # -> PreTrainedTokenizerFast
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        chat_template=CHAT_TEMPLATE,
        model_max_length=spec.max_positions,
        clean_up_tokenization_spaces=False,
    )


def pretrain(texts: list[str], tokenizer, spec: TinySpec, log: bool = True):  # -> (model, final loss)
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    deterministic_cpu()
    torch.manual_seed(spec.seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen2ForCausalLM(config)
    ids = [i for text in texts for i in tokenizer(text)["input_ids"]]
    stream = torch.tensor(ids)
    rng = torch.Generator().manual_seed(spec.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=spec.learning_rate, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, spec.learning_rate, total_steps=spec.pretrain_steps
    )
    model.train()
    for step in range(spec.pretrain_steps):
        starts = torch.randint(0, len(stream) - spec.seq_len - 1, (spec.batch_size,), generator=rng)
        batch = torch.stack([stream[s : s + spec.seq_len] for s in starts])
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if log and (step % 50 == 0 or step == spec.pretrain_steps - 1):
            print(f"pretrain step {step:4d}  loss {loss.item():.3f}", flush=True)
    model.eval()
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=False
    )
    return model, float(loss.item())


def spec_key(spec: TinySpec) -> str:
    """Identity of a build: the spec and the source of everything that shapes the corpus."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(json.dumps(asdict(spec), sort_keys=True).encode())
    for rel in (
        "train/tiny.py",
        "operators/examples.py",
        "operators/registry.py",
        "data/scenarios/generate.py",
        "data/scenarios/phrasing.py",
        "data/scenarios/catalog.py",
        "core/records.py",
        "core/sessions.py",
        "operators/prompts.py",
        "operators/schemas.py",
    ):
        digest.update((root / rel).read_bytes())
    return digest.hexdigest()[:16]


def build(out: Path, spec: TinySpec = TinySpec(), force: bool = False, log: bool = True) -> Path:
    """Build (or reuse) the tiny model at ``out``; the build is deterministic for a spec. A process
    that needs the model while another builds it waits and reuses that build."""
    with exclusive(beside(out), "build of this model", wait=True):
        return _build(out, spec, force, log)


def _build(out: Path, spec: TinySpec, force: bool, log: bool) -> Path:
    key = spec_key(spec)
    stamp = out / "build.json"
    if not force and stamp.exists() and json.loads(stamp.read_text()).get("key") == key:
        if log:
            print(f"tiny model at {out} is up to date ({key})")
        return out
    started = time.perf_counter()
    texts = corpus(spec)
    tokenizer = build_tokenizer(texts, spec)
    model, loss = pretrain(texts, tokenizer, spec, log=log)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(out))
    model.save_pretrained(str(out), safe_serialization=True)
    info = {
        "key": key,
        "spec": asdict(spec),
        "final_loss": round(loss, 4),
        "seconds": round(time.perf_counter() - started, 1),
        "parameters": sum(p.numel() for p in model.parameters()),
        "corpus_texts": len(texts),
    }
    stamp.write_text(json.dumps(info, indent=2) + "\n")
    if log:
        print(f"tiny model: {info['parameters']:,} parameters, loss {loss:.3f}, {info['seconds']} s -> {out}")
    return out
