"""An adapter directory as ``train.py`` leaves it, checked before a backend or a server loads it.

A half-copied, truncated or unfinished adapter fails here with the adapter's name and the file
at fault, rather than as a library error from inside peft or vLLM.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memops.core.layout import ADAPTER_MANIFEST, adapter_finished, checkpoint_complete
from memops.operators.backends import BackendError

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
    return config
