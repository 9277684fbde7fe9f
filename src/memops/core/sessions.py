"""Sessions, queries and episodes: the gold material every operator dataset is derived from.

An *episode* is one ordered history with its own catalog: a synthetic scenario or a replayed
commit trajectory. Its sessions, replayed through the engine in order, define every label.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cached_property
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memops.core.records import Catalog, ExtractedClaim, Note
from memops.memory.claims import BranchName, Claim, Env, Identifier, Key, Timestamp, norm
from memops.memory.state import Decision, Entry, Judge, StateMemory, keep_current

Source = Literal["synthetic", "trajectory"]


def is_real(source: str) -> bool:
    """Whether an episode, or an example made from one, comes from a real commit history rather
    than a synthetic scenario: what a split's real rows (``real_validation``) and twins key on."""
    return source != "synthetic"


QueryType = Literal["current-state", "scoped-state", "provenance", "temporal", "stale-suppression"]
QUERY_TYPES: tuple[QueryType, ...] = (
    "current-state",
    "scoped-state",
    "provenance",
    "temporal",
    "stale-suppression",
)
Ask = Literal["value", "commit", "value_at"]


class Session(Note):
    """A note plus the claims it supports (its gold extraction)."""

    claims: tuple[ExtractedClaim, ...] = ()
    stated: tuple[str, ...] = ()
    """Each claim's value as the note words it (a synthetic note quotes or, mostly, paraphrases
    the catalog's value: ``phrasing.stated``); empty where the gold values are already the
    note's own words, as a trajectory's are."""

    @model_validator(mode="after")
    def _one_wording_per_claim(self) -> Session:
        if self.stated and len(self.stated) != len(self.claims):
            raise ValueError(f"stated: {len(self.stated)} wordings for {len(self.claims)} claims")
        return self

    def memory_claims(self) -> list[Claim]:
        return [c.to_claim(self) for c in self.claims]

    def grounded_claims(self) -> tuple[ExtractedClaim, ...]:
        """The gold claims with each value as the note words it: what a reader of this note alone
        can write, and what a trajectory's gold value is (a few of the note's words).
        The engine's gold keeps ``claims``: one value however each note phrases it."""
        if not self.stated:
            return self.claims
        return tuple(
            ExtractedClaim.model_validate({**c.model_dump(), "value": v})
            for c, v in zip(self.claims, self.stated, strict=True)
        )

    def note(self) -> Note:
        return Note(
            id=self.id, at=self.at, commit=self.commit, title=self.title, text=self.text, files=self.files
        )


class QueryTarget(BaseModel):
    """What a query asks about, in terms the engine's state can answer directly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entity: Identifier
    slot: Identifier
    branch: BranchName = "main"
    env: Env = "production"
    ask: Ask = "value"
    at: Timestamp | None = None
    """For ``value_at``: the moment whose current value is asked."""

    @model_validator(mode="after")
    def _value_at_has_a_time(self) -> QueryTarget:
        if self.ask == "value_at" and self.at is None:
            raise ValueError("ask: value_at needs at: the moment whose value is asked")
        return self

    @property
    def key(self) -> Key:
        return Key(self.entity, self.slot, self.branch, self.env)


def has_token(text: str, token: str) -> bool:
    """Whether normalised ``text`` holds ``token`` whole: not inside a longer word or number.
    ``3.1`` is not in ``3.10`` nor in ``3.1.2``, ``C`` not in ``C++``; ``3.1`` is in ``3.1, 3.2``;
    ``filesystem.entries`` is in ``permissions.filesystem.entries``."""
    return re.search(r"(?<!\w)" + re.escape(norm(token)) + r"(?![\w+#])(?!\.\d)", text) is not None


class Query(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    type: QueryType
    question: str
    target: QueryTarget
    required: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()

    def accepts(self, answer: str) -> bool:
        """Token check on the normalised answer: all required, none forbidden, one of any_of."""
        text = norm(answer)
        return (
            all(has_token(text, t) for t in self.required)
            and not any(has_token(text, t) for t in self.forbidden)
            and (not self.any_of or any(has_token(text, t) for t in self.any_of))
        )


class Episode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    source: Source
    family: str
    catalog: Catalog
    sessions: tuple[Session, ...] = Field(min_length=1)
    queries: tuple[Query, ...] = ()

    @cached_property
    def commit_of(self) -> dict[str, str]:
        """Each session's commit by session id (a session without one is left out), built once:
        every example names the commits of its sessions."""
        return {s.id: s.commit for s in self.sessions if s.commit}

    def trace(self, memory: StateMemory | None = None) -> Iterator[GoldStep]:
        """The gold replay, one step per claim: every session's gold claims written in order into
        ``memory`` (a fresh engine by default). Every label is read off these steps: the update
        examples, the compare examples, the symbolic oracle and the gold state."""
        memory = StateMemory() if memory is None else memory
        for session in self.sessions:
            for claim in session.memory_claims():
                entry = memory.entry(claim.key)
                yield GoldStep(session, claim, entry and entry.snapshot(), memory.apply(claim))

    def replay(self, judge: Judge = keep_current) -> StateMemory:
        """The gold state: the engine once the whole trace is written."""
        memory = StateMemory(judge=judge)
        for _ in self.trace(memory):
            pass
        return memory


class GoldStep(NamedTuple):
    """One claim of a gold replay: the session it came from, the entry it met (its snapshot as
    it was before the claim was written: the live items the rule decides on; None at a new key)
    and what the engine decided."""

    session: Session
    claim: Claim
    before: Entry | None
    decision: Decision
