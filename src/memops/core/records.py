"""The records every layer above the engine shares: a session note, the catalog of tracked
pairs it is read against, and a claim as an extractor states it. Data builds them from
annotations, operators prompt with them and parse into them; neither owns them."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memops.core.values import MAX_VALUE_CHARS, TEXT, ValueType
from memops.memory.claims import BranchName, Claim, Env, Identifier, Timestamp
from memops.memory.evidence import EVIDENCE_TYPES, Evidence
from memops.memory.lines import OneLine

EvidenceType = Literal[EVIDENCE_TYPES]  # type: ignore[valid-type]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


CHANGED_LINES = "Changed lines: "
"""How a note built from a commit's diff (``data.mine.changed_summary``) opens the paragraph of
the lines it changed in the files a slot is read from: ``Changed lines: <file>: +<added line> |
<file>: -<removed line>``."""
CHANGED_FILES = "Changed files: "
"""The same paragraph where the commit changed no line there: ``Changed files: <file>, <file>``."""
CHANGE_SEPARATOR = " | "
_NEXT_CHANGE = re.compile(re.escape(CHANGE_SEPARATOR) + r"(?=[^\s|:]+: [+-])")


def added_lines(text: str) -> list[tuple[str, str]] | None:
    """The lines a note's ``Changed lines`` paragraph says its commit added, each with its file:
    where a commit's note states a slot's new value (the removed lines hold the old one). None
    for a note that does not say what its commit changed (no such paragraph, nor ``Changed
    files``): a session summary, a user's note."""
    for line in text.splitlines():
        if line.startswith(CHANGED_LINES):
            changes = (c.partition(": ") for c in _NEXT_CHANGE.split(line.removeprefix(CHANGED_LINES)))
            return [(path, change[1:]) for path, _, change in changes if change.startswith("+")]
        if line.startswith(CHANGED_FILES.rstrip()):  # a merge's note names no file
            return []
    return None


HINTS_LEAD = "Touched files:"
"""How a note's paragraph of touched-file hints begins (``data.trajectory.note_text``): names,
which a reader that wants the prose skips."""


class Note(_Strict):
    """A session note as a reader sees it; commit, date, id and files become claim provenance."""

    id: str = Field(min_length=1)
    at: Timestamp
    commit: str | None = None
    title: OneLine
    text: str
    files: tuple[OneLine, ...] = ()

    def paragraphs(self) -> list[str]:
        """The title and each paragraph of the text but the touched files' names: what a
        free-text value is read from (``core.values.run_grammar``)."""
        return [self.title, *(p for p in self.text.split("\n\n") if not p.startswith(HINTS_LEAD))]


class CatalogEntry(_Strict):
    entity: Identifier
    slot: Identifier
    description: str = Field(min_length=1)
    value: ValueType = TEXT
    """What the slot's values are: an extractor writes them in this form (``core.values``)."""

    @property
    def pair(self) -> str:
        return f"{self.entity}.{self.slot}"


class Catalog(_Strict):
    """The tracked ``(entity, slot)`` pairs: the vocabulary an extractor may use."""

    name: str
    entries: tuple[CatalogEntry, ...]

    def pairs(self) -> list[str]:
        return [e.pair for e in self.entries]

    def value_type(self, pair: str) -> ValueType:
        """The type of ``pair``'s values; free text for a pair the catalog does not list."""
        return next((e.value for e in self.entries if e.pair == pair), TEXT)


class ExtractedClaim(_Strict):
    """A claim as the extractor emits it: no provenance, which is copied from the note."""

    entity: Identifier
    slot: Identifier
    value: OneLine = Field(min_length=1, max_length=MAX_VALUE_CHARS)
    branch: BranchName = "main"
    env: Env = "production"
    evidence_type: EvidenceType

    @property
    def pair(self) -> str:
        """``entity.slot``, as the catalog lists it."""
        return f"{self.entity}.{self.slot}"

    def to_claim(self, note: Note) -> Claim:
        return Claim(
            entity=self.entity,
            slot=self.slot,
            value=self.value,
            branch=self.branch,
            env=self.env,
            evidence=Evidence(type=self.evidence_type, commit=note.commit, source=note.id, files=note.files),
            at=note.at,
        )
