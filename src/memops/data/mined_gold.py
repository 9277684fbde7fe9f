"""The gold a mined history is written with: each change's claims, the stale and experimental
notes that contradict them (distractors), and the queries, each answered by replaying the gold
through the engine's rules; and the words of a value a query's check looks for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

import yaml

from memops.core.records import Catalog, CatalogEntry
from memops.core.sessions import Episode, has_token
from memops.data.trajectory import (
    CommitAnnotation,
    CommitRecord,
    Distractor,
    commit_session,
    distractor_session,
)
from memops.memory.claims import DEFAULT_BRANCH, DEFAULT_ENV, Key, norm
from memops.memory.reader import UNKNOWN, answer
from memops.memory.state import StateMemory


class MineError(RuntimeError):
    """A repository or branch that cannot be mined, with the reason."""


@dataclass(frozen=True)
class Change:
    commit: str
    pair: str
    value: str
    before: str | None


def same(a: str | None, b: str | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and norm(a) == norm(b))


def tokens(value: str) -> list[str]:
    """The words of a value a query's token check can look for: split at separators, each with
    three characters or a digit (not "on", "ci"), in order, without repeats."""
    parts = re.split(r"[\s,;()]+", norm(value))
    return list(
        dict.fromkeys(p for p in parts if re.search(r"\w", p) and (len(p) > 2 or re.search(r"\d", p)))
    )


def distinct(value: str, other: str | None) -> list[str]:
    """The words of ``value`` that the token check does not find in ``other`` (``bsd`` is in
    ``BSD-3-Clause``): what tells the two apart, and so what a query may forbid."""
    return [t for t in tokens(value) if not (other and has_token(norm(other), t))]


def required(value: str, other: str | None) -> list[str]:
    """What an answer must hold: the words that tell ``value`` from ``other``, or all of its
    words where none does (``MIT`` after ``MIT License``), at most three."""
    return (distinct(value, other) or tokens(value))[:3]


def short_description(entry: CatalogEntry) -> str:
    return entry.description.split(" (")[0]


def claim(pair: str, value: str, evidence: str, branch: str | None = None) -> dict:
    entity, slot = pair.split(".", 1)
    out = {"entity": entity, "slot": slot, "value": value}
    if branch:
        out["branch"] = branch
    return {**out, "evidence_type": evidence}


def stale_pairs(changes: list[Change]) -> list[Change]:
    """The last change of each slot that had an earlier value, most changed slots first."""
    last: dict[str, Change] = {}
    count: dict[str, int] = {}
    for c in changes:
        count[c.pair] = count.get(c.pair, 0) + 1
        if c.before is not None:
            last[c.pair] = c
    return sorted(last.values(), key=lambda c: (-count[c.pair], c.pair))


def distractors(
    name: str, changes: list[Change], entries: dict[str, CatalogEntry], last: datetime
) -> list[dict]:
    """Notes after the last commit that state an old value: two stale documents, a contributor's
    belief and a maintenance branch that keeps the first value. Each names the project, so that
    no two trajectories share a note (a shared one would leak a held-out note into training)."""
    stale = stale_pairs(changes)
    if not stale:
        raise MineError(f"{name}: no fact changed after it was first stated, so nothing can be stale")
    out = []
    kinds = [
        (
            "stale",
            "Old contributing guide",
            "The contributing guide of {name} still says {what}: {value}.",
            "stale-observation",
        ),
        (
            "stale",
            "Outdated wiki page",
            "A wiki page on {name} written a while ago gives {what} as {value}.",
            "stale-observation",
        ),
        (
            "belief",
            "Chat with a contributor",
            "A contributor to {name} believes {what} is {value}.",
            "human-note",
        ),
    ]
    for i, (kind, title, text, evidence) in enumerate(kinds):
        change = stale[i % len(stale)]
        what = short_description(entries[change.pair])
        at = (last + timedelta(days=i + 1)).isoformat()
        out.append(
            {
                "id": f"{name}-{kind}-{i + 1}",
                "at": at,
                "title": title,
                "text": text.format(name=name, what=what, value=change.before),
                "claims": [claim(change.pair, str(change.before), evidence)],
            }
        )
    first = next(c for c in changes if c.pair == stale[0].pair)
    what = short_description(entries[first.pair])
    out.append(
        {
            "id": f"{name}-branch-1",
            "at": (last + timedelta(days=len(kinds) + 1)).isoformat(),
            "title": "Maintenance branch",
            "text": f"The maint/legacy branch of {name} keeps {what} at {first.value}.",
            "claims": [claim(first.pair, first.value, "branch-experiment", branch="maint/legacy")],
        }
    )
    return out


def target(pair: str, **extra: str) -> dict:
    entity, slot = pair.split(".", 1)
    return {"entity": entity, "slot": slot, **extra}


def gold_replay(
    name: str, catalog: Catalog, records: list[CommitRecord], commits: list[dict], noise: list[dict]
) -> StateMemory:
    """The engine once the trajectory's gold claims are written, in the order and with the notes
    ``data.trajectory`` gives them (``commit_session``): a session is dated when its commit landed,
    so a history whose commits landed out of order (a rebased branch fast-forwarded) is replayed
    in landing order, as the queries' answers must be."""
    sessions = [
        commit_session(name, r, CommitAnnotation.model_validate(c))
        for r, c in zip(records, commits, strict=True)
    ]
    sessions += [distractor_session(Distractor.model_validate(d)) for d in noise]
    sessions.sort(key=lambda s: s.at)
    return Episode(
        id=name, source="trajectory", family="trajectory", catalog=catalog, sessions=tuple(sessions)
    ).replay()


