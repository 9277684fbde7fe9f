"""Export commit metadata from any git checkout, in the schema ``data/trajectory.py`` reads.

Every git call is an argument list; commit names from files are checked by ``git rev-parse``
and never reach a shell.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from memops.data.problems import load_yaml
from memops.data.trajectory import CommitRecord

BODY_LIMIT = 1500


class ExportError(RuntimeError):
    pass


GIT_TIMEOUT_S = 60
"""Per git call; a hung call (a lock, a network filesystem) ends the export with a message."""


SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "--no-pager")
"""What a repository's own config may not make git run: a filesystem monitor, hooks, a pager."""
NO_PROGRAMS = ("--no-textconv", "--no-ext-diff")
"""Given to every command that shows changes: a ``diff.<driver>.textconv`` or an external diff
named by the repository's config and ``.gitattributes`` is a program of the repository's."""
SHOWS_CHANGES = ("diff", "log", "show")


def git(repo: Path, *args: str, timeout: float = GIT_TIMEOUT_S) -> str:
    """One git call (an argument list) in ``repo``, running none of the repository's programs
    (``SAFE``, ``NO_PROGRAMS``); a failure or a hang is an ``ExportError``. Output that is not
    UTF-8 (an old commit message in Latin-1) is read with replacement characters."""
    command, *rest = args
    extra = NO_PROGRAMS if command in SHOWS_CHANGES else ()
    try:
        argv = ["git", *SAFE, "-C", str(repo), command, *extra, *rest]
        proc = subprocess.run(
            argv, capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise ExportError(f"git {' '.join(args)} took over {timeout:g} s in {repo}; stopped") from None
    if proc.returncode != 0:
        raise ExportError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip()}")
    return proc.stdout


def commit_record(repo: Path, name: str, trajectory: str) -> CommitRecord:
    full = git(repo, "rev-parse", "--verify", "--end-of-options", f"{name}^{{commit}}").strip()
    fields = "%H%x00%aI%x00%cI%x00%s%x00%b"
    head, author_date, committed_at, subject, body = git(
        repo, "log", "-1", "--encoding=UTF-8", f"--format={fields}", full
    ).split("\x00", 4)
    files, insertions, deletions = [], 0, 0
    for line in git(repo, "show", "--no-renames", "--numstat", "--format=", full).splitlines():
        if not line.strip():
            continue
        added, removed, path = line.split("\t", 2)
        insertions += int(added) if added != "-" else 0
        deletions += int(removed) if removed != "-" else 0
        files.append(path)
    return CommitRecord(
        trajectory=trajectory,
        commit=head,
        short=head[:9],
        author_date=author_date,
        committed_at=committed_at,
        subject=subject,
        body=body.strip()[:BODY_LIMIT],
        files=tuple(files),
        insertions=insertions,
        deletions=deletions,
    )


def commits_from_file(path: Path) -> list[str]:
    """One commit name per line; blank lines and ``#`` comments are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportError(f"{path}: cannot read the commit list ({exc.__class__.__name__}: {exc})") from None
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [line for line in lines if line]


def commits_from_trajectory(path: Path) -> tuple[str, list[str]]:
    data = load_yaml(path.read_text(encoding="utf-8"))
    try:
        return data["trajectory"], [str(c["commit"]) for c in data["commits"]]
    except (KeyError, TypeError) as exc:
        raise ExportError(f"{path}: expected 'trajectory' and 'commits[].commit' ({exc})") from exc


def landing_order(repo: Path, records: list[CommitRecord]) -> list[CommitRecord]:
    """Replay order is the order commits landed, not the order they were authored: a commit
    written earlier can land later (rebase, cherry-pick, a long-lived branch). git walks parents
    before children, and otherwise by committer date."""
    walk = git(
        repo, "rev-list", "--date-order", "--reverse", "--end-of-options", *{r.commit for r in records}
    )
    rank = {sha: i for i, sha in enumerate(walk.split())}
    return sorted(records, key=lambda r: rank[r.commit])


def export_line(record: CommitRecord) -> str:
    """One JSONL line; dates keep git's own ISO form (``+00:00``, never ``Z``)."""
    row = record.model_dump(mode="json")
    row["author_date"] = record.author_date.isoformat()
    row["committed_at"] = record.committed_at.isoformat() if record.committed_at else None
    return json.dumps(row, ensure_ascii=False)


def export(repo: Path, commits: list[str], trajectory: str, out: Path) -> list[CommitRecord]:
    records = landing_order(repo, [commit_record(repo, name, trajectory) for name in commits])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(export_line(r) + "\n")
    tmp.replace(out)
    return records
