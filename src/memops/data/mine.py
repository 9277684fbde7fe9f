"""Mine a trajectory from a git repository: its facts read from its own files at each commit.

For every first-parent commit of the branch that touches a file some slot reads, each slot's
value is read at that commit (``memops.data.facts``, nothing run). A commit where a value
changes becomes an annotated commit: the note is its subject, the changed lines of the files
that carry the fact, its touched files and its message; the gold claims are the new values as
the files state them. Whatever the message says, or does not: that is what real notes are like.
Distractors and queries are generated from the mined history (an old value stated as current
later, a maintenance branch, the value now, at a time, and the commit that set it).

The output is a trajectory like the shipped ones, ``<name>.yaml`` and ``<name>.jsonl``, which the
data builders and the LOO harness read through ``annotations=``/``exports=``. The same repository
at the same tip mines to the same bytes. The values read so far are kept in a journal beside the
output, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import subprocess
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from memops.core import values as spellings
from memops.core.files import write_atomic
from memops.core.records import CHANGE_SEPARATOR, CHANGED_FILES, CHANGED_LINES, Catalog
from memops.data import facts
from memops.data.catalog import ReadFrom
from memops.data.export import ExportError, commit_record, export_line, git
from memops.data.facts import KEYWORDS, READERS, STATING
from memops.data.mined_gold import (
    Change,
    MineError,
    claim,
    distinct,
    distractors,
    dump,
    gold_replay,
    queries,
    same,
)
from memops.data.project_files import Disputed, Files
from memops.data.trajectory import (
    note_text,
)
from memops.operators.schemas import MAX_PAIRS

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""git's empty tree: what a root commit is compared with."""
WHOLE_LINES = 16
"""The most lines a whole list's note shows (``stating_lines``): a value past them would be
longer than a claim holds."""
LINES_PER_FACT = 4
LINE_CHARS = 100
MIN_CHANGES = 5
"""Fewer fact changes than this make no trajectory worth scoring: the repository is refused."""
MIN_QUERIES = 8
DISPUTED = "# Disputed, left out: "
LEFT_OUT = "# Left out: "
"""How a mined trajectory's header names a slot its files disagree on, and the notes it left out
as repeats of another trajectory's (the benchmark's card reads them back)."""


@dataclass(frozen=True)
class Dispute:
    """Where two files first disagreed on a slot (``what``: what each says): left out."""

    commit: str
    pair: str
    what: str


class Blobs:
    """File contents at a commit through one ``git cat-file --batch`` process."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def read(self, commit: str, path: str) -> str | None:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(f"{commit}:{path}\n".encode())
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) != 3 or header[1] != b"blob":
            return None
        data = self.proc.stdout.read(int(header[2]) + 1)[:-1]
        return data.decode("utf-8", errors="replace")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def folders(patterns: Iterable[str]) -> list[str]:
    """The folders the patterns reach into (``.github/workflows``), listed besides the root."""
    return sorted({p.rsplit("/", 1)[0] for p in patterns if "/" in p})


def files_at(repo: Path, blobs: Blobs, commit: str, patterns: list[str]) -> Files:
    listed = git(repo, "ls-tree", "--name-only", commit).splitlines()
    if subs := folders(patterns):
        listed += git(
            repo, "ls-tree", "-r", "--name-only", commit, "--", *(f"{s}/" for s in subs)
        ).splitlines()
    wanted = [p for p in listed if any(fnmatch.fnmatchcase(p, pat) for pat in patterns)]
    found = {}
    for path in wanted:
        text = blobs.read(commit, path)
        if text is not None:
            found[path] = text
    return found


def facts_at(files: Files, read_from: list[ReadFrom]) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each slot's value at a commit, and the slots whose files disagree (what each says). A
    value its files do not state, cannot be parsed for (``Unreadable``: a broken TOML, a
    Python 2 setup.py, a file nested past the parser's depth) or dispute is None: unknown here,
    which is not a change. One odd commit does not end the mine."""
    out, disputed = {}, {}
    for source in read_from:
        try:
            out[source.pair] = READERS[source.reader](source.mine(files))
        except Disputed as exc:
            out[source.pair], disputed[source.pair] = None, str(exc)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError):
            out[source.pair] = None
    return out, disputed


READERS_SOURCE = hashlib.sha256(
    b"".join(Path(module.__file__).read_bytes() for module in (facts, spellings))
).hexdigest()[:16]
"""The readers' own code and the spellings they write values in: a journal read by other
readers is read again."""


