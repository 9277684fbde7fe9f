"""Claims, evidence, norm, the status lattice and the JSON round trip."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import ValidationError

from memops.memory import (
    EVIDENCE_WEIGHTS,
    Claim,
    Evidence,
    IllegalTransition,
    StateMemory,
    Status,
    advance,
    evidence_score,
    norm,
)
from tests.memory.helpers import claim


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("PostgreSQL 15", "postgresql 15"),
        ("  PostgreSQL\t\n 15 ", "postgresql 15"),
        ('"PostgreSQL 15."', "postgresql 15"),
        ("“Ｐｏｓｔｇｒｅｓ”", "postgres"),  # fullwidth letters fold under NFKC
        ("`v2` approvals!", "v2` approvals"),
        ("node>=20", "node>=20"),
        ("C++", "c++"),
        ("-1", "-1"),
        ("'(beta)'.", "(beta)"),
        ('"C#".', "c#"),
        ("a\u200bb", "ab"),  # zero-width space
        ("\ufeffv2\u00ad", "v2"),  # byte-order mark, soft hyphen
    ],
)
def test_norm(raw: str, expected: str) -> None:
    assert norm(raw) == expected


def test_score_is_weight_plus_commit_bonus() -> None:
    assert evidence_score("code-change", None) == 60
    assert evidence_score("code-change", "a684a36") == 100
    assert Evidence(type="stale-observation").score == 4
    assert EVIDENCE_WEIGHTS["config-observation"] == 45


def test_unknown_evidence_type_is_named_in_the_error() -> None:
    with pytest.raises(ValidationError) as err:
        Evidence(type="rumour")
    text = str(err.value)
    assert "rumour" in text and "code-change" in text and "type" in text


@pytest.mark.parametrize(
    ("field", "bad", "message"),
    [
        ("entity", "Database", "entity"),
        ("slot", "engine version", "slot"),
        ("value", "  ...  ", "empty after normalisation"),
        ("env", "two words", "env"),
        ("branch", "has space", "branch"),
        ("at", "2026-03-08T17:38:00", "UTC offset"),
        ("at", "yesterday", "at"),
        ("at", 20260422, "read as seconds since 1970"),
        ("at", "20260308", "read as seconds since 1970"),
        ("at", "2099-01-01T00:00:00+00:00", "lies in the future"),
    ],
)
def test_claim_rejects_malformed_fields(field: str, bad: str, message: str) -> None:
    data = claim("PostgreSQL 15").model_dump()
    data[field] = bad
    with pytest.raises(ValidationError) as err:
        Claim.model_validate(data)
    assert message in str(err.value)
    assert field in str(err.value)


def test_invisible_characters_do_not_make_a_second_value() -> None:
    mem = StateMemory()
    mem.apply(claim("ab"))
    assert mem.apply(claim("a\u200bb", day=1)).action == "merge"


def test_claim_rejects_unknown_fields_and_bad_commits() -> None:
    data = claim("PostgreSQL 15").model_dump()
    with pytest.raises(ValidationError, match="extra"):
        Claim.model_validate({**data, "confidence": 0.9})
    with pytest.raises(ValidationError, match="hex"):
        Evidence(type="code-change", commit="not-a-sha")


def test_claim_defaults_and_key() -> None:
    c = Claim(
        entity="database",
        slot="engine",
        value="PostgreSQL 15",
        evidence=Evidence(type="code-change", commit="a684a36", source="s3"),
        at="2026-03-08T17:38:00-07:00",
    )
    assert (c.branch, c.env) == ("main", "production")
    assert c.key == ("database", "engine", "main", "production")
    assert str(c.key) == "database.engine [main/production]"
    assert c.score == 100


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (Status.PROPOSED, Status.SUPERSEDED),
        (Status.CONFIRMED, Status.CONTESTED),
        (Status.CONFIRMED, Status.PROPOSED),
        (Status.CONTESTED, Status.PROPOSED),
        (Status.SUPERSEDED, Status.CONFIRMED),
        (Status.SUPERSEDED, Status.CONTESTED),
        (Status.SUPERSEDED, Status.PROPOSED),
    ],
)
def test_illegal_transitions_raise(src: Status, dst: Status) -> None:
    with pytest.raises(IllegalTransition, match=f"{src} -> {dst}"):
        advance(src, dst)


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (Status.PROPOSED, Status.CONFIRMED),
        (Status.PROPOSED, Status.CONTESTED),
        (Status.CONTESTED, Status.CONFIRMED),
        (Status.CONTESTED, Status.SUPERSEDED),
        (Status.CONFIRMED, Status.SUPERSEDED),
    ],
)
def test_legal_transitions(src: Status, dst: Status) -> None:
    assert advance(src, dst) is dst


def test_json_round_trip_preserves_everything() -> None:
    mem = StateMemory()
    for c in [
        claim("v1", "human-note"),
        claim("v2", "code-change", commit="a684a36", day=1),
        claim("v0", "stale-observation", day=2),
        claim("v0", "human-note", day=3),
        claim("x", "config-observation", env="staging", entity="cache", slot="backend"),
    ]:
        mem.apply(c)
    text = mem.to_json()
    back = StateMemory.from_json(text)
    assert back == mem
    assert back.to_json() == text
    assert back.render() == mem.render()
    # the rebuilt memory keeps working: the contested value can still absorb claims
    assert back.apply(claim("V0", "human-note", day=4, source="later")).action == "merge"


def test_from_json_rejects_other_versions() -> None:
    data = json.loads(StateMemory().to_json())
    data["version"] = 99
    with pytest.raises(ValueError, match="version"):
        StateMemory.from_dict(data)


def _saved() -> dict:
    mem = StateMemory()
    for c in [claim("v1", "human-note"), claim("v2", "code-change", commit="a684a36", day=1)]:
        mem.apply(c)
    mem.apply(claim("x", "config-observation", env="staging", entity="cache", slot="backend"))
    return json.loads(mem.to_json())


def _corrupt(change: str) -> dict:
    data = _saved()
    entry = next(e for e in data["entries"] if e["key"]["entity"] == "database")
    if change == "version-true":
        data["version"] = True
    elif change == "current-negative":
        entry["current"] = -1
    elif change == "current-superseded":
        entry["current"] = next(i for i, it in enumerate(entry["items"]) if it["status"] == "superseded")
    elif change == "foreign-claim":
        entry["items"][0]["claims"][0]["env"] = "staging"
    elif change == "duplicate-entry":
        data["entries"].append(json.loads(json.dumps(entry)))
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("version-true", "version True"),
        ("current-negative", "current: -1 is not an item index"),
        ("current-superseded", "points at a superseded item"),
        (
            "foreign-claim",
            "a claim for database.engine [main/staging] in the entry database.engine [main/production]",
        ),
        ("duplicate-entry", "a second entry for database.engine"),
    ],
)
def test_from_json_checks_the_engine_invariants(change: str, message: str) -> None:
    StateMemory.from_dict(_saved())  # the uncorrupted file loads
    with pytest.raises(ValueError, match=re.escape(message)):
        StateMemory.from_dict(_corrupt(change))