def queries(
    name: str,
    changes: list[Change],
    records: list[CommitRecord],
    entries: dict[str, CatalogEntry],
    memory: StateMemory,
    noise: list[dict],
) -> list[dict]:
    """Each slot's value now (``stale-suppression`` where a distractor states an old one), its
    value at a time between its last two changes, and the commit of its current value; every
    answer read off the gold replay, so that the engine's rules define it, as they define every
    label."""
    at = {r.commit: r.landed for r in records}
    history: dict[str, list[Change]] = {}
    for c in changes:
        history.setdefault(c.pair, []).append(c)
    stale = {}
    for d in noise:
        for c in d["claims"]:
            if "branch" not in c:
                stale.setdefault(f"{c['entity']}.{c['slot']}", c["value"])
    out: list[dict] = []

    def add(kind: str, question: str, tgt: dict, required: list[str], forbidden: list[str] = ()) -> None:
        query = {"id": f"{name}-q{len(out) + 1}", "type": kind, "question": question, "target": tgt}
        query["required"] = required
        if forbidden := [t for t in forbidden if t not in required]:
            query["forbidden"] = forbidden
        out.append(query)

    def key(pair: str) -> Key:
        entity, slot = pair.split(".", 1)
        return Key(entity, slot, DEFAULT_BRANCH, DEFAULT_ENV)

    for pair in entries:
        now = answer(memory, key(pair), "value")
        if pair not in history or now == UNKNOWN:
            continue
        what = short_description(entries[pair])
        if pair in stale:
            question = f"Which value holds now for {what}?"
            forbidden = distinct(stale[pair], now)[:3]
            add("stale-suppression", question, target(pair), required(now, stale[pair]), forbidden)
        else:
            add(
                "current-state",
                f"Which value holds for {what}?",
                target(pair),
                required(now, history[pair][-1].before),
            )
    for pair, seq in history.items():
        if len(seq) < 2:
            continue
        middle = at[seq[-2].commit] + (at[seq[-1].commit] - at[seq[-2].commit]) / 2
        now, then = answer(memory, key(pair), "value"), answer(memory, key(pair), "value_at", middle)
        if then == UNKNOWN or same(now, then):
            continue
        what = short_description(entries[pair])
        question = f"Which value held for {what} on {middle.date().isoformat()}?"
        tgt = target(pair, ask="value_at", at=middle.isoformat())
        add("temporal", question, tgt, required(then, now), distinct(now, then)[:3])
    for pair in history:
        commit = answer(memory, key(pair), "commit")
        if commit not in (UNKNOWN, "none"):
            what = short_description(entries[pair])
            add("provenance", f"Which commit set the current {what}?", target(pair, ask="commit"), [commit])
    return out


def dump(data: dict) -> str:
    """Block YAML in the annotation's own order; a text that would read as a number is quoted."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
