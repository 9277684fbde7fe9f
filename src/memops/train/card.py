"""The model card of an adapter folder (``README.md``), in the format the Hub and peft read:
YAML front matter (``base_model``, ``library_name: peft``, tags, the base's licence), then what
the adapter is, how it was trained, and its held-out figures once a LOO run has scored it.

The card is written from the adapter's manifest and, when present, its ``heldout.json`` (what
``eval/loo.py`` records after scoring): one function rebuilds it from those two files, so a
refresh is a rewrite, and every write is atomic (a temporary file renamed over the old card).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from memops.core.files import write_atomic
from memops.core.layout import ADAPTER_MANIFEST

CARD = "README.md"
HELDOUT = "heldout.json"
"""An adapter's held-out figures: LOO run -> metric -> {mean, ci, n}."""


def front_matter(manifest: dict[str, Any]) -> dict[str, Any]:
    model, op = manifest["config"]["model"], manifest["config"]["op"]["name"]
    matter: dict[str, Any] = {"library_name": "peft", "pipeline_tag": "text-generation"}
    if model.get("hub_id"):
        matter["base_model"] = model["hub_id"]
    if model.get("license"):
        matter["license"] = model["license"]
    matter["tags"] = ["lora", "sft", "trl", "memory-operators", op]
    return matter


def _cell(stat: dict[str, Any]) -> str:
    if stat.get("mean") is None:
        return "–"
    low, high = stat["ci"]
    return f"{stat['mean']:.2f} [{low:.2f}, {high:.2f}] (n={stat['n']})"


def lora_layers(lora: dict[str, Any]) -> str:
    """Which decoder layers carry adapters, as a card reader wants it: all, a range, or a list."""
    chosen = sorted(set(lora.get("layers_to_transform") or []))
    if not chosen:
        return "every layer"
    if chosen == list(range(chosen[0], chosen[-1] + 1)):
        return f"layers {chosen[0]}-{chosen[-1]}"
    return f"layers {', '.join(map(str, chosen))}"


