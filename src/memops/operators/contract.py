"""The decision space the engine defines (docs/design.md §3-4), enumerated cell by cell.

A decision depends on a few facts and nothing else: each side's standing (evidence type, commit
or none), which side is newer, how the values relate, and for an update, what the entry holds.
A *cell* fixes those facts; the symbolic rules answer it. A *region* is the rule that decides a
cell (``region``), the unit the contract suite is reported by.

The same cells make two things, drawn on disjoint names and values:

- training cases (``contract_cases``): drawn per synthetic episode, written in its own names and
  values, each region in proportion to its ``DIFFICULTY``, so every region of the contract is in
  the synthetic training data;
- the contract suite (``suite``): a fixed draw per region on ``SUITE_SUBJECTS``, names and
  values that no training source uses, split into a validation part (for choosing checkpoints)
  and a test part (the held-out figure).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, Literal

from memops.core.sessions import Episode
from memops.memory import ENVS, Claim, Evidence
from memops.memory.claims import ITEMS, Key, norm
from memops.memory.evidence import EVIDENCE_TYPES, evidence_score
from memops.memory.state import StateMemory
from memops.operators.examples import Case

Standing = tuple[str, bool]
"""An evidence type, and whether a commit backs it: all that a claim's score is made of."""
STANDINGS: tuple[Standing, ...] = tuple((t, c) for t in EVIDENCE_TYPES for c in (False, True))
Time = Literal["newer", "older", "same"]
"""When the incoming (second) claim was made, against the held (first) one."""
TIMES: tuple[Time, ...] = ("newer", "older", "same")
COMPARE_VALUES = ("identical", "restated", "different", "other-branch", "other-env", "other-slot")
"""How the second claim's value and key relate to the first's; ``restated``: equal once
normalised (case, quotes, trailing punctuation)."""
UPDATE_STATES = ("empty", "current", "contested", "superseded")
"""What the entry at the claim's key holds: nothing, a current value, a current value and a
contested one, a current value that superseded an earlier one."""
UPDATE_VALUES = ("identical", "restated", "contested-value", "superseded-value", "different")
"""The incoming value against the entry's: the current one as written or restated, the contested
one, the superseded one, or a value the key never held."""

Op = Literal["compare", "update"]


@dataclass(frozen=True)
class Cell:
    op: Op
    held: Standing
    """The standing of the claim in memory (compare's first, the entry's current value)."""
    incoming: Standing
    time: Time
    value: str
    state: str = "current"
    """Update only (``UPDATE_STATES``)."""

    @property
    def region(self) -> str:
        return region(self)


def standing_score(standing: Standing) -> int:
    """The score of a claim of this standing (``memory.evidence.evidence_score``)."""
    kind, committed = standing
    return evidence_score(kind, "commit" if committed else None)


def _decided_by(held: Standing, incoming: Standing, time: Time) -> str:
    """Rules 3-5: which one decides between two values at one key."""
    if standing_score(held) != standing_score(incoming):
        return "commit decides" if held[0] == incoming[0] else "evidence decides"
    return "recency decides" if time != "same" else "exact tie"


def region(cell: Cell) -> str:
    """The rule that decides the cell, as the suite reports it."""
    if cell.op == "compare":
        named = {
            "other-slot": "unrelated",
            "other-branch": "other scope",
            "other-env": "other scope",
            "identical": "same value",
            "restated": "restated value",
        }
        return named.get(cell.value) or _decided_by(cell.held, cell.incoming, cell.time)
    if cell.state == "empty":
        return "new key"
    if cell.value in ("identical", "restated"):
        return "same as current"
    if cell.value == "contested-value":
        return "back to contested value"
    return _decided_by(cell.held, cell.incoming, cell.time)


