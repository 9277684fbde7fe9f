"""An adapter directory as ``train.py`` leaves it, checked before a backend or a server loads it.

A half-copied, truncated or unfinished adapter fails here with the adapter's name and the file
at fault, rather than as a library error from inside peft or vLLM.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from memops.core.layout import ADAPTER_MANIFEST, adapter_finished, checkpoint_complete
from memops.operators.backends import BackendError
from memops.operators.offsets import Offsets

WEIGHTS = "adapter_model.safetensors"
CONFIG = "adapter_config.json"


def safetensors_problem(path: Path) -> str | None:
    """Why the file is not a whole safetensors file (its header promises more bytes than it
    holds, or none can be read), or None; read from the header alone, nothing is loaded."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            return f"{size} bytes, too short for a safetensors header"
        length = int.from_bytes(head, "little")
        if 8 + length > size:
            return f"its header claims {length} bytes, the file holds {size}"
        try:
            header = json.loads(f.read(length))
        except ValueError:
            return "its header is not JSON"
    ends = [t["data_offsets"][1] for name, t in header.items() if name != "__metadata__"]
    expected = 8 + length + max(ends, default=0)
    if expected != size:
        return f"the header describes {expected} bytes, the file holds {size} (truncated?)"
    return None


def collapse_warning(name: str, manifest: dict[str, Any]) -> str | None:
    """One line for a run or a memory that loads an adapter flagged collapsed or with a label
    dropped, read free or within the contract (``decisions=contract`` and ``judged``, which read
    only the adapter's judgment of values); what the other reading says ends the line. None for
    an adapter neither reading flags."""
    check = manifest.get("validation_decisions") or {}
    free = _verdict(check.get("collapsed"), check.get("dropped"))
    within = check.get("within_contract")  # absent from adapters trained before it was read
    contract = within and _verdict(within["collapsed"], within["dropped"])
    if free:
        said, answers = free, check["contract"]["answers"]
        if within is None:
            then = ""
        elif contract:
            then = f"; read within the contract it {contract}"
        else:
            then = "; read within the contract (decisions=contract, judged) it is not"
    elif contract:
        said, answers = f"read within the contract {contract}", check["contract"]["within_contract_answers"]
        then = "; read free it is not"
    else:
        return None
    # Most given first, whatever order the read or its JSON (sorted keys) left the answers in.
    mix = ", ".join(f"{k} {v}" for k, v in sorted(answers.items(), key=lambda kv: (-kv[1], kv[0])))
    return (
        f"warning: the {name} adapter {said} (contract suite's validation part: {mix}); "
        f"its decisions follow its own label mix, not the inputs{then}"
    )


def _verdict(label: str | None, missing: list[str] | None) -> str | None:
    """What the guard saw, in words: the answer the adapter piles on, or the labels it dropped."""
    if label:
        return f"answered {label!r} for most validation inputs, far more often than the gold"
    if missing:
        return f"(almost) never answered {', '.join(map(repr, missing))}, which the gold holds often"
    return None


WARNED: set[tuple[str, Path]] = set()
"""The collapsed adapters this process has warned about: one line each, however often loaded."""


def check_adapter(name: str, path: str | Path) -> dict[str, Any]:
    """The adapter's ``adapter_config.json``, once the directory passes every check."""
    folder = Path(path)
    where = f"adapter {name!r} ({folder})"
    if not folder.is_dir():
        raise BackendError(f"{where}: no such directory")
    if not (folder / CONFIG).exists():
        raise BackendError(f"{where}: no {CONFIG}")
    try:
        config = json.loads((folder / CONFIG).read_text())
        int(config["r"])
    except (ValueError, KeyError, TypeError) as e:
        raise BackendError(f"{where}: {CONFIG} is not a LoRA config ({type(e).__name__}: {e})") from e
    if not (folder / WEIGHTS).exists():
        raise BackendError(f"{where}: no {WEIGHTS} (was its training finished?)")
    if problem := safetensors_problem(folder / WEIGHTS):
        raise BackendError(f"{where}: {WEIGHTS} is damaged: {problem}")
    # A finished adapter, or a whole Trainer checkpoint (a learning-curve point): core.layout's rules.
    if not (adapter_finished(folder) or checkpoint_complete(folder)):
        raise BackendError(f"{where}: no {ADAPTER_MANIFEST}, so its training never finished")
    warn_if_collapsed(name, folder)
    return config


def warn_if_collapsed(name: str, folder: Path) -> None:
    """Say once per process that a finished adapter was flagged collapsed (``collapse_warning``)."""
    seen = (name, folder.resolve())
    if seen in WARNED or not adapter_finished(folder):
        return
    if warning := collapse_warning(name, read_manifest(folder)):
        WARNED.add(seen)
        print(warning, file=sys.stderr, flush=True)


def calibration(name: str, folder: Path) -> Offsets:
    """The offsets a finished decision adapter's validation answers fitted (``decisions=calibrated``)."""
    fitted = (read_manifest(folder).get("validation_decisions") or {}).get("offsets")
    if fitted is None:
        raise BackendError(
            f"adapter {name!r} ({folder}): its manifest holds no fitted offsets (trained before "
            "they were fitted, or not a decision adapter); use decisions=read, or train it again"
        )
    return Offsets.from_json(fitted)


def read_manifest(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / ADAPTER_MANIFEST).read_text())
    except (OSError, ValueError) as e:
        raise BackendError(f"adapter {folder}: {ADAPTER_MANIFEST} cannot be read ({e})") from e
