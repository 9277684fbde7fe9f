"""memops track over a git repository nobody annotated, on the tiny model's adapters: a dozen
commits that change the facts of the shipped python-project catalog, with messages as people
write them. The plumbing, not the quality: every commit read once, state written with its
commits, a second run reads only what is new, a rewritten history and a malformed catalog are
refused with what to do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data.test_export import git

pytestmark = pytest.mark.slow

HISTORY = [
    ("pyproject.toml", 'requires-python = ">=3.8"\n', "Initial packaging with setuptools, Python 3.8+"),
    ("tox.ini", "[tox]\nenvlist = py38,py39\n", "Run the tests with pytest under tox"),
    (".github/workflows/ci.yml", "on: push\n", "Add a GitHub Actions workflow for Linux"),
    ("LICENSE", "MIT\n", "License the project under MIT"),
    (".pre-commit-config.yaml", "repos: [flake8]\n", "Lint with flake8 in pre-commit"),
    ("pyproject.toml", 'requires-python = ">=3.9"\n', "Drop Python 3.8, it is end of life"),
    (".pre-commit-config.yaml", "repos: [black]\n", "Format the code with black"),
    ("pyproject.toml", "[build-system]\nrequires = ['hatchling']\n", "Switch the build backend to hatchling"),
    (".pre-commit-config.yaml", "repos: [ruff]\n", "Replace flake8 with ruff"),
    (
        ".github/workflows/ci.yml",
        "on: push\nos: [ubuntu, windows, macos]\n",
        "CI: test on Windows and macOS too",
    ),
    ("pyproject.toml", "dependencies = ['numpy>=1.24']\n", "Require numpy 1.24 or newer"),
    ("LICENSE", "Apache-2.0\n", "Relicense under Apache 2.0"),
]


def make_repo(path: Path) -> None:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for day, (file, text, subject) in enumerate(HISTORY, start=1):
        (path / file).parent.mkdir(parents=True, exist_ok=True)
        (path / file).write_text(text)
        git(path, "add", ".")
        git(path, "commit", "-q", "-m", subject, date=f"2024-03-{day:02d}T10:00:00+01:00")


def track(work: Path, repo: Path, adapters: Path, tiny: Path, *extra: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "memops", "track", str(repo), "--catalog", "python-project"]
    argv += ["--adapters", str(adapters), *extra, f"model.path={tiny}"]
    return subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=900)


def test_track_reads_each_commit_once_and_resumes(
    trained_adapters: Path, tiny_model: Path, tmp_path: Path
) -> None:
    repo, work = tmp_path / "mylib", tmp_path / "work"
    make_repo(repo)
    work.mkdir()
    first = track(work, repo, trained_adapters, tiny_model)
    assert first.returncode == 0, first.stderr
    assert "mylib: 12 commits on HEAD, 12 new" in first.stdout
    out = work / "outputs" / "track" / "mylib"
    saved = json.loads((out / "memory.json").read_text())
    shas = git(repo, "rev-list", "--reverse", "HEAD").split()
    assert saved["seen"] == shas  # every commit, oldest first
    state = json.loads((out / "state.json").read_text())
    assert state["commits"] == 12
    assert all(k["commit"] in shas for k in state["keys"])  # every value names its commit
    assert (out / "state.md").read_text().startswith("# mylib")

    # Nothing new: the saved memory answers without its adapters (none here), so no model loads.
    again = track(work, repo, tmp_path / "no-adapters", tiny_model)
    assert again.returncode == 0 and "12 commits on HEAD, 0 new" in again.stdout, again.stderr
    assert json.loads((out / "state.json").read_text()) == state

    (repo / "LICENSE").write_text("BSD-3-Clause\n")
    git(repo, "commit", "-qam", "Relicense under BSD", date="2024-04-01T10:00:00+01:00")
    more = track(work, repo, trained_adapters, tiny_model)
    assert "13 commits on HEAD, 1 new" in more.stdout, more.stderr

    git(repo, "commit", "-q", "--amend", "-m", "Relicense under BSD-3", date="2024-04-01T10:00:00+01:00")
    rewritten = track(work, repo, trained_adapters, tiny_model)
    assert (
        rewritten.returncode != 0 and "its history was rewritten; --reset reads it again" in rewritten.stderr
    )
    assert "Traceback" not in rewritten.stderr


def test_track_refuses_a_malformed_catalog_naming_file_and_line(tmp_path: Path) -> None:
    catalog = tmp_path / "slots.yaml"
    catalog.write_text("- {entity: build, slot: backend, description: the build backend}\n- {entity: ci}\n")
    repo = tmp_path / "mylib"
    make_repo(repo)
    argv = [
        sys.executable,
        "-m",
        "memops",
        "track",
        str(repo),
        "--catalog",
        str(catalog),
        "--engine",
        "learned",
    ]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{catalog}:2: [1].slot: Field required" in done.stderr
