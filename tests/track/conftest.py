"""The PostgreSQL fixture: a real server for the session (see tests/track/postgres.py); skipped
where it cannot be had, except on CI."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import unavailable
from tests.track.postgres import Server, binaries


@pytest.fixture(scope="session")
def postgres() -> Iterator[Server]:
    pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    if binaries() is None and (os.geteuid() != 0 or not shutil.which("apt-get")):
        unavailable(
            "no PostgreSQL server is installed, and only root with apt-get installs one", "PostgreSQL"
        )
    # Not under pytest's own tmp folders (0700): the server runs as postgres when root.
    lab = Path(tempfile.mkdtemp(prefix="memops-postgres-"))
    try:
        server = Server.start(lab)
    except RuntimeError as exc:
        shutil.rmtree(lab, ignore_errors=True)
        if binaries() is None:
            unavailable(f"the PostgreSQL server could not be installed: {str(exc)[-1500:]}", "PostgreSQL")
        raise
    yield server
    server.stop()
