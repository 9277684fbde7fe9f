"""The base model: its typed config and how it is loaded. Training and the local ``hf`` backend
both load it from here, so neither imports the other; the Slurm and LOO configs embed the config."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import MISSING

TRAINS: dict[str, Any] = {"trains": True}
"""Field metadata: the field decides what an adapter learns, so an adapter trained with another
value of it is not the one a run asks for (``train.config.trained_otherwise``). The other fields
change where it is written, how often it is logged, evaluated or saved, or how fast the same loss
is computed."""


@dataclass
class LoraSpec:
    r: int = field(default=16, metadata=TRAINS)
    alpha: int = field(default=32, metadata=TRAINS)
    dropout: float = field(default=0.05, metadata=TRAINS)
    target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        metadata=TRAINS,
    )
    layers_to_transform: list[int] | None = field(default=None, metadata=TRAINS)
    """peft's field: the decoder layers that get adapters; unset: every layer. The frozen layers
    below the lowest adapted one need no backward pass, which is the point of adapting only the
    top layers on a CPU."""


@dataclass
class ModelConfig:
    name: str = MISSING
    """Directory name under outputs/adapters/."""
    path: str = MISSING
    """Hub id or local directory; only safetensors weights are loaded, never remote code."""
    build: str | None = None
    """How the project builds ``path`` when it is missing (``train/builds.py``: tiny, smollm2);
    unset: ``path`` is a hub id or a directory you provide."""
    load_in_4bit: bool = field(default=True, metadata=TRAINS)
    quant_type: str = field(default="nf4", metadata=TRAINS)
    double_quant: bool = field(default=True, metadata=TRAINS)
    compute_dtype: str = field(default="bfloat16", metadata=TRAINS)
    attn_implementation: str = "sdpa"
    gradient_checkpointing: bool = True
    lora: LoraSpec = field(default_factory=LoraSpec)
    note: str | None = None
    """What the LOO report says of this model's learned rows (e.g. that they are a smoke test)."""
    hub_id: str | None = None
    """The base's id on the Hugging Face Hub, for adapter model cards (``base_model``); unset for
    a base that exists only here."""
    license: str | None = None
    """The base's licence (an SPDX-style id the Hub knows), copied into adapter model cards."""
    weights_gib: float | None = None
    """The base's weights on disk, for preflight's disk check before they are downloaded."""
    cpu_recipe: str | None = None
    """The recipe (``configs/recipe/``) that ``recipe=auto`` picks on a machine without CUDA;
    unset: the model has no CPU recipe and trains with the GPU one."""


MODEL_CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "model"


def model_config(name: str) -> ModelConfig:
    """``configs/model/<name>.yaml`` as a typed config, for scripts that do not run under Hydra."""
    from omegaconf import OmegaConf

    path = MODEL_CONFIGS / f"{name}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in MODEL_CONFIGS.glob("*.yaml")))
        raise ValueError(f"no model config {path}; known: {known}")
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ModelConfig), OmegaConf.load(path)))


BASE_FILES = ["*.json", "*.safetensors", "tokenizer*", "*.txt", "*.model", "*.tiktoken"]
"""What a hub base is fetched with: config, safetensors weights and tokenizer; never pickles."""


def on_hub(cfg: ModelConfig) -> bool:
    """The base is a Hub id: not a build of the project's and not a folder on this machine."""
    return cfg.build is None and not Path(cfg.path).exists()


def hub_cache(hf_home: str | None = None) -> Path:
    """The Hugging Face hub cache: ``<hf_home>/hub`` when given, else the one huggingface_hub
    resolves from the environment (``HF_HUB_CACHE``, ``HF_HOME``)."""
    if hf_home:
        return Path(hf_home).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def base_cached(cfg: ModelConfig, hf_home: str | None = None) -> bool:
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(cfg.path, "config.json", cache_dir=hub_cache(hf_home))
    return isinstance(found, str)


def check_base(cfg: ModelConfig) -> None:
    """With the Hub offline (as Slurm jobs run), a Hub base must already be in the cache: say so
    at once, with the fix, rather than deep inside transformers' download code."""
    from huggingface_hub import constants

    if on_hub(cfg) and constants.HF_HUB_OFFLINE and not base_cached(cfg):
        raise FileNotFoundError(
            f"base {cfg.path} is not in the Hugging Face cache at {hub_cache()} and the Hub is offline "
            f"(HF_HUB_OFFLINE=1): fetch it first with memops make-model {cfg.name} (the Slurm prepare "
            "job does), or give model.path=<a local folder>"
        )


def require_safetensors(path: str | Path) -> None:
    """Refuse a local model directory without safetensors weights, naming what it holds instead:
    a pickled checkpoint can run code when loaded, so it is never a fallback."""
    folder = Path(path)
    if not folder.is_dir() or any(folder.glob("*.safetensors")):
        return
    pickled = sorted(p.name for p in folder.iterdir() if p.suffix in (".bin", ".pt", ".pth", ".pkl"))
    found = f" (it holds {', '.join(pickled)}: pickled weights are never loaded)" if pickled else ""
    raise FileNotFoundError(f"{folder}: no safetensors weights{found}")


def load_model(cfg: ModelConfig):  # -> (model, tokenizer)
    """The base as both training and the local backend load it: safetensors only, no remote code."""
    import torch
    from accelerate import PartialState
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    dtype = getattr(torch, cfg.compute_dtype)
    quantization = (
        BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type=cfg.quant_type,
            bnb_4bit_use_double_quant=cfg.double_quant,
            bnb_4bit_compute_dtype=dtype,
            bnb_4bit_quant_storage=dtype,
        )
        if cfg.load_in_4bit
        else None
    )
    # DDP: one full copy per rank, on the rank's GPU. FSDP (slurm/accelerate/fsdp_qlora.yaml)
    # shards the model itself and needs it loaded without a device map.
    fsdp = os.environ.get("ACCELERATE_USE_FSDP", "false").lower() in ("1", "true")
    on_gpu = torch.cuda.is_available() and not fsdp
    device_map = {"": PartialState().local_process_index} if on_gpu else None
    check_base(cfg)
    require_safetensors(cfg.path)
    model = AutoModelForCausalLM.from_pretrained(
        cfg.path,
        quantization_config=quantization,
        dtype=dtype,
        attn_implementation=cfg.attn_implementation,
        device_map=device_map,
        use_safetensors=True,
        trust_remote_code=False,
    )
    tokenizer = AutoTokenizer.from_pretrained(cfg.path, trust_remote_code=False)
    return model, tokenizer
