"""A git repository's history as the notes a project memory reads: one note per commit, its
subject and body as the text, its touched files, its author time with the author's offset.

One ``git log`` call (``data.export.git``, an argument list) reads the whole range, oldest first
in the order the commits landed: parents before children.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from memops.data.export import git

LOG_TIMEOUT_S = 300
"""A whole branch's log in one call takes longer than one commit's."""
SINCE_HELP = (
    "only commits since this moment, as git's --since reads it: give a time (2024-01-01T00:00Z); "
    "a bare date is that day at the time of day the command runs"
)
"""The one help text of every --since that reaches git."""
RECORD, FIELD = "\x1e", "\x00"
"""What git's ``%x1e`` and ``%x00`` print between records and fields (an argument list cannot
carry the bytes themselves)."""


@dataclass(frozen=True)
class Commit:
    sha: str
    at: str
    """Author date, ISO 8601 with the author's offset."""
    subject: str
    body: str
    files: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.subject}\n\n{self.body}".strip()


def commits(
    repo: Path, branch: str = "HEAD", since: str | None = None, until: str | None = None
) -> list[Commit]:
    """The commits of ``branch`` (author dates ``since``/``until`` as git reads them), oldest first."""
    fmt = "--format=%x1e%H%x00%aI%x00%s%x00%b%x00"
    dates = [*([f"--since={since}"] if since else []), *([f"--until={until}"] if until else [])]
    walk = ["--reverse", "--topo-order", "--no-renames", "--name-only"]
    out = git(repo, "log", *walk, fmt, *dates, branch, "--", timeout=LOG_TIMEOUT_S)
    found = []
    for record in out.split(RECORD)[1:]:
        sha, at, subject, body, names = record.split(FIELD, 4)
        files = tuple(line for line in names.splitlines() if line.strip())
        found.append(Commit(sha, at, subject.strip(), body.strip(), files))
    return found


def is_ancestor(repo: Path, sha: str, branch: str) -> bool:
    """Whether ``sha`` is still in ``branch``'s history (a rewritten history drops it)."""
    done = subprocess.run(
        ["git", "-C", str(repo), "merge-base", "--is-ancestor", sha, branch],
        capture_output=True,
        text=True,
        timeout=LOG_TIMEOUT_S,
    )
    return done.returncode == 0
