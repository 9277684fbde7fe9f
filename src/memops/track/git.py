"""A git repository's history as the notes a project memory reads: one note per commit, written
as ``memops mine`` writes its notes where the commit changes a file the catalog reads (``note``),
its touched files, dated when it landed (the committer date with its offset), as ``memops mine``
and the trajectory replays date a commit.

One ``git log`` call (``data.export.git``, an argument list that runs none of the repository's
programs) reads the whole range, oldest first in the order the commits landed: parents before
children, otherwise by committer date. A commit rebased onto the branch last lands last, however
early it was written.
"""

from __future__ import annotations

import argparse
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memops.core.records import Catalog
from memops.core.values import WHOLE
from memops.data.catalog import ReadFrom
from memops.data.export import ExportError, git
from memops.data.facts import STATING
from memops.data.mine import changed_summary
from memops.data.trajectory import note_text

LOG_TIMEOUT_S = 300
"""A whole branch's log in one call takes longer than one commit's."""
SINCE_HELP = (
    "only commits since this moment, as git's --since reads it: give a time (2024-01-01T00:00Z); "
    "a bare date is that day at the time of day the command runs"
)
"""The one help text of every --since that reaches git."""


def moment(text: str) -> str:
    """An argparse type for ``--since``/``--until``: an ISO 8601 date or time. git reads any
    other word as now (``--since garbage`` read no commit), so anything else is refused."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 date or time (2024-01-01T00:00Z)"
        ) from None
    return text


FIELD = "\x00"
"""What git's ``%x00`` prints between fields: a commit message cannot hold it."""
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")
"""Characters of a subject or body that no note keeps (a tab, an escape sequence's ESC)."""


@dataclass(frozen=True)
class Commit:
    sha: str
    at: str
    """When it landed: the committer date, ISO 8601 with the committer's offset."""
    subject: str
    body: str
    files: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.subject}\n\n{self.body}".strip()


def note(
    repo: Path,
    commit: Commit,
    read_from: list[ReadFrom],
    catalog: Catalog | None = None,
    parent: str | None = None,
) -> str:
    """The note the extractor reads for ``commit``, in the mined benchmark's form: its subject, the
    lines it changed in the files a catalog slot is read from, or ``Changed files: ...`` where it
    changed none of them, the files it touched and its message. There is no gold to point at a
    slot's lines: those that name one of its ``catalog`` type's names come first (``- id:
    ruff-format`` among a pre-commit file's hooks), a file at a time, then those holding its
    reader's keywords; a slot whose type sums up its files (``core.values.WHOLE``: the CI
    platforms) over every one of them as the commit leaves them, and a list the miner's reader
    reads whole (``data.facts.STATING``: the install requirements, the test runners) by the
    lines that state it. A catalog that says where no
    slot is read from gets the subject and body: nothing tells which of its lines could state a
    value. ``parent``: what the commit is compared with (default its first parent)."""
    if not read_from:
        return commit.text
    slots = [(s, catalog.value_type(s.pair).spellings() if catalog else ()) for s in read_from]
    whole = {
        s.pair
        for s in read_from
        if catalog and (catalog.value_type(s.pair).kind in WHOLE or s.reader in STATING)
    }
    return note_text(
        commit, changed_summary(repo, commit.sha, commit.files, slots, parent, spread=True, whole=whole)
    )


def start(repo: Path, branch: str, since: str, read_from: list[ReadFrom]) -> Commit | None:
    """Where a memory that starts at ``since`` starts from: the commit ``branch`` stood at then
    (the last of its first-parent line that landed before ``since``), holding the files a catalog
    slot is read from. Its note, :func:`note` against ``EMPTY_TREE``, states every line of them
    as added, so a fact set before the window is read as a commit that creates the files would
    state it. None where no commit landed before ``since`` or the catalog says where no slot is
    read from."""
    check_revision(branch)
    if not read_from:
        return None
    before = ["log", "-1", "--first-parent", f"--before={since}", "--format=%H %cI"]
    found = git(repo, *before, "--end-of-options", branch, "--").split()
    if not found:
        return None
    sha, at = found
    listed = git(repo, "ls-tree", "-r", "--name-only", "--end-of-options", sha).splitlines()
    files = tuple(p for p in listed if any(s.reads(p) for s in read_from))
    return Commit(sha, at, f"The project's files as they stood on {at[:10]}", "", files)


def check_revision(branch: str) -> None:
    """A revision is never an option: ``--output=<file>`` would make git write a file."""
    if branch.startswith("-"):
        raise ExportError(f"--branch {branch!r}: a branch or revision, not an option")


def commits(
    repo: Path, branch: str = "HEAD", since: str | None = None, until: str | None = None
) -> list[Commit]:
    """The commits of ``branch`` (committer dates ``since``/``until`` as git reads them), in the
    order they landed."""
    check_revision(branch)
    # Records start with a marker no message holds (a subject may hold git's usual \x1e).
    marker = secrets.token_hex(16)
    fmt = f"--format={marker}%H%x00%cI%x00%s%x00%b%x00"
    dates = [*([f"--since={since}"] if since else []), *([f"--until={until}"] if until else [])]
    walk = ["--reverse", "--date-order", "--no-renames", "--name-only", "--encoding=UTF-8"]
    out = git(repo, "log", *walk, fmt, *dates, "--end-of-options", branch, "--", timeout=LOG_TIMEOUT_S)
    found = []
    for record in out.split(marker)[1:]:
        sha, at, subject, body, names = record.split(FIELD, 4)
        files = tuple(line for line in names.splitlines() if line.strip())
        subject, body = (CONTROL.sub(" ", subject).strip(), CONTROL.sub(" ", body).strip())
        found.append(Commit(sha, at, subject, body, files))
    return found


def on_branch(repo: Path, branch: str) -> set[str]:
    """Every commit in ``branch``'s history, in one call: what a saved memory's commits are
    checked against (a rewritten history drops some)."""
    check_revision(branch)
    return set(git(repo, "rev-list", "--end-of-options", branch, "--", timeout=LOG_TIMEOUT_S).split())


def identity(repo: Path, branch: str) -> str | None:
    """What tells one repository from another whatever its folder is called: the first root
    commit of ``branch`` (None for a repository with no commit yet)."""
    check_revision(branch)
    try:
        roots = git(repo, "rev-list", "--max-parents=0", "--end-of-options", branch, "--").split()
    except ExportError:
        return None
    return min(roots) if roots else None
