"""Run manifests: enough to say exactly what produced an output directory."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from memops.core.files import write_atomic

LIBRARIES = (
    "memops",
    "torch",
    "transformers",
    "peft",
    "trl",
    "accelerate",
    "datasets",
    "bitsandbytes",
    "xgrammar",
)


REPO = Path(__file__).resolve().parent.parent


def git_commit(repo: Path = REPO) -> str | None:
    """HEAD, ``+dirty`` with local changes; None outside a checkout or when git hangs (30 s)."""
    try:
        head, status = (
            subprocess.run(
                ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
            )
            for args in (["rev-parse", "HEAD"], ["status", "--porcelain"])
        )
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


def library_versions(names: Iterable[str] = LIBRARIES) -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def fingerprint(paths: Iterable[Path]) -> str:
    """sha256 over the files' relative names and bytes, in sorted order."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def write_manifest(out: Path, **fields: Any) -> dict[str, Any]:
    manifest = {"git_commit": git_commit(), "libraries": library_versions(), **fields}
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")
    return manifest