DIFFICULTY: dict[str, int] = {
    "unrelated": 1,
    "other scope": 2,
    "new key": 1,
    "same value": 2,
    "same as current": 2,
    "restated value": 3,
    "evidence decides": 3,
    "commit decides": 4,
    "recency decides": 5,
    "back to contested value": 5,
    "exact tie": 5,
}
"""How many of the rule's steps a region's answer depends on (a region further down the rule
is harder): its weight in the training draw, unless the build's ``contract_weights`` gives
another."""


@cache
def cells(op: Op) -> tuple[Cell, ...]:
    """Every cell of one decision."""
    if op == "compare":
        return tuple(
            Cell("compare", a, b, t, v)
            for a in STANDINGS
            for b in STANDINGS
            for t in TIMES
            for v in COMPARE_VALUES
        )
    out = [Cell("update", a, b, "newer", "different", "empty") for a in STANDINGS[:1] for b in STANDINGS]
    for state in UPDATE_STATES[1:]:
        values = [v for v in UPDATE_VALUES if v not in ("contested-value", "superseded-value")]
        values += {"contested": ["contested-value"], "superseded": ["superseded-value"]}.get(state, [])
        out += [
            Cell("update", a, b, t, v, state)
            for a in STANDINGS
            for b in STANDINGS
            for t in TIMES
            for v in values
        ]
    return tuple(out)


@cache
def by_region(op: Op) -> dict[str, tuple[Cell, ...]]:
    """One decision's cells per region, the easiest region first (``DIFFICULTY``)."""
    grouped: dict[str, list[Cell]] = {}
    for c in cells(op):
        grouped.setdefault(c.region, []).append(c)
    return {r: tuple(grouped[r]) for r in sorted(grouped, key=DIFFICULTY.__getitem__)}


def regions(op: Op) -> tuple[str, ...]:
    return tuple(by_region(op))


@dataclass(frozen=True)
class Subject:
    """The names and values a cell is written with: a key, at least four values of its slot that
    differ once normalised, and another slot (for ``other-slot``)."""

    entity: str
    slot: str
    values: tuple[str, ...]
    other: tuple[str, str]
    other_value: str
    at: datetime
    branch: str = "main"
    env: str = "production"


def _restated(value: str, rng: random.Random) -> str:
    """The value written otherwise, equal once normalised (``memory.claims.norm``)."""
    forms = [value.upper(), f"{value}.", f'"{value}"', f"`{value}`", value.lower()]
    return rng.choice([f for f in forms if f != value] or [f"{value}."])


def _commit(rng: random.Random) -> str:
    return f"{rng.getrandbits(28):07x}"


class Writer:
    """Claims about one subject, each with a standing and a time."""

    def __init__(self, subject: Subject, rng: random.Random, source: str) -> None:
        self.subject, self.rng, self.source = subject, rng, source

    def claim(self, value: str, standing: Standing, at: datetime, **key: str) -> Claim:
        s = self.subject
        evidence = Evidence(
            type=standing[0], commit=_commit(self.rng) if standing[1] else None, source=self.source
        )
        fields = {"entity": s.entity, "slot": s.slot, "branch": s.branch, "env": s.env, **key}
        return Claim(value=value, evidence=evidence, at=at, **fields)

    def later(self, at: datetime, time: Time) -> datetime:
        hours = self.rng.randrange(1, 72)
        return {"newer": at + timedelta(hours=hours), "older": at - timedelta(hours=hours), "same": at}[time]


WEAKEST: Standing = min(STANDINGS, key=standing_score)


NUMBER = re.compile(r"\d+")