def reading(read_from: list[ReadFrom], since: str | None) -> str:
    """What a journal's facts were read under: the slots, their readers (by name and code) and
    files, and the start. A resume under anything else reads again from the first commit."""
    settings = {"read_from": [asdict(r) for r in read_from], "since": since, "readers": READERS_SOURCE}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def changed_lines(repo: Path, commit: str, parent: str, paths: list[str]) -> list[tuple[str, str]]:
    """The added and removed lines of ``paths`` in ``commit``, each with its file."""
    if not paths:
        return []
    diff = git(repo, "diff", "--no-renames", "--no-color", "-U0", parent, commit, "--", *paths)
    found, current = [], ""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else current
        elif line.startswith("--- "):
            current = line[6:] if line.startswith("--- a/") else current
        elif line[:1] in "+-" and line[1:].strip():
            found.append((current, line[0] + " ".join(line[1:].split())))
    return found


def excerpt(
    lines: list[tuple[str, str]], marks: list[str], keywords: Iterable[str], spread: bool = False
) -> list[str]:
    """At most ``LINES_PER_FACT`` changed lines, in the diff's order: those holding one of
    ``marks`` (the fact's changed words), then those holding a keyword of its reader, else the
    first ones. Spaces and case are ignored (``>= 3.8`` holds ``>=3.8``). ``spread``: the marked
    lines each file's first for each mark, then the rest, the first for a mark before its
    second, so that a list is not cut at one file or one item (pytest in ``pytest.ini`` and in
    ``tox.ini``; ubuntu, windows and macos in a matrix beside other workflows' ubuntu)."""

    def held(line: str, words: Iterable[str]) -> str | None:
        flat = "".join(line.split()).lower()
        return next((w for w in words if w and "".join(w.split()).lower() in flat), None)

    def holds(line: str, words: Iterable[str]) -> bool:
        return held(line, words) is not None

    first = [i for i, x in enumerate(lines) if holds(x[1], marks)]
    if spread:
        mark = {i: held(lines[i][1], marks) for i in first}
        before = {i: [j for j in first if j < i and mark[j] == mark[i]] for i in first}
        first.sort(key=lambda i: (sum(lines[j][0] == lines[i][0] for j in before[i]), len(before[i])))
    then = [i for i, x in enumerate(lines) if i not in first and holds(x[1], keywords)]
    picked = sorted((first + then or list(range(len(lines))))[:LINES_PER_FACT])
    return [f"{lines[i][0]}: {lines[i][1][:LINE_CHARS]}" for i in picked]


def changed_summary(
    repo: Path,
    commit: str,
    files: Sequence[str],
    slots: Iterable[tuple[ReadFrom, Iterable[str]]],
    parent: str | None = None,
    spread: bool = False,
    whole: Collection[str] = (),
) -> str:
    """A commit's note summary, ``Changed lines: ...``: for each slot (where it is read, and the
    words that mark its lines: the changed value's, or none), the :func:`excerpt` of the lines
    the commit changed in the files it reads; ``Changed files: ...`` where there are none. Mined
    notes mark the gold change's words; ``memops track`` has no gold and marks the names of the
    slot's type (``track.git.note``), ``spread`` over the files (:func:`excerpt`). The parent
    (``EMPTY_TREE``: every line of the files, as added) is asked of git only where a slot's files
    changed. A slot of ``whole`` (pairs) whose files the commit changed is read over all of them
    as the commit leaves them, every line as added: its value sums up every file (the systems of
    every workflow), and a diff holds only what moved; a whole list one file states (the install
    requirements, ``facts.STATING``) by the lines that state it alone."""
    lines: list[str] = []
    tree: list[str] = []
    for source, marks in slots:
        paths = [p for p in files if source.reads(p)]
        if not paths:
            continue
        parent = parent or parent_of(repo, commit)
        base = parent
        if source.pair in whole and source.reader in STATING:
            lines += [x for x in stating_lines(repo, commit, source) if x not in lines]
            continue
        if source.pair in whole:
            tree = tree or git(repo, "ls-tree", "-r", "--name-only", commit).splitlines()
            paths, base = [p for p in tree if source.reads(p)], EMPTY_TREE
        changed = changed_lines(repo, commit, base, paths)
        for line in excerpt(changed, list(marks), KEYWORDS[source.reader], spread):
            if line not in lines:
                lines.append(line)
    return CHANGED_LINES + CHANGE_SEPARATOR.join(lines) if lines else CHANGED_FILES + ", ".join(files)


