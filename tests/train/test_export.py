"""Merged export: the merged model answers as the adapter does, on the tiny model and SmolLM2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memops.core.models import load_model
from memops.operators.backends.hf import generate
from memops.train.export import trained_model
from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def prompts(datasets: Path, n: int = 6) -> list:
    rows = [json.loads(line) for line in (datasets / "patch-guardrails" / "compare" / "test.jsonl").open()]
    return [r["prompt"] for r in rows[:n]]


def adapter_answers(adapter: Path, chats: list) -> list[str]:
    """What the adapter answers as the backends run it: on the base as training loaded it."""
    from peft import PeftModel

    _, model_cfg = trained_model(adapter)
    base, tokenizer = load_model(model_cfg)
    model = PeftModel.from_pretrained(base, str(adapter)).eval()
    return generate(model, tokenizer, chats, max_tokens=24)[0]


def merged_answers(folder: Path, chats: list) -> list[str]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True, trust_remote_code=False).eval()
    return generate(model, AutoTokenizer.from_pretrained(folder), chats, max_tokens=24)[0]


def export(adapter: Path, out: Path) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "memops", "export-merged", str(adapter), "--out", str(out)]
    return subprocess.run(script, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_merged_tiny_model_answers_as_its_qlora_adapter(
    trained_adapters: Path, small_datasets: Path, tmp_path: Path
) -> None:
    trained_compare = trained_adapters / "compare"
    out = tmp_path / "merged"
    proc = export(trained_compare, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "model.safetensors").exists() and not list(out.glob("adapter_*"))
    assert json.loads((out / "merged.json").read_text())["dequantized_from_4bit"] is True
    assert "library_name: transformers" in (out / "README.md").read_text()
    chats = prompts(small_datasets)
    assert merged_answers(out, chats) == adapter_answers(trained_compare, chats)
    again = export(trained_compare, out)
    assert again.returncode != 0 and "--overwrite" in again.stderr


def test_the_merged_smollm2_answers_as_its_adapter(
    smollm2_adapters: Path, small_datasets: Path, tmp_path: Path
) -> None:
    adapter = smollm2_adapters / "compare"
    out = tmp_path / "merged"
    proc = export(adapter, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    chats = prompts(small_datasets, 4)
    merged = merged_answers(out, chats)
    assert merged == adapter_answers(adapter, chats)
    base_model, tokenizer = load_model(trained_model(adapter)[1])
    assert (
        merged != generate(base_model.eval(), tokenizer, chats, max_tokens=24)[0]
    )  # the merge did something


def test_an_adapter_without_a_manifest_is_refused(tmp_path: Path) -> None:
    proc = export(tmp_path, tmp_path / "out")
    assert proc.returncode != 0 and "no manifest.json" in proc.stderr
    assert not (tmp_path / "out").exists()
