"""The commit exporter, run as users run it, on a git repository made here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memops.data.trajectory import read_export
from tests.conftest import ROOT


def git(repo: Path, *args: str, date: str | None = None, landed: str | None = None) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=landed or date)
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    shas = []
    # The second commit was written first and rebased on the first: authored a day earlier, it
    # landed a day later. Replay must follow landing order.
    for i, (date, landed, subject) in enumerate(
        [
            ("2026-03-02T10:00:00-08:00", None, "Add the cache layer"),
            ("2026-03-01T09:00:00+01:00", "2026-03-03T12:00:00+00:00", "Switch to Redis 7"),
        ]
    ):
        (repo / f"f{i}.txt").write_text("line\n" * (i + 2))
        (repo / "bin.dat").write_bytes(bytes(range(i, 256)))
        git(repo, "add", ".")
        body = f"Body of {subject}.\n\nMore detail."
        git(repo, "commit", "-q", "-m", subject, "-m", body, date=date, landed=landed)
        shas.append(git(repo, "rev-parse", "HEAD").strip())
    return repo, shas


def run_exporter(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memops", "export-commits", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_export_from_a_commits_file(repo: tuple[Path, list[str]], tmp_path: Path) -> None:
    path, shas = repo
    commits = tmp_path / "commits.txt"
    commits.write_text(f"# two commits\n{shas[0][:9]}\n\n{shas[1]}\n")
    out = tmp_path / "out.jsonl"
    proc = run_exporter("--repo", str(path), "--commits", str(commits), "--name", "demo", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    records, problems = read_export(out)
    assert problems == []
    # landing order (parent first), although the child's author date is the earlier one
    assert [r.subject for _, r in records] == ["Add the cache layer", "Switch to Redis 7"]
    second = json.loads(out.read_text().splitlines()[1])
    assert second["author_date"] == "2026-03-01T09:00:00+01:00"
    assert second["committed_at"] == "2026-03-03T12:00:00+00:00"  # git's form, not ...Z
    assert second["body"] == "Body of Switch to Redis 7.\n\nMore detail."
    assert second["short"] == shas[1][:9] and second["trajectory"] == "demo"
    assert set(second["files"]) == {"f1.txt", "bin.dat"}
    assert second["insertions"] == 3  # binary files count as 0


def test_an_all_digit_or_leading_zero_hash_in_yaml_stays_the_text_written(tmp_path: Path) -> None:
    """YAML 1.1 reads 0123456 as octal 42798 and 123456789 as a number; a commit is kept as text."""
    from memops.data.export import commits_from_trajectory
    from memops.data.problems import load_yaml

    ann = tmp_path / "t.yaml"
    ann.write_text(
        "trajectory: tiny\ncommits:\n  - commit: 0123456\n  - commit: 123456789\n  - {commit: 0777}\n"
    )
    assert commits_from_trajectory(ann) == ("tiny", ["0123456", "123456789", "0777"])
    assert load_yaml("other: 0123\n") == {"other": 83}  # only commit values are kept as text


def test_export_from_a_trajectory_yaml(repo: tuple[Path, list[str]], tmp_path: Path) -> None:
    path, shas = repo
    ann = tmp_path / "t.yaml"
    ann.write_text(f"trajectory: tiny\ncommits:\n  - commit: {shas[0][:9]}\n")
    out = tmp_path / "tiny.jsonl"
    proc = run_exporter("--repo", str(path), "--trajectory", str(ann), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    ((_, record),) = read_export(out)[0]
    assert record.commit == shas[0] and record.trajectory == "tiny"


def test_unknown_commit_fails_clearly_and_writes_nothing(
    repo: tuple[Path, list[str]], tmp_path: Path
) -> None:
    path, _ = repo
    commits = tmp_path / "c.txt"
    commits.write_text("0123456789abcdef\n")
    out = tmp_path / "never.jsonl"
    proc = run_exporter("--repo", str(path), "--commits", str(commits), "--name", "x", "--out", str(out))
    assert proc.returncode == 1
    assert "memops export-commits: " in proc.stderr and "0123456789abcdef" in proc.stderr
    assert not out.exists()
