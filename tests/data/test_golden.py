"""The default build, byte for byte: every JSONL the pipeline writes with the defaults (seed 0, the
shipped trajectories, the stage examples) has the sha256 recorded in
tests/fixtures/datasets.sha256. A change that moves any example fails here; one that means to
regenerates the file (`sha256sum` of each JSONL, paths relative to the datasets folder)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from memops.data.config import DataConfig
from memops.data.pipeline import build
from tests.conftest import ROOT

GOLDEN = ROOT / "tests" / "fixtures" / "datasets.sha256"


def test_the_default_build_is_byte_identical_to_the_recorded_one(tmp_path: Path, export_dir: Path) -> None:
    cfg = DataConfig(
        datasets_dir=str(tmp_path),
        exports=[str(export_dir)],
        extract_stages=True,
        progress=False,
    )
    build(cfg)
    got = {
        str(p.relative_to(tmp_path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(tmp_path.rglob("*.jsonl"))
    }
    want = {path: digest for digest, path in (line.split() for line in GOLDEN.read_text().splitlines())}
    assert len(want) == 71
    # Every recorded file is pinned; a new operator's datasets are new files and move none of them.
    changed = sorted(p for p in want if want[p] != got.get(p))
    assert not changed, f"{len(changed)} of {len(want)} files differ, e.g. {changed[:5]}"
