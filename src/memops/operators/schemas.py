"""Operator I/O schemas: what each operator returns, on the shared records of ``core.records``.

The same pydantic models validate gold annotations, render training completions, produce the
JSON schemas that constrain decoding, and parse model output at inference.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from memops.core.records import Catalog, ExtractedClaim, Note, added_lines
from memops.core.values import MAX_VALUE_CHARS
from memops.memory.compare import Relation, Winner
from memops.memory.evidence import CHANGE_EVIDENCE, EVIDENCE_TYPES, WITNESS_EVIDENCE
from memops.memory.lines import ONE_LINE
from memops.memory.state import Action

MAX_CLAIMS = 8
MAX_PAIRS = 6
"""Stage 1 of the two-stage extractor selects at most this many catalog pairs."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExtractOutput(_Strict):
    claims: list[ExtractedClaim] = Field(max_length=MAX_CLAIMS)


class CompareOutput(_Strict):
    relation: Relation
    winner: Winner

    @property
    def label(self) -> str:
        """The answer's class, as datasets and confusion matrices name it."""
        return f"{self.relation}/{self.winner}"


class UpdateOutput(_Strict):
    action: Action

    @property
    def label(self) -> str:
        return self.action


class Selection(_Strict):
    """Stage 1 of the two-stage extractor: the catalog pairs a note supports.

    ``select_model`` narrows ``pairs`` to the catalog's enum. Duplicates are rejected here
    because grammar engines (xgrammar included) do not enforce ``uniqueItems``.
    """

    pairs: list[str] = Field(max_length=MAX_PAIRS)

    @field_validator("pairs")
    @classmethod
    def _distinct(cls, pairs: list[str]) -> list[str]:
        if len(set(pairs)) != len(pairs):
            raise ValueError("a pair is selected twice")
        return pairs


@lru_cache(maxsize=64)
def select_model(pairs: tuple[str, ...]) -> type[Selection]:
    """The stage-1 schema for one catalog: items are an enum of its ``entity.slot`` strings."""
    pair = Literal[pairs]  # type: ignore[valid-type]
    field = Field(max_length=MAX_PAIRS, json_schema_extra={"uniqueItems": True})
    return create_model("Selection", __base__=Selection, pairs=(list[pair], field))


BRANCH_IN_TEXT = re.compile(r"(?<![\w/.-])([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._/-]*[A-Za-z0-9])")


def note_branches(note: Note) -> tuple[str, ...]:
    """The branch names a fill may use: ``main`` and every ``a/b`` token of the note's prose.

    Branches are open-ended, so the enum is built per note; file paths in the prose are harmless
    extra options, and the touched-files list is left out because it never names a branch.
    """
    found = BRANCH_IN_TEXT.findall(f"{note.title}\n{note.text}")
    return tuple(dict.fromkeys(["main", *found]))


def note_evidence(note: Note) -> tuple[str, ...]:
    """The evidence types a fill may use: a commit's note that says what the commit changed
    (``core.records.added_lines``) tells of a change the commit made, so a code change or a
    hotfix; a note with no commit tells of none (``WITNESS_EVIDENCE``); any other commit's note,
    any type. Every claim of the training data keeps to this. On the mined held-out notes the
    extract adapter typed 31 of 348 commits' changes a stale observation, which the engine
    weighs 44 where the commit's change weighs 100, and 48 of 52 notes with no commit (an old
    wiki page, a maintenance branch) a code change, which then replaced the current value."""
    if not note.commit:
        return WITNESS_EVIDENCE
    return CHANGE_EVIDENCE if added_lines(note.text) is not None else EVIDENCE_TYPES


@lru_cache(maxsize=1024)
def fill_model(
    pair: str,
    branches: tuple[str, ...],
    grammar: str | None = None,
    evidence: tuple[str, ...] = EVIDENCE_TYPES,
) -> type[ExtractedClaim]:
    """The stage-2 schema for one selected pair: the pair is fixed, the closed domains are enums
    (the branches and ``evidence`` types the note allows: ``note_branches``, ``note_evidence``),
    and a typed slot's value is held to its type's ``grammar`` (``ValueType.grammar``)."""
    entity, slot = pair.split(".", 1)
    value: Any = (
        (Annotated[str, Field(min_length=1, max_length=MAX_VALUE_CHARS, pattern=grammar), ONE_LINE], ...)
        if grammar
        else (ExtractedClaim.model_fields["value"].annotation, ExtractedClaim.model_fields["value"])
    )
    return create_model(
        "Fill",
        __base__=ExtractedClaim,
        entity=(Literal[entity], ...),  # type: ignore[valid-type]
        slot=(Literal[slot], ...),  # type: ignore[valid-type]
        branch=(Literal[branches], "main"),  # type: ignore[valid-type]
        value=value,
        evidence_type=(Literal[evidence], ...),  # type: ignore[valid-type]
    )


