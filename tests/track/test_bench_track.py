"""``benchmarks/bench_track.py``'s verdicts: the truth is what the miner's readers read at the
tip, and a memory's value is right only where, in its slot type's one spelling, it is that value."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from memops.data.catalog import slots_read
from memops.track.git import start
from tests.conftest import ROOT
from tests.data.test_export import git

spec = importlib.util.spec_from_file_location("bench_track", ROOT / "benchmarks" / "bench_track.py")
assert spec and spec.loader
bench_track = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_track)


def test_the_truth_is_the_readers_and_a_respelling_is_right(tmp_path: Path) -> None:
    repo = tmp_path / "lib"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "pyproject.toml").write_text(
        '[build-system]\nbuild-backend = "hatchling.build"\n[project]\nrequires-python = ">= 3.9.0"\n'
        'license = "MIT"\n'
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Package", date="2024-03-01T10:00:00+01:00")
    truth = bench_track.truth(repo, bench_track.tip(repo, "HEAD"))
    assert truth == {
        "build.backend": "hatchling.build",
        "python.supported_versions": ">=3.9",
        "project.license": "MIT",
    }
    held = {"build.backend": "hatchling", "python.supported_versions": ">=3.8", "tests.runner": "pytest"}
    rows = {r["slot"]: r["verdict"] for r in bench_track.verdicts(truth, held)}
    assert rows["build.backend"] == "right"  # hatchling is hatchling.build
    assert rows["python.supported_versions"] == "wrong"
    assert rows["project.license"] == "missed" and rows["tests.runner"] == "no fact"


def test_a_window_counts_apart_the_facts_its_commits_set(tmp_path: Path) -> None:
    """With ``--since``, a fact the commits read never touched is not theirs to state."""
    repo = tmp_path / "lib"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.8"\nlicense = "MIT"\n')
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Package", date="2024-03-01T10:00:00+01:00")
    (repo / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.9"\nlicense = "MIT"\n')
    git(repo, "commit", "-q", "-am", "Drop 3.8", date="2024-06-01T10:00:00+01:00")
    read_from = slots_read("python-project")
    base = start(repo, "HEAD", "2024-05-01", read_from)
    assert base is not None and start(repo, "HEAD", "2024-01-01", read_from) is None
    rows = bench_track.verdicts(
        bench_track.truth(repo, bench_track.tip(repo, "HEAD")), {}, bench_track.truth(repo, base.sha)
    )
    changed = {r["slot"]: r["changed"] for r in rows if r["fact"]}
    assert changed == {"python.supported_versions": True, "project.license": False}
