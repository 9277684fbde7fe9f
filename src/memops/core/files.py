"""Writing a file so that a reader never sees half of it."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path``, flush it to disk, then rename it over
    ``path``: a crash or a full disk leaves the old file or the new one, never a torn one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
