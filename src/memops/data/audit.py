"""Audit a mined trajectory against its repository: is each gold claim what the files say?

For every commit claim the audit reads the slot's files at the claim's commit and at its parent
and checks three things, each a finding when it fails:

- ``value``: the slot's reader, run again at the commit, gives the gold value;
- ``unchanged``: at the parent the files state another value or none (the commit changed it);
- ``evidence``: every part of the gold value is written in those files at the commit, under one
  of its spellings (``Linux`` as ``ubuntu``, ``BSD-3-Clause`` as "BSD" or its text). This one does
  not trust the reader: a value the reader made up, or read from the wrong file, fails it.

The benchmark's card reports the result for the whole set; ``benchmarks/audit_mined.py`` prints the
failures and writes a sampled sheet a person can read against the repository.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from memops.core.values import version
from memops.data.catalog import ReadFrom
from memops.data.mine import Blobs, facts_at, files_at, parent_of
from memops.data.mined_gold import same
from memops.data.project_files import Files
from memops.data.trajectory import Annotation, CommitRecord

ALIASES: dict[str, tuple[str, ...]] = {
    "linux": ("ubuntu", "linux"),
    "macos": ("macos", "osx"),
    "windows": ("windows",),
    "pytest": ("pytest", "py.test"),
    "mit": ("mit", "permission is hereby granted"),
    "apache": ("apache",),
    "bsd": ("bsd", "redistribution and use"),
    "gpl": ("gpl", "general public"),
    "lgpl": ("lgpl", "lesser general public"),
    "agpl": ("agpl", "affero"),
    "mpl": ("mpl", "mozilla"),
    "psf": ("psf", "python software foundation"),
    "isc": ("isc", "permission to use, copy, modify"),
    "sphinx": ("conf.py",),
    "mkdocs": ("site_name", "mkdocs"),
}
"""How a word of a canonical value may be written in the files (lowercase)."""
FILLER = {"on", "or", "and", "theme", "github", "actions", "ci", "only", "later", "clause", "more"}
"""Words of a value that carry no claim of their own (``GitHub Actions`` is the workflows'
presence; ``(+2 more)`` marks a cut list)."""


@dataclass
class Finding:
    trajectory: str
    commit: str
    pair: str
    value: str
    problems: list[str] = field(default_factory=list)
    before: str | None = None
    lines: list[str] = field(default_factory=list)
    """The lines of the files at the commit that hold the value's evidence, for the sheet."""


def words(value: str) -> list[str]:
    """The words of a value the files must hold: licence ids by their family, versions and
    numbers as written, tool and system names; filler, and the ``(+N more)`` of a cut list,
    dropped."""
    low = re.sub(r"\(\+\d+ more\)", "", value.lower())
    out = []
    for part in re.split(r"[\s,;()]+|(?<=\w)(?=[<>=!~])", low):
        part = part.strip("<>=!~%+.")
        if not part or part in FILLER or (re.fullmatch(r"\d+", part) and len(part) < 2):
            continue
        family = re.match(r"(l?gpl|agpl|apache|bsd|mit|mpl|psf|isc)\b", part)
        out.append(family.group(1) if family else part)
    return list(dict.fromkeys(out))


_VERSION = re.compile(r"\d+(?:\.\d+)*(?:(?:a|b|rc|\.dev|\.post)\d+)?")


def written(word: str, text: str) -> bool:
    """Whether ``text`` (lowercase) holds the word under one of its spellings: an alias, a
    package name under any separators (``backports-functools-lru-cache`` as
    ``backports.functools_lru_cache``), a version under any spelling PEP 440 holds equal
    (``8.0rc1`` as ``8.0.0rc1``)."""
    flat = "".join(text.split())
    if any("".join(alias.split()) in flat for alias in ALIASES.get(word, (word,))):
        return True
    if re.search(r"[a-z]", word) and not _VERSION.fullmatch(word):
        return re.sub(r"[-_.]+", "-", word) in re.sub(r"[-_.]+", "-", flat)
    return _VERSION.fullmatch(word) is not None and version(word) in {
        version(v) for v in _VERSION.findall(flat)
    }


def evidence_lines(files: Files, wanted: list[str], limit: int = 3) -> list[str]:
    lines = []
    for path, text in sorted(files.items()):
        for line in text.splitlines():
            if any(written(w, line.lower()) for w in wanted) and line.strip():
                lines.append(f"{path}: {' '.join(line.split())[:120]}")
                if len(lines) == limit:
                    return lines
    return lines


def audit(
    repo: Path, annotation: Annotation, records: list[CommitRecord], read_from: list[ReadFrom]
) -> list[Finding]:
    """One finding per gold commit claim, with its problems (none where it passes)."""
    full = {r.short: r.commit for r in records}
    sources = {s.pair: s for s in read_from}
    patterns = sorted({p for s in read_from for p in s.files})
    blobs = Blobs(repo)
    out = []
    try:
        for note in annotation.commits:
            commit = full[note.commit[:9]]
            parent = parent_of(repo, commit)
            now = files_at(repo, blobs, commit, patterns)
            then = files_at(repo, blobs, parent, patterns)
            facts_now, facts_then = facts_at(now, read_from)[0], facts_at(then, read_from)[0]
            for claim in note.claims:
                pair = f"{claim.entity}.{claim.slot}"
                finding = Finding(
                    annotation.trajectory, commit, pair, claim.value, before=facts_then.get(pair)
                )
                if not same(facts_now.get(pair), claim.value):
                    finding.problems.append(f"value: the files give {facts_now.get(pair)!r}")
                if same(facts_then.get(pair), claim.value):
                    finding.problems.append("unchanged: the parent states the same value")
                mine, wanted = sources[pair].mine(now), words(claim.value)
                text = "\n".join(mine.values()).lower() + "\n" + "\n".join(mine).lower()
                if missing := [w for w in wanted if not written(w, text)]:
                    finding.problems.append(f"evidence: {', '.join(missing)} not in the files")
                finding.lines = evidence_lines(mine, wanted)
                out.append(finding)
    finally:
        blobs.close()
    return out