def validation_lines(check: dict[str, Any] | None) -> list[str]:
    """A decision adapter's answers on validation data right after training (train/validation.py),
    and the collapse guard's verdict."""
    if not check:
        return []
    names = {
        "split": "validation split",
        "contract": "contract suite, validation part",
        "real": "real trajectories (`real_validation`)",
    }
    lines = [
        "",
        "## Validation answers",
        "",
        "| set | n | exact match | calibrated | within the contract | answers | gold |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for key, name in names.items():
        if key not in check:
            continue
        c = check[key]
        mix = ", ".join(f"{k} {v}" for k, v in c["answers"].items())
        gold = ", ".join(f"{k} {v}" for k, v in c["gold"].items())
        shifted = f"{c['calibrated_accuracy']:.2f}" if "calibrated_accuracy" in c else "-"
        within = f"{c['within_contract_accuracy']:.2f}" if "within_contract_accuracy" in c else "-"
        lines.append(f"| {name} | {c['n']} | {c['accuracy']:.2f} | {shifted} | {within} | {mix} | {gold} |")
    lines.append("")
    if "offsets" in check:
        lines.append(
            "Calibrated: read with the per-answer offsets fitted on the other half of these rows "
            "(`decisions=calibrated` applies those fitted on all of them)."
        )
        lines.append("")
    if check["collapsed"]:
        lines.append(
            f"**Collapsed**: it answers `{check['collapsed']}` far more often than the gold holds it; "
            "runs and memories that load it warn."
        )
    else:
        lines.append("Not collapsed: no answer is given far more often than the gold holds it.")
    if check.get("dropped"):
        names = ", ".join(f"`{k}`" for k in check["dropped"])
        lines.append(f"**Dropped**: it (almost) never answers {names}, which the gold holds often.")
    if within := check.get("within_contract"):
        if within["collapsed"] or within["dropped"]:
            said = (
                f"answers `{within['collapsed']}` far more often than the gold holds it"
                if within["collapsed"]
                else f"(almost) never answers {', '.join(f'`{k}`' for k in within['dropped'])}"
            )
            lines.append(f"**Read within the contract** (`decisions=contract`, `judged`) it {said}.")
        else:
            lines.append("Read within the contract (`decisions=contract`, `judged`): neither flag.")
    return lines


def kept_checkpoint(manifest: dict[str, Any]) -> list[str]:
    """The checkpoint ``select=decisions`` kept, and each evaluated step's exact match."""
    if not manifest.get("selected_step"):
        return []
    curve = ", ".join(f"{step}: {acc:.2f}" for step, acc in manifest["checkpoint_answers"].items())
    return [f"| kept | step {manifest['selected_step']}, by validation answers ({curve}) |"]


def card_text(manifest: dict[str, Any], heldout: dict[str, Any] | None = None) -> str:
    cfg = manifest["config"]
    model, op, fold = cfg["model"], cfg["op"]["name"], cfg["fold"]
    base = model.get("hub_id") or model["name"]
    lines = [
        "---",
        yaml.safe_dump(front_matter(manifest), sort_keys=False).rstrip(),
        "---",
        "",
        f"# {op} adapter for {base}",
        "",
        f"A LoRA adapter for the `{op}` memory operator, trained with TRL's SFTTrainer on the `{fold}` "
        "fold of this project's operator datasets (fold `synthetic`: synthetic scenarios only, so every "
        "trajectory is held out; a trajectory's name: trained on the other trajectories and held out "
        "on that one).",
        "",
        "## Training",
        "",
        "| | |",
        "| --- | --- |",
        f"| base | `{base}` (`{model['path']}`) |",
        f"| recipe | `{cfg.get('recipe')}` |",
        f"| steps | {manifest['global_step']} |",
        *kept_checkpoint(manifest),
        f"| tokens | {manifest['tokens_seen']:,} |",
        f"| final train loss | {manifest['train_loss']:.4f} |",
        f"| final eval loss | {manifest['eval_loss']:.4f} |",
        f"| dataset fingerprint | `{manifest['dataset_fingerprint']}` |",
        f"| seed | {manifest['seed']} |",
        f"| device | {manifest['device']['device']}, {manifest['device']['precision']} |",
        f"| wall time | {manifest['wall_seconds']:.0f} s |",
        f"| LoRA | r={model['lora']['r']}, alpha={model['lora']['alpha']}, "
        f"{', '.join(model['lora']['target_modules'])}, {lora_layers(model['lora'])} |",
        f"| git commit | `{manifest.get('git_commit')}` |",
        *validation_lines(manifest.get("validation_decisions")),
        "",
        "## Held-out figures",
        "",
    ]
    if not heldout:
        lines.append("Not scored yet: `memops loo` writes them here once a run has scored this adapter.")
    else:
        lines += [
            "Exact match (compare, update) or claim F1 (extract) on held-out trajectories, means with "
            "bootstrap 95% CIs, per leave-one-out run that scored this adapter.",
            "",
            "| run | metric | held-out |",
            "| --- | --- | --- |",
        ]
        for run, metrics in sorted(heldout.items()):
            lines += [f"| {run} | {metric} | {_cell(stat)} |" for metric, stat in metrics.items()]
    lines += [
        "",
        "## Use",
        "",
        "Serve it with vLLM (`--enable-lora --lora-modules "
        f"{op}=<this folder>`) or load it with peft's `PeftModel.from_pretrained`; the prompts it "
        "expects are `operators/prompts.py`'s. The folder's `manifest.json` records everything above "
        "and the full config.",
        "",
    ]
    return "\n".join(lines)


def write_card(adapter: str | Path) -> Path:
    """(Re)write ``adapter/README.md`` from its manifest and held-out figures."""
    adapter = Path(adapter)
    manifest_path = adapter / ADAPTER_MANIFEST
    if not manifest_path.exists():
        raise FileNotFoundError(f"{adapter}: no {ADAPTER_MANIFEST}, so no finished adapter to describe")
    manifest = json.loads(manifest_path.read_text())
    heldout_path = adapter / HELDOUT
    heldout = json.loads(heldout_path.read_text()) if heldout_path.exists() else None
    write_atomic(adapter / CARD, card_text(manifest, heldout))
    return adapter / CARD


def record_heldout(adapter: str | Path, run: str, figures: dict[str, Any]) -> None:
    """Store one LOO run's figures for this adapter and refresh its card, both atomically."""
    adapter = Path(adapter)
    path = adapter / HELDOUT
    stored = json.loads(path.read_text()) if path.exists() else {}
    if stored.get(run) == figures:
        return
    stored[run] = figures
    write_atomic(path, json.dumps(stored, indent=2, sort_keys=True) + "\n")
    write_card(adapter)
