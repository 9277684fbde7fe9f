"""Operator I/O schemas: what a note and a catalog look like, and what each operator returns.

The same pydantic models validate gold annotations, render training completions, produce the
JSON schemas that constrain decoding, and parse model output at inference.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory.claims import BranchName, Claim, Env, Identifier, Timestamp
from memory.compare import Relation, Winner
from memory.evidence import EVIDENCE_TYPES, Evidence
from memory.state import Action

EvidenceType = Literal[EVIDENCE_TYPES]  # type: ignore[valid-type]
MAX_CLAIMS = 8


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Note(_Strict):
    """A session note as a reader sees it; commit, date, id and files become claim provenance."""

    id: str = Field(min_length=1)
    at: Timestamp
    commit: str | None = None
    title: str
    text: str
    files: tuple[str, ...] = ()


class CatalogEntry(_Strict):
    entity: Identifier
    slot: Identifier
    description: str = Field(min_length=1)

    @property
    def pair(self) -> str:
        return f"{self.entity}.{self.slot}"


class Catalog(_Strict):
    """The tracked ``(entity, slot)`` pairs: the vocabulary an extractor may use."""

    name: str
    entries: tuple[CatalogEntry, ...]

    def pairs(self) -> list[str]:
        return [e.pair for e in self.entries]


class ExtractedClaim(_Strict):
    """A claim as the extractor emits it: no provenance, which is copied from the note."""

    entity: Identifier
    slot: Identifier
    value: str = Field(min_length=1, max_length=160)
    branch: BranchName = "main"
    env: Env = "production"
    evidence_type: EvidenceType

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


class ExtractOutput(_Strict):
    claims: list[ExtractedClaim] = Field(max_length=MAX_CLAIMS)


class CompareOutput(_Strict):
    relation: Relation
    winner: Winner


class UpdateOutput(_Strict):
    action: Action


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with every property required, as constrained decoding needs.

    Defaults are for humans writing annotations; a generated object always spells every field,
    so training targets and grammar agree on one shape.
    """
    schema = model.model_json_schema()
    for node in [schema, *schema.get("$defs", {}).values()]:
        if node.get("type") == "object" and "properties" in node:
            node["required"] = list(node["properties"])
            for prop in node["properties"].values():
                prop.pop("default", None)
    return schema


__all__ = [
    "MAX_CLAIMS",
    "Catalog",
    "CatalogEntry",
    "CompareOutput",
    "EvidenceType",
    "ExtractOutput",
    "ExtractedClaim",
    "Note",
    "UpdateOutput",
    "json_schema",
]
