"""Proof that training learns: the tiny base memorises 12 compare examples through LoRA.

A tiny model cannot learn the compare rule well enough to generalise on CPU (held-out accuracy
stays at chance), so learning is shown on a fixed training set: the completion loss falls
below 0.1 and constrained greedy decoding reproduces the labels, while the base alone sits at
chance (six labels: 1/6).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

EXAMPLES = 12
"""How many compare examples the adapter memorises: two per label."""

RECIPE = [
    "op=compare",
    "model=tiny",
    "recipe=gpu",  # these settings alone, not the CPU recipe's 30-step budget
    "op.epochs=30",
    "op.learning_rate=3e-3",
    "op.per_device_batch=1",  # one packed row per step: many small updates memorise fastest
    "op.grad_accum=1",
    "op.max_length=1024",
    "model.gradient_checkpointing=false",
    "eval_steps=10000",
    "save_steps=10000",
]


def stratified(rows: list[dict], n: int) -> list[dict]:
    by_label: dict[str, list[dict]] = {}
    for row in rows:
        by_label.setdefault(row["label"], []).append(row)
    picked: list[dict] = []
    depth = 0
    while len(picked) < n:
        for label in sorted(by_label):
            if len(picked) < n and depth < len(by_label[label]):
                picked.append(by_label[label][depth])
        depth += 1
    return picked


def exact_match(model, tokenizer, rows: list[dict]) -> tuple[float, int]:
    from memops.operators.backends.hf import SchemaCompiler, generate
    from memops.operators.schemas import CompareOutput, json_schema

    grammar = SchemaCompiler(tokenizer, model.config.vocab_size)(json_schema(CompareOutput))
    hits = invalid = 0
    for i in range(0, len(rows), 16):
        chunk = rows[i : i + 16]
        texts, _ = generate(model, tokenizer, [r["prompt"] for r in chunk], 32, [grammar] * len(chunk))
        for row, text in zip(chunk, texts, strict=True):
            try:
                got = CompareOutput.model_validate_json(text)
            except ValueError:
                invalid += 1
                continue
            hits += got == CompareOutput.model_validate_json(row["completion"][0]["content"])
    return hits / len(rows), invalid


def test_lora_memorises_12_compare_examples(tiny_model: Path, small_datasets: Path, tmp_path: Path) -> None:
    from datasets import Dataset, DatasetDict
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    rows = [
        json.loads(x) for x in (small_datasets / "all" / "compare" / "train.jsonl").read_text().splitlines()
    ]
    picked = stratified(rows, EXAMPLES)
    assert len({r["label"] for r in picked}) == 6
    data = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in picked])
    DatasetDict(train=data, validation=data).save_to_disk(str(tmp_path / "ds" / "all" / "compare"))

    proc = subprocess.run(
        [
            sys.executable,
            "train.py",
            *RECIPE,
            f"datasets_dir={tmp_path / 'ds'}",
            f"adapters_dir={tmp_path / 'ad'}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "ad" / "tiny" / "all" / "compare"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["eval_loss"] < 0.1  # completion-only loss on the examples it trained on

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    base = AutoModelForCausalLM.from_pretrained(tiny_model, use_safetensors=True)
    base_em, base_invalid = exact_match(base, tokenizer, picked)
    tuned = PeftModel.from_pretrained(base, out)
    tuned_em, tuned_invalid = exact_match(tuned, tokenizer, picked)
    print(
        f"memorisation: eval loss {manifest['eval_loss']:.4f}, steps {manifest['global_step']}, "
        f"{manifest['wall_seconds']} s; exact match base {base_em:.3f}, adapter {tuned_em:.3f}"
    )
    assert base_invalid == tuned_invalid == 0  # the grammar makes every output parse
    assert tuned_em >= 0.9
    assert base_em <= 0.4  # chance is 1/6
