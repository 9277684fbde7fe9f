"""The cluster fixture: root starts (and if needed installs) Slurm; anyone else skips, except on CI."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import unavailable
from tests.slurm.cluster import BINARIES, Cluster


@pytest.fixture(scope="session")
def slurm() -> Iterator[Cluster]:
    if os.geteuid() != 0:
        unavailable("the Slurm tests start munged, slurmctld and slurmd, which needs root", "Slurm")
    installed = all(shutil.which(b) for b in BINARIES)
    if not installed and not shutil.which("apt-get"):
        unavailable(
            f"Slurm is not installed ({', '.join(BINARIES)}) and there is no apt-get to install it", "Slurm"
        )
    # Not under pytest's own tmp folders: munged wants every folder above its socket
    # world-executable, and those are 0700.
    lab = Path(tempfile.mkdtemp(prefix="memops-slurm-"))
    try:
        cluster = Cluster.start(lab)
    except RuntimeError as exc:
        if not all(shutil.which(b) for b in BINARIES):
            unavailable(f"the Slurm packages could not be installed: {str(exc)[-1500:]}", "Slurm")
        raise
    yield cluster
    cluster.stop()
    shutil.rmtree(lab, ignore_errors=True)
