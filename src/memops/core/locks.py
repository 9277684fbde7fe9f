"""One writer per output folder: a dataset build, a LOO run, an adapter's training, a model build.

The lock is ``flock`` on a small file that holds the owner's pid. The kernel releases it when
the owner exits, however it exits, so a lock left by a dead process is free to take: only a
live owner blocks. The second process is told which one at once instead of waiting, except
where waiting is the answer: a model another process is building is the one this one needs.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class Busy(RuntimeError):
    """Another live process holds the folder's lock."""


def beside(folder: str | Path) -> Path:
    """The lock file of an output folder: hidden beside it, so that the folder can be replaced
    whole (a model's finished build renamed into place) while its lock is held."""
    folder = Path(folder)
    return folder.parent / f".{folder.name}.lock"


@contextmanager
def exclusive(lock_file: str | Path, what: str, wait: bool = False) -> Iterator[None]:
    """Hold ``lock_file`` for the block; :class:`Busy` names the folder and the owner's pid, or
    with ``wait`` the block starts once the owner has let go."""
    path = Path(lock_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            owner = f.read().strip() or "unknown"
            raise Busy(f"another {what} is running in {path.parent} (pid {owner})") from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