def stage_answers(
    note: Note, catalog: Catalog, claims: Sequence[ExtractedClaim]
) -> tuple[Selection, list[ExtractedClaim]]:
    """What a right two-stage extraction answers: the pairs the claims name, in order of first
    mention, then one fill per pair, each validated by the schema that constrains that call.

    A pair claimed twice in one note (two scopes) is filled once, so its fill is its first
    claim: the one claim the procedure can return for it. A target the grammar could never
    produce raises here instead of reaching training data or an oracle.
    """
    first: dict[str, ExtractedClaim] = {}
    for claim in claims:
        first.setdefault(claim.pair, claim)
    pairs = list(first)[:MAX_PAIRS]
    selection = select_model(tuple(catalog.pairs()))(pairs=pairs)
    branches, evidence = note_branches(note), note_evidence(note)
    fills = [fill_model(p, branches, catalog.value_type(p).grammar(), evidence) for p in pairs]
    return selection, [
        fill.model_validate(first[p].model_dump()) for fill, p in zip(fills, pairs, strict=True)
    ]


_REPEATED_CLASS = re.compile(r"^\^(\[[^\]]+\])(\[[^\]]+\])\*\$$")
"""``^[first][rest]*$``: the identifier and branch patterns, whose length bound fits the regex."""


def _grammar_string(node: dict[str, Any]) -> None:
    """Say a string's length bound in its pattern: xgrammar ignores ``maxLength`` beside a
    ``pattern`` (and vLLM refuses such a schema outright), so ``^[a][b]*$`` with ``maxLength``
    n becomes ``^[a][b]{0,n-1}$``. Any other patterned bound is left to validation."""
    if "pattern" not in node or not {"maxLength", "minLength"} & node.keys():
        return
    shape = _REPEATED_CLASS.match(node["pattern"])
    longest = node.pop("maxLength", None)
    node.pop("minLength", None)  # the pattern's first class already asks for one character
    if shape and longest is not None:
        node["pattern"] = f"^{shape[1]}{shape[2]}{{0,{longest - 1}}}$"


def _grammar_node(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _grammar_node(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "object" and "properties" in node:
        node["required"] = list(node["properties"])
        for prop in node["properties"].values():
            prop.pop("default", None)
    if node.get("type") == "string":
        _grammar_string(node)
    node.pop("uniqueItems", None)  # no grammar engine enforces it; parsing drops repeats
    for value in node.values():
        _grammar_node(value)


def held_to(schema: dict[str, Any], field: str, pattern: str) -> dict[str, Any]:
    """``schema`` (a ``json_schema``) with ``field`` held to ``pattern`` for decoding alone: the
    model that parses the answer does not carry the pattern. Its length bounds go as
    ``_grammar_string`` says them (vLLM refuses a pattern beside ``maxLength``)."""
    node = schema["properties"][field]
    node["pattern"] = pattern
    _grammar_string(node)
    return schema


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema as grammar engines (xgrammar, locally and in vLLM) take it.

    Every property is required: defaults are for humans writing annotations, and a generated
    object always spells every field, so training targets and grammar agree on one shape.
    Keywords xgrammar cannot enforce are rewritten into ones it can, or dropped where parsing
    and validation enforce them after decoding.
    """
    schema = model.model_json_schema()
    _grammar_node(schema)
    return schema


__all__ = [
    "MAX_CLAIMS",
    "MAX_PAIRS",
    "CompareOutput",
    "ExtractOutput",
    "Selection",
    "UpdateOutput",
    "fill_model",
    "held_to",
    "json_schema",
    "note_branches",
    "note_evidence",
    "select_model",
    "stage_answers",
]
