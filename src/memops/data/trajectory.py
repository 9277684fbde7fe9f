"""A commit trajectory read: a metadata export plus our annotations become an episode.

The export (``<name>.jsonl``) holds what git says about each commit; the annotation
(``data/trajectories/<name>.yaml``) holds what we say: a summary in our own words, the gold
claims, stale distractor sessions and queries. The note a model reads is built from the
subject, the summary, touched-file hints and a trimmed excerpt of the commit body.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memops.core.records import HINTS_LEAD, Catalog, CatalogEntry, ExtractedClaim
from memops.core.sessions import Episode, Query, Session
from memops.core.sources import Sources
from memops.data.problems import DataError, Path_, Problem, decode, from_validation, line_of, yaml_with_lines
from memops.memory.claims import Timestamp
from memops.operators.schemas import MAX_PAIRS

BODY_CHARS = 240
FILE_HINTS = 4


class CommitRecord(BaseModel):
    """One line of a commit metadata export (schema of ``memops export-commits``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trajectory: str
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    short: str = Field(pattern=r"^[0-9a-f]{9}$")
    author_date: Timestamp
    committed_at: Timestamp | None = None
    """When it landed (the committer date; a rebase or cherry-pick moves it, the author date stays).
    A session is dated by it; exports made before it was recorded fall back to the author date."""
    subject: str = Field(min_length=1)
    body: str
    files: tuple[str, ...]
    insertions: int = Field(ge=0)
    deletions: int = Field(ge=0)

    @property
    def landed(self) -> Timestamp:
        """When the commit landed, as its session is dated: the committer date where the export
        has it, else the author date."""
        return self.committed_at or self.author_date


class CommitAnnotation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    commit: str = Field(pattern=r"^[0-9a-f]{7,40}$")
    summary: str = Field(min_length=20)
    claims: tuple[ExtractedClaim, ...] = Field(min_length=1, max_length=MAX_PAIRS)
    """As many as the two-stage extractor can list for one note."""


class Distractor(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    at: Timestamp
    title: str
    text: str
    claims: tuple[ExtractedClaim, ...] = Field(min_length=1)


class Annotation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    trajectory: str
    catalog: tuple[CatalogEntry, ...] = Field(min_length=1)
    commits: tuple[CommitAnnotation, ...] = Field(min_length=1)
    distractors: tuple[Distractor, ...] = Field(min_length=3)
    queries: tuple[Query, ...] = Field(min_length=8)


def read_export(path: Path) -> tuple[list[tuple[int, CommitRecord]], list[Problem]]:
    """The export's records with their line numbers, or every problem in it: bad bytes, bad
    JSON, bad fields, a ``short`` that is not the commit's prefix, a commit listed twice."""
    records: list[tuple[int, CommitRecord]] = []
    problems: list[Problem] = []
    if not path.exists():
        return [], [Problem(path, None, "<file>", "export not found; build it with memops export-commits")]
    offset, first_seen = 0, {}
    for number, chunk in enumerate(path.read_bytes().split(b"\n"), start=1):
        line, bad = decode(path, chunk, offset, number)
        offset += len(chunk) + 1
        if line is None:
            problems += bad
            continue
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(
                Problem(path, number, "<json>", f"not valid JSON: {exc.msg} at column {exc.colno}")
            )
            continue
        try:
            record = CommitRecord.model_validate(raw)
        except ValidationError as exc:
            problems += [
                Problem(path, number, ".".join(map(str, e["loc"])) or "<record>", e["msg"])
                for e in exc.errors()
            ]
            continue
        if record.short != record.commit[:9]:
            problems.append(Problem(path, number, "short", f"{record.short} is not {record.commit[:9]}"))
        elif record.commit in first_seen:
            problems.append(
                Problem(
                    path,
                    number,
                    "commit",
                    f"{record.short} duplicate at lines {first_seen[record.commit]} and {number}",
                )
            )
        else:
            first_seen[record.commit] = number
            records.append((number, record))
    return records, problems


_IMG = re.compile(r"<img[^>]*>|!\[[^\]]*\]\([^)]*\)|https?://\S+")
_WS = re.compile(r"\s+")


def body_excerpt(body: str, limit: int = BODY_CHARS) -> str:
    """The start of a commit body without images, links or stack footers, cut at a word."""
    text = body.split("[//]: #")[0].split("\n---")[0]
    text = _WS.sub(" ", _IMG.sub("", text)).strip()
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


class Message(Protocol):
    """What a commit's note is written from: a ``CommitRecord``, or a commit ``memops track`` reads."""

    @property
    def subject(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def files(self) -> tuple[str, ...]: ...


def note_text(record: Message, summary: str, body_chars: int = BODY_CHARS) -> str:
    names = [f.rsplit("/", 1)[-1] for f in record.files]
    hints = ", ".join(dict.fromkeys(names[:FILE_HINTS]))
    if len(record.files) > FILE_HINTS:
        hints += f" (+{len(record.files) - FILE_HINTS} more)"
    parts = [record.subject, " ".join(summary.split())]
    if hints:
        parts.append(f"{HINTS_LEAD} {hints}.")
    excerpt = body_excerpt(record.body, body_chars) if body_chars else ""
    if excerpt:
        parts.append(f"From the commit message: {excerpt}")
    return "\n\n".join(parts)


def prefixed(index: list[str], prefix: str) -> list[str]:
    """The hashes of sorted ``index`` that start with ``prefix``, two at most (enough to call it
    ambiguous): a binary search, so matching every annotated commit stays O(n log n)."""
    start = bisect.bisect_left(index, prefix)
    return [h for h in index[start : start + 2] if h.startswith(prefix)]


def commit_session(name: str, record: CommitRecord, annotation: CommitAnnotation) -> Session:
    """An annotated commit as the session a trajectory replays: dated when it landed."""
    return Session(
        id=f"{name}-{record.short}",
        at=record.landed,
        commit=record.short,
        title=record.subject,
        text=note_text(record, annotation.summary),
        files=record.files,
        claims=annotation.claims,
    )


def distractor_session(d: Distractor) -> Session:
    return Session(id=d.id, at=d.at, title=d.title, text=" ".join(d.text.split()), claims=d.claims)


def load_trajectory(name: str, sources: Sources) -> Episode:
    episode, problems = check_trajectory(name, sources)
    if problems:
        raise DataError(problems)
    assert episode is not None
    return episode


def check_trajectory(name: str, sources: Sources) -> tuple[Episode | None, list[Problem]]:
    """Build one trajectory's episode, or return every problem that stops it."""
    ann_path, export_path = sources.annotation(name), sources.export(name)
    numbered, problems = read_export(export_path)
    for number, record in numbered:
        if record.trajectory != name:
            problems.append(
                Problem(export_path, number, "trajectory", f"{record.trajectory!r} in the {name} export")
            )
    if not ann_path.exists():
        return None, [*problems, Problem(ann_path, None, "<file>", "annotation not found")]
    try:
        raw, lines = yaml_with_lines(ann_path)
    except DataError as exc:  # unreadable: listed with every other problem, not raised alone
        return None, problems + exc.problems
    try:
        ann = Annotation.model_validate(raw)
    except ValidationError as exc:
        return None, problems + from_validation(exc, ann_path, lines, ())
    catalog = Catalog(name=name, entries=ann.catalog)
    check = AnnotationCheck(ann_path, lines, set(catalog.pairs()), problems)
    if ann.trajectory != name:
        check.add(("trajectory",), "trajectory", f"expected {name!r}")
    check.unique(ann)
    sessions = check.commit_sessions(name, ann, numbered, export_path)
    for i, d in enumerate(ann.distractors):
        check.pairs(d.claims, ("distractors", i))
        try:
            sessions.append(distractor_session(d))
        except ValidationError as exc:
            problems += from_validation(exc, ann_path, lines, ("distractors", i))
    for i, q in enumerate(ann.queries):
        if f"{q.target.entity}.{q.target.slot}" not in check.catalog:
            check.add(("queries", i, "target"), f"queries[{i}].target", "target is not in the catalog")
    if problems:
        return None, problems
    sessions.sort(key=lambda s: s.at)
    episode = Episode(
        id=name,
        source="trajectory",
        family="trajectory",
        catalog=catalog,
        sessions=tuple(sessions),
        queries=ann.queries,
    )
    return episode, []


class AnnotationCheck:
    """The checks of one annotation file against its catalog and its trajectory's export, each
    problem added to ``problems`` with the line the YAML gave it."""

    def __init__(
        self, path: Path, lines: dict[Path_, int], catalog: set[str], problems: list[Problem]
    ) -> None:
        self.path, self.lines, self.catalog, self.problems = path, lines, catalog, problems

    def add(self, where: tuple[str | int, ...], field: str, message: str) -> None:
        self.problems.append(Problem(self.path, line_of(self.lines, where), field, message))

    def duplicate(self, field: str, i: int, first: int, what: str, at: tuple[str | int, ...] = ()) -> None:
        there = line_of(self.lines, (field, first, *at))
        self.add((field, i, *at), f"{field}[{i}]", f"{what} duplicates {field}[{first}] at line {there}")

    def unique(self, ann: Annotation) -> None:
        """Each catalog pair, distractor id and query id given once."""
        for field, items, key in [
            ("catalog", ann.catalog, lambda e: e.pair),
            ("distractors", ann.distractors, lambda d: d.id),
            ("queries", ann.queries, lambda q: q.id),
        ]:
            first: dict[str, int] = {}
            for i, item in enumerate(items):
                if key(item) in first:
                    self.duplicate(field, i, first[key(item)], key(item))
                first.setdefault(key(item), i)

    def pairs(self, claims: tuple[ExtractedClaim, ...], at: tuple[str | int, ...]) -> None:
        """Every claim's pair in the catalog."""
        for i, c in enumerate(claims):
            if f"{c.entity}.{c.slot}" not in self.catalog:
                where = (*at, "claims", i)
                self.add(where, ".".join(map(str, where)), f"{c.entity}.{c.slot} is not in the catalog")

    def commit_sessions(
        self, name: str, ann: Annotation, numbered: list[tuple[int, CommitRecord]], export: Path
    ) -> list[Session]:
        """A session per annotated commit, each naming one exported commit once; every exported
        commit annotated."""
        records = [record for _, record in numbered]
        index = sorted(r.commit for r in records)
        by_hash = {r.commit: r for r in records}
        sessions: list[Session] = []
        annotated_at: dict[str, int] = {}
        for i, commit in enumerate(ann.commits):
            matches = prefixed(index, commit.commit)
            if len(matches) != 1:
                why = "not found in" if not matches else "ambiguous in"
                self.add(("commits", i, "commit"), f"commits[{i}].commit", f"{commit.commit} {why} {export}")
                continue
            record = by_hash[matches[0]]
            if record.commit in annotated_at:
                self.duplicate("commits", i, annotated_at[record.commit], record.short, ("commit",))
                continue
            annotated_at[record.commit] = i
            self.pairs(commit.claims, ("commits", i))
            sessions.append(commit_session(name, record, commit))
        annotated = {s.commit for s in sessions}
        for number, record in numbered:
            if record.short not in annotated:
                self.problems.append(
                    Problem(export, number, "commit", f"{record.short} has no annotation in {self.path}")
                )
        return sessions


def load_trajectories(sources: Sources, names: Sequence[str] | None = None) -> list[Episode]:
    """The named trajectories (default: every one the sources hold), or one :class:`DataError`
    listing every problem across them."""
    # A folder that is not there would build, and validate, without the trajectories it was
    # meant to add.
    problems = [
        Problem(f, None, "annotations", "not a folder") for f in sources.annotations if not f.is_dir()
    ]
    episodes = []
    for name in sources.names() if names is None else names:
        episode, found = check_trajectory(name, sources)
        problems += found
        if episode is not None:
            episodes.append(episode)
    if problems:
        raise DataError(problems)
    return episodes
