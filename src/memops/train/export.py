"""Merge an adapter into its base, for runtimes without LoRA support: a plain safetensors model
folder with its tokenizer, generation config and model card.

The merged weights compute what the adapter computed in training. For a 4-bit base (QLoRA) that
is the dequantized NF4 weight plus the LoRA update, so the base is dequantized first and the merge
runs in the compute dtype; merging into the 4-bit layers instead would quantize the sum again
and change the model.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from memops.core.layout import ADAPTER_MANIFEST
from memops.core.models import ModelConfig, load_model
from memops.train.card import CARD, front_matter

MERGED_MANIFEST = "merged.json"


def trained_model(adapter: Path) -> tuple[dict[str, Any], ModelConfig]:
    manifest_path = adapter / ADAPTER_MANIFEST
    if not manifest_path.exists():
        raise FileNotFoundError(f"{adapter}: no {ADAPTER_MANIFEST}; only a finished adapter can be merged")
    manifest = json.loads(manifest_path.read_text())
    schema = OmegaConf.structured(ModelConfig)
    return manifest, OmegaConf.to_object(OmegaConf.merge(schema, manifest["config"]["model"]))


def merged_model(adapter: Path):  # -> (transformers model, tokenizer)
    """The base as training loaded it, dequantized if 4-bit, with the adapter merged in."""
    from peft import PeftModel

    _, model_cfg = trained_model(adapter)
    base, tokenizer = load_model(model_cfg)
    if model_cfg.load_in_4bit:
        base = base.dequantize()
    merged = PeftModel.from_pretrained(base, str(adapter)).merge_and_unload()
    return merged, tokenizer


def export_merged(adapter: str | Path, out: str | Path, overwrite: bool = False) -> Path:
    """Write the merged model to ``out``: safetensors weights, tokenizer, generation config, a
    model card and ``merged.json`` (what was merged). Staged beside ``out`` and renamed into place,
    so an interrupted export leaves no half-written folder."""
    adapter, out = Path(adapter), Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass --overwrite to replace it")
    manifest, model_cfg = trained_model(adapter)
    model, tokenizer = merged_model(adapter)
    staging = out.with_name(f".{out.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(str(staging), safe_serialization=True)
    tokenizer.save_pretrained(str(staging))
    shutil.copy2(adapter / "generation_config.json", staging / "generation_config.json")
    record = {
        "adapter": str(adapter.resolve()),
        "adapter_git_commit": manifest.get("git_commit"),
        "base": model_cfg.hub_id or model_cfg.path,
        "dequantized_from_4bit": model_cfg.load_in_4bit,
        "dtype": model_cfg.compute_dtype,
    }
    (staging / MERGED_MANIFEST).write_text(json.dumps(record, indent=2) + "\n")
    matter = {**front_matter(manifest), "tags": [*front_matter(manifest)["tags"], "merged"]}
    matter.pop("library_name")  # a plain transformers model now, not a peft adapter
    matter["library_name"] = "transformers"
    card = [
        "---",
        yaml.safe_dump(matter, sort_keys=False).rstrip(),
        "---",
        "",
        f"# {manifest['config']['op']['name']} operator, merged into {record['base']}",
        "",
        f"The adapter at `{record['adapter']}` merged into its base"
        + (" (dequantized from NF4 first)" if model_cfg.load_in_4bit else "")
        + f", saved in {model_cfg.compute_dtype}. The adapter's own card says how it was trained and "
        "how it scored; `merged.json` says what was merged.",
        "",
    ]
    (staging / CARD).write_text("\n".join(card))
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    return out
