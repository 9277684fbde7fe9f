"""Swap a staged build into place so that a kill at any moment leaves a complete set.

Moving several folders into place cannot be one atomic step. A journal, written before the
first move and removed after the last, says a swap is under way; the next build reads it and
puts the previous set back (``recover``) before doing anything else. So after any kill, a rerun
starts from the old complete set and ends with the new one, never a missing fold, and
``core.layout.unready`` reads the journal as "nothing is ready".
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from memops.core.layout import DATASETS_JOURNAL as JOURNAL


def _old(out: Path, name: str) -> Path:
    return out / f".{name}.old"


def publish(staging: Path, out: Path, names: list[str]) -> None:
    """Move ``staging/<name>`` to ``out/<name>`` for every name, replacing what is there."""
    out.mkdir(parents=True, exist_ok=True)
    journal = out / JOURNAL
    pending = out / f"{JOURNAL}.tmp"
    existed = [name for name in names if (out / name).exists()]
    pending.write_text(json.dumps({"names": names, "existed": existed}) + "\n")
    os.replace(pending, journal)
    for name in names:
        if (out / name).exists():
            os.rename(out / name, _old(out, name))
        os.rename(staging / name, out / name)
    os.unlink(journal)
    for name in names:
        _remove(_old(out, name))


def recover(out: Path) -> list[str]:
    """Undo a swap that was killed part way (put every previous fold and file back), and clear
    what a finished swap left behind. Returns the names that were put back."""
    journal = out / JOURNAL
    restored = []
    if journal.exists():
        swap = json.loads(journal.read_text())
        for name in swap["names"]:
            old = _old(out, name)
            if old.exists():  # moved aside: whatever sits in its place is new
                _remove(out / name)
                os.rename(old, out / name)
                restored.append(name)
            elif name not in swap["existed"]:  # new, with nothing before it
                _remove(out / name)
            # else: not reached yet, the old one is still in place
        os.unlink(journal)
    for stale in [*out.glob(".*.old"), out / f"{JOURNAL}.tmp"]:
        _remove(stale)
    return restored


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