def stating_lines(repo: Path, commit: str, source: ReadFrom) -> list[str]:
    """The lines that state a whole list ``source`` reads (``facts.STATING``) as ``commit``
    leaves its files, each as added, at most ``WHOLE_LINES`` of them."""
    blobs = Blobs(repo)
    try:
        read = files_at(repo, blobs, commit, list(source.files))
    finally:
        blobs.close()
    stated = STATING[source.reader](read)[:WHOLE_LINES]
    return [f"{path}: +{' '.join(line.split())[:LINE_CHARS]}" for path, line in stated]


def parent_of(repo: Path, commit: str) -> str:
    parents = git(repo, "rev-list", "--parents", "-n", "1", commit).split()[1:]
    return parents[0] if parents else EMPTY_TREE


@dataclass
class Miner:
    repo: Path
    name: str
    catalog: Catalog
    read_from: list[ReadFrom]
    branch: str = "HEAD"
    since: str | None = None

    def __post_init__(self) -> None:
        self.repo = self.repo.expanduser().resolve()
        try:
            git(self.repo, "rev-parse", "--git-dir")
        except ExportError as exc:
            raise MineError(f"{self.repo}: not a git repository ({exc})") from None
        try:
            ref = f"{self.branch}^{{commit}}"
            self.tip = git(self.repo, "rev-parse", "--verify", "--end-of-options", ref).strip()
        except ExportError:
            raise MineError(f"{self.repo}: no branch or revision {self.branch!r}") from None
        self.patterns = sorted({p for s in self.read_from for p in s.files})

    def candidates(self) -> list[str]:
        """First-parent commits that touch a file some slot reads, oldest first."""
        dates = [f"--since={self.since}"] if self.since else []
        specs = [f":(glob){p}" for p in self.patterns]
        out = git(
            self.repo, "log", "--first-parent", "--reverse", "--format=%H", *dates, self.tip, "--", *specs
        )
        return out.split()

    def read_all(
        self, journal: Path, progress: Callable[[Iterable[str], int], Iterable[str]]
    ) -> tuple[dict[str, str | None], dict[str, dict], list[Dispute]]:
        """The values before the first candidate (none, or with ``since`` those of its parent),
        each candidate's, oldest first, and where files first disagreed on a slot; from the
        journal where a run already read them."""
        done: dict[str, dict] = {}
        disputed: dict[str, dict[str, str]] = {}
        settings = reading(self.read_from, self.since)
        lines = journal.read_text(encoding="utf-8").splitlines() if journal.exists() else []
        if lines and lines[0] != json.dumps({"reading": settings}):
            lines = []  # read under another catalog or start: none of it holds here
            journal.unlink()
        for line in lines[1:]:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                break  # a line cut off by an interrupted run: read again from here
            done[row["commit"]], disputed[row["commit"]] = row["facts"], row["disputed"]
        todo = self.candidates()
        first = todo[0] if todo else self.tip
        base = parent_of(self.repo, first) if self.since else EMPTY_TREE
        order = ([base] if base != EMPTY_TREE else []) + todo
        blobs = Blobs(self.repo)
        try:
            journal.parent.mkdir(parents=True, exist_ok=True)
            with journal.open("a", encoding="utf-8") as log:
                if not lines:
                    log.write(json.dumps({"reading": settings}) + "\n")
                for commit in progress([c for c in order if c not in done], len(order)):
                    files = files_at(self.repo, blobs, commit, self.patterns)
                    done[commit], disputed[commit] = facts_at(files, self.read_from)
                    row = {"commit": commit, "facts": done[commit], "disputed": disputed[commit]}
                    log.write(json.dumps(row, sort_keys=True) + "\n")
                    log.flush()
        finally:
            blobs.close()
        start = done[base] if base != EMPTY_TREE else dict.fromkeys(self.catalog.pairs())
        first_dispute: dict[str, Dispute] = {}
        for commit in todo:
            for pair, what in disputed[commit].items():
                first_dispute.setdefault(pair, Dispute(commit, pair, what))
        return start, {c: done[c] for c in todo}, list(first_dispute.values())

    def changes(self, start: dict[str, str | None], facts: dict[str, dict]) -> list[Change]:
        """Each change of a slot's value, oldest first. A value the files do not state at a commit
        (None: absent, unparsable or disputed) is unknown there and keeps the last one, so a value
        that goes unreadable and comes back is no change."""
        state = dict(start)
        found = []
        for commit, values in facts.items():
            for pair in self.catalog.pairs():
                new = values.get(pair)
                if new is not None and not same(new, state.get(pair)):
                    found.append(Change(commit, pair, new, state.get(pair)))
                    state[pair] = new
        return found