def near_miss(value: str, rng: random.Random, others: Sequence[str] = ()) -> str | None:
    """The value written almost as it is, yet another value, the counterpart of ``_restated``:
    its first number changed (``14 shards`` -> ``28 shards``), or with ``others`` given, as the
    lists of real commits change, one item dropped or an item of another value added (``mypy`` ->
    ``mypy, pyright``). None where none of these applies."""
    items = ITEMS.split(value)
    held = {norm(i) for i in items}
    extra = [i for o in others for i in ITEMS.split(o) if norm(i) not in held]
    found = NUMBER.search(value)
    ways = [w for w, ok in (("number", found), ("drop", others and len(items) > 1), ("add", extra)) if ok]
    if not ways:
        return None
    way = ways[0] if len(ways) == 1 else rng.choice(ways)
    if way == "drop":
        items.pop(rng.randrange(len(items)))
        missed = ", ".join(items)
    elif way == "add":
        missed = ", ".join([*items, rng.choice(extra)])
    else:
        assert found is not None
        n = int(found.group())
        other = rng.choice([n * 2, max(1, n // 2), n + rng.randrange(1, 10)])
        missed = value[: found.start()] + str(other if other != n else n + 1) + value[found.end() :]
    return missed if norm(missed) not in ("", norm(value)) else None


def _recased(value: str, rng: random.Random) -> str:
    """The value in another case (``Adyen`` -> ``adyen``, ``36 h`` -> ``36 H``), one value once
    normalised, the restatement a 135M tokenizer spells with other tokens; else ``_restated``."""
    forms = {
        f for f in (value.upper(), value.lower(), value.title(), value.swapcase()) if norm(f) == norm(value)
    }
    forms.discard(value)
    return rng.choice(sorted(forms)) if forms else _restated(value, rng)


def compare_case(
    cell: Cell, subject: Subject, rng: random.Random, source: str = "contract", near_misses: float = 0.0
) -> Case:
    """``near_misses``: the share of cases whose values differ that set the value against a near
    miss of itself (``near_miss``) rather than another of the slot's values."""
    w = Writer(subject, rng, source)
    values = rng.sample(subject.values, 2)
    first = w.claim(values[0], cell.held, subject.at)
    at = w.later(subject.at, cell.time)
    value = {"identical": values[0], "restated": _restated(values[0], rng)}.get(cell.value, values[1])
    if cell.value == "different" and near_misses and rng.random() < near_misses:
        value = near_miss(values[0], rng) or value
    key: dict[str, str] = {}
    if cell.value == "other-branch":
        key["branch"] = f"feature/{subject.slot.replace('_', '-')}-{rng.randrange(2, 99)}"
    elif cell.value == "other-env":
        key["env"] = rng.choice([e for e in ENVS if e != subject.env])
    elif cell.value == "other-slot":
        key["entity"], key["slot"] = subject.other
        value = subject.other_value
    second = w.claim(value, cell.incoming, at, **key)
    inputs = {"first": first.model_dump(mode="json"), "second": second.model_dump(mode="json")}
    return Case((first, second), {**inputs, "region": cell.region}, [])


def update_case(
    cell: Cell, subject: Subject, rng: random.Random, source: str = "contract", near_misses: float = 0.0
) -> Case:
    """The entry is written through the engine (its rules), so it holds what such a history
    leaves; the incoming claim then meets its snapshot, as in replay. ``near_misses`` is
    compare's alone (update's values are drawn as they are)."""
    w = Writer(subject, rng, source)
    current, contested, earlier, fresh = rng.sample(subject.values, 4)
    memory = StateMemory()
    at = subject.at
    if cell.state == "superseded":
        # An earlier value, then the current one winning over it on recency at the same standing.
        memory.apply(w.claim(earlier, cell.held, at - timedelta(days=3)))
    if cell.state != "empty":
        memory.apply(w.claim(current, cell.held, at))
    if cell.state == "contested":
        # Weaker (or as strong and older): kept contested beside the current value.
        memory.apply(w.claim(contested, WEAKEST, at - timedelta(hours=rng.randrange(1, 48))))
    entry = memory.entry(Key(subject.entity, subject.slot, subject.branch, subject.env))
    value = {
        "identical": current,
        "restated": _restated(current, rng),
        "contested-value": contested,
        "superseded-value": earlier,
    }.get(cell.value, fresh)
    claim = w.claim(value, cell.incoming, w.later(at, cell.time))
    before = entry.snapshot() if entry is not None else None
    inputs = {
        "entry": before.snapshot_dict() if before is not None else None,
        "claim": claim.model_dump(mode="json"),
    }
    return Case((before, claim), {**inputs, "region": cell.region}, [])


CASES = {"compare": compare_case, "update": update_case}


def draw(op: Op, rng: random.Random, n: int, weights: Mapping[str, int] | None = None) -> list[Cell]:
    """``n`` cells, each region drawn in proportion to its ``DIFFICULTY`` (or its weight in
    ``weights``, where given), uniform within it."""
    grouped = by_region(op)
    weights = {**DIFFICULTY, **(weights or {})}
    picked = rng.choices(list(grouped), weights=[weights[r] for r in grouped], k=n)
    return [rng.choice(grouped[r]) for r in picked]


def episode_subjects(claims: Sequence[Claim]) -> list[Subject]:
    """An episode's keys as subjects: each key's values, padded with the episode's other values
    to four, so the training cases speak the episode's names and values. Times start a month
    before the episode's first claim, so a case's later claim never lies in the future."""
    pairs = list(dict.fromkeys((c.entity, c.slot) for c in claims))
    if len(pairs) < 2:
        return []
    at = min(c.at for c in claims) - timedelta(days=30)
    out = []
    for entity, slot in pairs:
        own = [c for c in claims if (c.entity, c.slot) == (entity, slot)]
        values = list({norm(v): v for v in [*(c.value for c in own), *(c.value for c in claims)]}.values())
        if len(values) < 4:
            continue
        other = next(c for c in claims if (c.entity, c.slot) != (entity, slot))
        branch, env = own[0].branch, own[0].env
        out.append(
            Subject(
                entity,
                slot,
                tuple(values[: max(4, len(own))]),
                (other.entity, other.slot),
                other.value,
                at,
                branch,
                env,
            )
        )
    return out


@dataclass(frozen=True)
class ContractDraw:
    """How many contract cases a synthetic episode adds per decision, and how: the data build's
    settings (``DataConfig``); the default adds none."""

    per_episode: int = 0
    weights: Mapping[str, int] | None = None
    """Each region's weight, over ``DIFFICULTY``."""
    near_misses: float = 0.0
    """Compare: the share of cases whose values differ that set a value against a near miss of
    itself (``near_miss``), and with ``twins``, the share of twins of pairs whose values are one
    that do (``value_twin``)."""
    twins: bool = False
    """Compare: each pair of a synthetic episode at one key is followed by its ``value_twin``."""
    real_twins: bool = False
    """With ``twins``, a trajectory's pairs too; the data build keeps them out of the
    validation and test splits (``data.build.trained_only``), which score real pairs as written."""
    near_twins: bool = False
    """With ``twins``, each twinned pair's ``near_twin`` too: a value missed by one item beside
    the value restated."""


NO_CONTRACT = ContractDraw()
"""No contract cases: the examples of an episode as its own sessions give them."""


def contract_cases(op: str, episode: Episode, rng: random.Random, how: ContractDraw) -> list[Case]:
    """``how.per_episode`` contract cases of one decision, drawn by ``draw`` and written on the
    episode's own subjects; their sessions are the episode's, which holds them (for the leakage
    checks)."""
    subjects = episode_subjects([c for s in episode.sessions for c in s.memory_claims()])
    if not subjects:
        return []
    sessions = [episode.sessions[0].id]
    source = f"{episode.sessions[0].id}~contract"
    return [
        replace(CASES[op](cell, rng.choice(subjects), rng, source, how.near_misses), sessions=sessions)
        for cell in draw(op, rng, how.per_episode, how.weights)
    ]


def _standing(claim: Claim) -> Standing:
    return claim.evidence.type, claim.evidence.commit is not None


def _twin(case: Case, value: str, relation: str) -> Case:
    """``case`` with its second claim's value alone replaced by ``value``, whose relation to the
    first's is ``relation``; a contract case's region follows."""
    first, second = case.arguments
    twin = Claim.model_validate({**second.model_dump(), "value": value})
    inputs = {"first": case.inputs["first"], "second": twin.model_dump(mode="json")}
    if "region" in case.inputs:
        time: Time = "same" if twin.at == first.at else "newer" if twin.at > first.at else "older"
        inputs["region"] = region(Cell("compare", _standing(first), _standing(twin), time, relation))
    return Case((first, twin), inputs, case.sessions)


def value_twin(
    case: Case, values: Sequence[str], rng: random.Random, near_misses: float = 0.0
) -> Case | None:
    """A compare case's counterfactual: the same two claims, keys, standings and times, with the
    second's value alone moved to the other side of "one value or two": where the two differ, the
    first's value as written or restated, in another case for half the restatements; where they
    are one, another of ``values``, or for ``near_misses`` of them a ``near_miss`` of the first's
    value. Paired so, a pair's standing tells nothing of whether its values are one; only the
    values do, and "the first value inside the second" tells nothing either. None for a pair
    across keys or with no other value to write."""
    first, second = case.arguments
    if first.key != second.key:
        return None
    if first.norm_value == second.norm_value:
        others = [v for v in values if norm(v) != first.norm_value]
        missed = near_miss(first.value, rng, others) if near_misses and rng.random() < near_misses else None
        if missed is None and not others:
            return None
        return _twin(case, missed or rng.choice(others), "different")
    if rng.random() < 1 / 3:
        return _twin(case, first.value, "identical")
    restate = _recased if near_misses and rng.random() < 1 / 2 else _restated
    return _twin(case, restate(first.value, rng), "restated")


def near_twin(case: Case, values: Sequence[str], rng: random.Random) -> Case | None:
    """A compare case's second twin, on the case's own side of "one value or two", its value
    written nearly as the first: where the two values differ, a ``near_miss`` of the first
    (a list less or more an item, as real requirement lists change; a number moved); where they
    are one, the first restated. Beside ``value_twin`` it makes each pair a triple with a value
    restated and a value missed by one item, so that a long list against itself less an item is
    not learned as a restatement. None across keys or where no near miss can be written."""
    first, second = case.arguments
    if first.key != second.key:
        return None
    if first.norm_value == second.norm_value:
        return _twin(case, _recased(first.value, rng), "restated")
    others = [v for v in values if norm(v) != first.norm_value]
    missed = near_miss(first.value, rng, others)
    return _twin(case, missed, "different") if missed is not None else None


def value_twins(
    cases: Sequence[Case], episode: Episode, rng: random.Random, near_misses: float = 0.0, near: bool = False
) -> list[Case]:
    """``value_twin`` of each of an episode's compare cases, and with ``near`` then each one's
    ``near_twin``, drawing new values from the values its claims hold at the first claim's slot,
    else from all it holds. Each twin's inputs name its case by position (``twin_of``), which is
    the case's example number in the episode, so a draw of rows can keep each pair with its twins
    (``train.recipe.balanced``). The near twins are drawn after every value twin, so the value
    twins are the same with ``near`` or without."""
    claims = [c for s in episode.sessions for c in s.memory_claims()]

    def values(first: Claim) -> list[str]:
        at_slot = [c.value for c in claims if (c.entity, c.slot) == (first.entity, first.slot)]
        return [v for v in at_slot if norm(v) != first.norm_value] or [c.value for c in claims]

    pools = [values(case.arguments[0]) for case in cases]
    twins = [(n, value_twin(case, pools[n], rng, near_misses)) for n, case in enumerate(cases)]
    if near:
        twins += [(n, near_twin(case, pools[n], rng)) for n, case in enumerate(cases)]
    return [replace(twin, inputs={**twin.inputs, "twin_of": n}) for n, twin in twins if twin is not None]


SUITE_AT = datetime(2024, 3, 4, 9, 30, tzinfo=UTC)
SUITE_SUBJECTS: tuple[Subject, ...] = tuple(
    Subject(entity, slot, values, other, other_value, SUITE_AT)
    for entity, slot, values, other, other_value in (
        (
            "dashboard_api",
            "avg_response_time",
            ("300ms", "250ms", "410ms", "180ms", "95ms"),
            ("dashboard_api", "error_budget"),
            "0.1% per month",
        ),
        (
            "billing_service",
            "invoice_currency",
            ("EUR", "USD", "GBP", "CHF", "JPY"),
            ("billing_service", "retry_limit"),
            "5 attempts",
        ),
        (
            "search_cluster",
            "shard_count",
            ("14 shards", "28 shards", "7 shards", "56 shards"),
            ("search_cluster", "replica_zone"),
            "eu-west-1b",
        ),
        (
            "mobile_client",
            "min_ios_version",
            ("iOS 16", "iOS 17", "iOS 15.4", "iOS 18"),
            ("mobile_client", "crash_reporter"),
            "Sentry",
        ),
        (
            "auth_gateway",
            "session_ttl",
            ("45 min", "9 h", "36 h", "20 min"),
            ("auth_gateway", "mfa_policy"),
            "required for admins",
        ),
        (
            "mail_relay",
            "provider",
            ("Postmark", "Amazon SES", "Mailgun", "SendGrid"),
            ("mail_relay", "daily_quota"),
            "50000 messages",
        ),
        (
            "orders_db",
            "engine",
            ("PostgreSQL 16", "MySQL 8.0", "PostgreSQL 14", "CockroachDB 23.2"),
            ("orders_db", "backup_schedule"),
            "nightly at 02:00 UTC",
        ),
        (
            "image_resizer",
            "max_upload",
            ("20 MB", "50 MB", "8 MB", "100 MB"),
            ("image_resizer", "output_format"),
            "WebP",
        ),
        (
            "checkout_flow",
            "payment_provider",
            ("Stripe", "Adyen", "Braintree", "Mollie"),
            ("checkout_flow", "guest_checkout"),
            "enabled",
        ),
        (
            "feature_store",
            "refresh_interval",
            ("every 4 min", "hourly", "every 40 min", "twice a day"),
            ("feature_store", "owner_team"),
            "ml-platform",
        ),
    )
)
"""The suite's names and values: a web service's, where the synthetic catalog is a build
toolchain's and the trajectories' are their repositories' (a test checks they never meet)."""
SUITE_PER_REGION = 60


def _part(case_id: str) -> str:
    """A stable split by id: a third of the cases validate, the rest are the held-out test."""
    return "validation" if int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16) % 3 == 0 else "test"


@cache
def suite(op: Op, part: str = "test", per_region: int = SUITE_PER_REGION) -> tuple[dict[str, Any], ...]:
    """The contract suite of one decision: ``per_region`` cases per region, drawn with a fixed
    seed, a third of them the validation part. Each is an example as the datasets write one
    (id, prompt, completion, JSON ``inputs``), with its region, label and call arguments; built
    once per process."""
    from memops.operators.prompts import completion
    from memops.operators.registry import OPERATORS

    spec = OPERATORS[op]
    rng = random.Random(f"contract-suite:{op}")
    out = []
    for name, members in by_region(op).items():
        for n in range(per_region):
            case = CASES[op](rng.choice(members), rng.choice(SUITE_SUBJECTS), rng, "contract-suite")
            case_id = f"contract/{op}/{name.replace(' ', '-')}/{n:03d}"
            if _part(case_id) != part:
                continue
            answer = spec.rule(*case.arguments)
            out.append(
                {
                    "id": case_id,
                    "op": op,
                    "region": name,
                    "label": answer.label,
                    "arguments": case.arguments,
                    "prompt": spec.messages(*case.arguments),
                    "completion": completion(answer),
                    "inputs": json.dumps(case.inputs, sort_keys=True, ensure_ascii=False),
                }
            )
    return tuple(out)


def suite_names() -> Iterator[str]:
    """Every entity, slot and value the suite writes: what no training source may use."""
    for s in SUITE_SUBJECTS:
        yield from (s.entity, s.slot, *s.values, *s.other, s.other_value)
