"""Atomic writes: a failure while replacing a manifest, summary or report keeps the old file whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memops.core.files import write_atomic
from memops.data.manifest import write_manifest


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_manifest(tmp_path, seed=0)
    before = (tmp_path / "manifest.json").read_text()

    def full_disk(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)  # test double: a disk that fills at the rename
    with pytest.raises(OSError, match="No space left"):
        write_manifest(tmp_path, seed=1)
    assert (tmp_path / "manifest.json").read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_write_atomic_replaces_the_whole_file(tmp_path: Path) -> None:
    path = write_atomic(tmp_path / "report.md", "x" * 10_000)
    write_atomic(path, "short")
    assert path.read_text() == "short" and len(list(tmp_path.iterdir())) == 1