def mine(
    miner: Miner,
    out: Path,
    progress: Callable[[Iterable[str], int], Iterable[str]] = lambda it, n: it,
    leave_out: Collection[str] = (),
) -> tuple[Path, Path, int]:
    """Write ``<out>/<name>.yaml`` and ``<name>.jsonl``; returns them and the claim count.

    ``leave_out`` holds notes (texts, and changed lines as a note quotes them) that another
    trajectory's note says already: a commit whose note would repeat one is not annotated, so
    a benchmark's training side never holds what its held-out side asks (one edit made across
    several repositories quotes the same lines in each)."""
    journal = out / f".{miner.name}.mined.jsonl"
    start, facts, disputes = miner.read_all(journal, progress)
    changes = miner.changes(start, facts)
    if len(changes) < MIN_CHANGES:
        raise MineError(
            f"{miner.repo}: {len(changes)} fact change(s) on {miner.branch}"
            f"{f' since {miner.since}' if miner.since else ''}; a trajectory needs at least {MIN_CHANGES}"
        )
    by_commit: dict[str, list[Change]] = {}
    for change in changes:
        by_commit.setdefault(change.commit, []).append(change)
    # A note states at most MAX_PAIRS facts, as many as the two-stage extractor can list; the
    # rest of a commit that changes more (a first pyproject.toml) go unrecorded, in catalog order.
    by_commit = {sha: found[:MAX_PAIRS] for sha, found in by_commit.items()}
    changes = [c for found in by_commit.values() for c in found]
    records = [commit_record(miner.repo, sha, miner.name) for sha in by_commit]
    sources = {s.pair: s for s in miner.read_from}
    entries = {e.pair: e for e in miner.catalog.entries}
    commits = []
    for record in records:
        found = by_commit[record.commit]
        marked = [(sources[c.pair], distinct(c.value, c.before)) for c in found]
        summary = changed_summary(miner.repo, record.commit, record.files, marked)
        if summary in leave_out or note_text(record, summary) in leave_out:
            continue
        claims = [claim(c.pair, c.value, "code-change") for c in found]
        commits.append({"commit": record.short, "summary": summary, "claims": claims})
    left_out = len(records) - len(commits)
    if not commits:
        raise MineError(f"{miner.repo}: every note repeats one left out")
    kept = {c["commit"] for c in commits}
    records = [r for r in records if r.short in kept]
    changes = [c for c in changes if c.commit[:9] in kept]
    last = max(r.landed for r in records)
    noise = distractors(miner.name, changes, entries, last)
    memory = gold_replay(miner.name, miner.catalog, records, commits, noise)
    annotation = {
        "trajectory": miner.name,
        "catalog": [e.model_dump(mode="json", exclude_defaults=True) for e in miner.catalog.entries],
        "commits": commits,
        "distractors": noise,
        "queries": queries(miner.name, changes, records, entries, memory, noise),
    }
    if len(annotation["queries"]) < MIN_QUERIES:
        raise MineError(
            f"{miner.repo}: its history makes {len(annotation['queries'])} queries, fewer than {MIN_QUERIES}"
        )
    header = (
        f"# Mined by `memops mine` from {miner.name} at {miner.tip[:12]} ({miner.branch}"
        f"{f', since {miner.since}' if miner.since else ''}): values as the repository's files state them.\n"
    ) + "".join(f"{DISPUTED}{d.pair} from {d.commit[:9]}: {d.what}.\n" for d in disputes)
    if left_out:
        header += f"{LEFT_OUT}{left_out} note(s) that another trajectory's note repeats.\n"
    yaml_path = write_atomic(out / f"{miner.name}.yaml", header + dump(annotation))
    jsonl_path = write_atomic(out / f"{miner.name}.jsonl", "".join(export_line(r) + "\n" for r in records))
    journal.unlink(missing_ok=True)
    return yaml_path, jsonl_path, len(changes)
