"""Bring your own repository, end to end as the README tells it: a git history with a revert,
exported, annotated in a folder outside data/trajectories/, validated, built, replayed and
scored in a symbolic LOO fold, through annotations=[...] and exports=[...] alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.data.test_export import git

NAME = "cache-history"
TEMPLATE = ROOT / "tests" / "fixtures" / "byor" / f"{NAME}.yaml"


def make_repo(path: Path) -> list[str]:
    """Four commits: Redis 6, CI moved, Memcached, and a revert of the Memcached switch."""
    path.mkdir()
    git(path, "init", "-q")
    steps = [
        ("2024-01-10T10:00:00+00:00", "cache.toml", 'backend = "redis-6"\n', "Use Redis 6 as the cache"),
        ("2024-02-01T10:00:00+00:00", "ci.yml", "provider: github-actions\n", "Move CI to GitHub Actions"),
        (
            "2024-03-05T10:00:00+00:00",
            "cache.toml",
            'backend = "memcached"\n',
            "Switch the cache to Memcached",
        ),
    ]
    for date, file, text, subject in steps:
        (path / file).write_text(text)
        git(path, "add", ".")
        git(path, "commit", "-q", "-m", subject, date=date)
    git(path, "revert", "--no-edit", "HEAD", date="2024-03-20T10:00:00+00:00")
    return git(path, "rev-list", "--reverse", "HEAD").split()


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_a_repository_kept_outside_the_checkout_goes_from_git_log_to_a_loo_fold(
    tmp_path: Path, export_dir: Path
) -> None:
    shas = make_repo(tmp_path / "repo")
    commits = tmp_path / "commits.txt"
    commits.write_text("\n".join(shas) + "\n")
    exports, annotations = tmp_path / "exports", tmp_path / "annotations"
    proc = run(
        "-m", "memops", "export-commits",
        "--repo", str(tmp_path / "repo"),
        "--commits", str(commits),
        "--name", NAME,
        "--out", str(exports / f"{NAME}.jsonl"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    annotations.mkdir()
    shorts = {f"c{i}": sha[:9] for i, sha in enumerate(shas, start=1)}
    text = TEMPLATE.read_text()
    for placeholder, short in shorts.items():
        text = text.replace(f"{{{placeholder}}}", short)
    (annotations / f"{NAME}.yaml").write_text(text)
    sources = [f"annotations=[shipped,{annotations}]", f"exports=[shipped,{exports}]"]

    proc = run("-m", "memops", "build-data", "validate=true", *sources)
    assert proc.returncode == 0, proc.stderr
    assert f"{NAME}: {annotations / NAME}.yaml + {exports / NAME}.jsonl" in proc.stdout
    assert "6 trajectories, 61 commits" in proc.stdout  # the five shipped and this one

    datasets = tmp_path / "datasets"
    small = ["scenarios_per_family=2", "noisy_per_family=0", f"datasets_dir={datasets}", "progress=false"]
    proc = run("-m", "memops", "build-data", *small, f"folds=[{NAME},all]", *sources)
    assert proc.returncode == 0, proc.stderr
    assert (datasets / NAME / "extract" / "test.jsonl").exists()

    proc = run("-m", "memops", "replay", f"trajectory={NAME}", *sources)
    assert proc.returncode == 0, proc.stderr
    assert f"cache.backend = Redis 6 ({shorts['c4']}, 2024-03-20, code-change)" in proc.stdout
    assert f"2024-03-20 cache.backend: Memcached -> current ({shorts['c4']})" in proc.stdout

    out = tmp_path / "loo"
    loo = ["backend=symbolic", "run=byor", f"folds=[{NAME}]", f"runs_dir={out}", f"datasets_dir={datasets}"]
    proc = run("-m", "memops", "loo", *loo, "progress=false", *sources)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "byor" / "summary.json").read_text())
    assert summary["folds"][NAME]["symbolic"]["engine_queries"]["mean"] == 1.0
    assert summary["folds"][NAME]["symbolic"]["engine_queries"]["n"] == 8
