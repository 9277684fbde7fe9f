"""Slot claims, their key and value normalisation."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Annotated, Literal, NamedTuple

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from memops.memory.evidence import Evidence
from memops.memory.lines import OneLine

ENVS: tuple[str, ...] = ("production", "staging", "preview", "dev")
Env = Literal["production", "staging", "preview", "dev"]
DEFAULT_BRANCH = "main"
DEFAULT_ENV: Env = "production"

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
BranchName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$", max_length=100)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=64)]
"""Any environment a claim may name (``eu-west-canary``); the extractor writes one of ``ENVS``."""

_WS = re.compile(r"\s+")
# Quote marks that may wrap a value without changing it ("`PostgreSQL 15`"), and the sentence
# punctuation that may end one ("PostgreSQL 15."). Nothing else is insignificant: C vs C++, 1 vs -1.
_QUOTES = "\"'`“”‘’«»„‚‹›"
_TRAILING = ".,;:!?"


ITEMS = re.compile(r"\s*,\s*")
"""Where a value written as a list (``mypy, pyright``) turns from one item to the next."""


def value_items(value: str) -> list[str]:
    """A value's items as a list writes them (one item for a value that is no list)."""
    return [i for i in ITEMS.split(value.strip()) if i]


def norm(value: str) -> str:
    """Canonical form for value equality (docs/design.md §3): NFKC, lowercase, one space, without
    surrounding quotes or trailing sentence punctuation. Invisible format characters (Unicode
    category Cf: zero-width space and joiners, the byte-order mark, soft hyphens) are dropped,
    so ``"a\u200bb"`` and ``"ab"`` are one value, not two that supersede each other."""
    if not value.isascii():
        value = "".join(ch for ch in unicodedata.normalize("NFKC", value) if unicodedata.category(ch) != "Cf")
    text = value
    text = _WS.sub(" ", text.lower())
    while True:
        stripped = text.strip().strip(_QUOTES).rstrip(_TRAILING)
        if stripped == text:
            return text
        text = stripped


class Key(NamedTuple):
    """Where claims meet: two claims interact only when their keys are equal."""

    entity: str
    slot: str
    branch: str
    env: str

    def __str__(self) -> str:
        return f"{self.entity}.{self.slot} [{self.branch}/{self.env}]"


FUTURE_TOLERANCE = timedelta(days=1)
"""How far past this machine's clock a time may lie (clock skew between authors' machines)."""


_NUMBER = re.compile(r"\s*[+-]?\d+(\.\d*)?\s*")


def _iso_only(value: object) -> object:
    number = isinstance(value, str) and _NUMBER.fullmatch(value)
    if number or (isinstance(value, int | float) and not isinstance(value, bool)):
        raise ValueError(
            f"timestamp must be an ISO-8601 string with a UTC offset, e.g. 2026-03-08T17:38:00-07:00; "
            f"got the number {value!r}, which would be read as seconds since 1970"
        )
    return value


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamp must carry a UTC offset, e.g. 2026-03-08T17:38:00-07:00")
    if value > datetime.now(UTC) + FUTURE_TOLERANCE:
        raise ValueError(
            f"timestamp {value.isoformat()} lies in the future (more than {FUTURE_TOLERANCE} past "
            "this machine's clock); a claim from the future would win every recency tie for good"
        )
    return value


Timestamp = Annotated[datetime, BeforeValidator(_iso_only), AfterValidator(_aware)]
"""An ISO-8601 time with its UTC offset, not in the future. Naive times are ambiguous across
authors and numbers read as epoch seconds (``20260422`` became 1970-08-23), so both are refused."""


def _non_blank(value: str) -> str:
    if not norm(value):
        raise ValueError("value is empty after normalisation")
    return value


class Claim(BaseModel):
    """One statement about a slot of the project, as observed by one session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entity: Identifier
    slot: Identifier
    value: Annotated[OneLine, Field(min_length=1, max_length=300), AfterValidator(_non_blank)]
    branch: BranchName = DEFAULT_BRANCH
    env: EnvName = DEFAULT_ENV
    evidence: Evidence
    at: Timestamp

    def model_post_init(self, context: object, /) -> None:
        # Derive once at validation, so the engine's write path only reads attributes.
        self.key, self.norm_value, self.score  # noqa: B018

    @cached_property
    def key(self) -> Key:
        return Key(self.entity, self.slot, self.branch, self.env)

    @cached_property
    def norm_value(self) -> str:
        return norm(self.value)

    @cached_property
    def score(self) -> int:
        return self.evidence.score
