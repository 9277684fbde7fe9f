"""Seeded, deterministic synthetic scenarios.

A scenario is a short project history over three or four catalog slots. Its *story slot*
follows the family's pattern; the other slots add the situations every scenario needs so
that all five query types have an answer: a scoped value, a stale claim to suppress, a
commit-backed current value, and a change over time.

- ``authority-overwrite``: code-backed changes interleaved with weaker notes, stale docs and
  outdated observations of old values.
- ``scope-divergence``: production, staging, preview and experiment branches hold different
  values at once.
- ``incident-timeline``: an upgrade, a hotfix rollback and a restore: history goes back and forth.
- ``code-evolution``: a slot reshaped by one merged change after another, as a feature is in a
  real repository: equal evidence, so each newer commit supersedes by recency alone, with
  observations that confirm it and a teammate's note that remembers an older value.
- ``+long-noise``: the same stories with longer notes and extra stale, branch and doc sessions.

A scenario's slots come from two or three entities, so its unrelated pairs are mostly near
misses (same entity, or the same slot name under another entity). Its catalog is its own, as
a trajectory's is: 9 to 11 pairs, its slots among their entities' other slots and a few
unrelated ones, in random order. With one catalog of all 43 pairs behind every note, an
extraction adapter could learn the list by heart and never read it; held out, every
trajectory brings a catalog it has not seen. Its notes mostly paraphrase
values (``phrasing.stated``), half their claim sentences go on past the value as commit notes
do (``phrasing.with_tail``), and each note is dated in one of a few UTC offsets, as commits of
one team are across daylight saving and time zones: recency is the instant, not the string.

Every random choice comes from a ``random.Random`` seeded by a string of the scenario's
identity (the tails from one of their own, added later so that no other draw moved), so a
scenario never depends on which others were generated before it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from memops.core.records import Catalog, CatalogEntry, ExtractedClaim
from memops.core.sessions import Episode, Query, QueryTarget, Session
from memops.data.scenarios.catalog import SLOTS, Slot
from memops.data.scenarios.phrasing import TITLES, distractor, scope_phrase, sentence, stated, with_tail
from memops.memory import StateMemory, norm

FAMILIES: tuple[str, ...] = ("authority-overwrite", "scope-divergence", "incident-timeline", "code-evolution")
NOISE = "long-noise"
CHATTER_RATE = 0.08
OFFSETS = (-8, -7, -5, -4, 0, 1, 2, 5.5, 9)
SAME_DAY_RATE = 0.35
"""Share of notes that follow the previous one within hours: where offsets reorder the strings."""
ZONES_PER_SCENARIO = (2, 3)
"""How many UTC offsets one scenario's notes are dated in."""
BRANCHES = ("exp/{e}-trial", "feature/{e}-migration", "spike/{e}-{s}")
CATALOG_SIZE = (9, 11)
"""How many pairs a scenario's catalog lists: as many as a trajectory's."""
UNRELATED_IN_CATALOG = 2
"""Pairs of other entities that every scenario's catalog holds at least."""


@dataclass(frozen=True)
class Event:
    slot: Slot
    value: str
    kind: str
    branch: str = "main"
    env: str = "production"


def _slots(rng: random.Random) -> list[Slot]:
    """Four slots from two entities (three when two hold fewer than four slots), in random order."""
    entities = sorted({s.entity for s in SLOTS})
    chosen = rng.sample(entities, 3)
    pool = [s for s in SLOTS if s.entity in chosen[:2]]
    if len(pool) < 4:
        pool = [s for s in SLOTS if s.entity in chosen]
    return rng.sample(pool, 4)


def _events(rng: random.Random, family: str, slots: list[Slot]) -> list[Event]:
    story, scoped, stale = slots[:3]
    a = rng.sample(story.values, 3)
    b = rng.sample(scoped.values, 2)
    c = rng.sample(stale.values, 2)
    branch = rng.choice(BRANCHES).format(e=story.entity, s=story.slot)
    if family == "authority-overwrite":
        story_events = [
            Event(story, a[0], "code-change"),
            Event(story, a[1], "human-note"),
            Event(story, a[1], "code-change"),
            Event(story, a[0], "stale-observation"),
            Event(story, a[2], "human-note"),
            Event(story, a[0], rng.choice(("stale-observation", "human-note"))),
        ]
    elif family == "scope-divergence":
        fourth = slots[3]
        d = rng.sample(fourth.values, 2)
        story_events = [
            Event(story, a[0], "code-change"),
            Event(story, a[1], "config-observation", env="staging"),
            Event(story, a[2], "runtime-observation", env="preview"),
            Event(story, a[1], "branch-experiment", branch=branch),
            Event(fourth, d[0], "config-observation"),
            Event(fourth, d[0], "runtime-observation", env="dev"),
            Event(fourth, d[1], "code-change"),
            Event(story, a[1], "config-observation"),
            Event(story, a[2], "runtime-observation", env="preview"),
        ]
    elif family == "code-evolution":
        story_events = [
            Event(story, a[0], "code-change"),
            Event(story, a[1], "code-change"),
            Event(story, a[1], rng.choice(("config-observation", "runtime-observation"))),
            Event(story, a[2], "code-change"),
            Event(story, rng.choice(a[:2]), "human-note"),
            Event(story, a[rng.randrange(3)], "code-change"),
        ]
    else:
        story_events = [
            Event(story, a[0], "code-change"),
            Event(story, a[1], "code-change"),
            Event(story, a[0], "incident-hotfix"),
            Event(story, a[1], "code-change"),
            Event(story, a[0], "stale-observation"),
        ]
    side = [
        Event(scoped, b[0], "code-change"),
        Event(scoped, b[1], rng.choice(("config-observation", "runtime-observation")), env="staging"),
        Event(stale, c[0], "code-change"),
        Event(stale, c[1], "stale-observation"),
    ]
    # Interleave side events into the story without reordering either sequence.
    merged: list[Event] = []
    story_iter, side_iter = iter(story_events), iter(side)
    pending = [story_iter, side_iter]
    while pending:
        source = rng.choice(pending) if len(pending) > 1 else pending[0]
        event = next(source, None)
        if event is None:
            pending.remove(source)
        else:
            merged.append(event)
    return merged


def _catalog(rng: random.Random, slots: list[Slot]) -> Catalog:
    """The scenario's slots, their entities' other slots (the near misses a reader must tell
    apart), and slots of other entities, to a trajectory's catalog size, in random order."""
    size = rng.randint(*CATALOG_SIZE)
    entities = {s.entity for s in slots}
    siblings = [s for s in SLOTS if s.entity in entities and s not in slots]
    others = [s for s in SLOTS if s.entity not in entities]
    near = rng.sample(siblings, min(len(siblings), size - len(slots) - UNRELATED_IN_CATALOG))
    listed = [*slots, *near, *rng.sample(others, size - len(slots) - len(near))]
    rng.shuffle(listed)
    return Catalog(
        name="synthetic",
        entries=tuple(CatalogEntry(entity=s.entity, slot=s.slot, description=s.description) for s in listed),
    )


def _noise_events(rng: random.Random, slots: list[Slot], count: int) -> list[Event]:
    out = []
    for _ in range(count):
        slot = rng.choice(slots)
        kind = rng.choice(("stale-observation", "branch-experiment", "human-note"))
        branch = f"exp/{slot.entity}-{rng.randrange(100)}" if kind == "branch-experiment" else "main"
        out.append(Event(slot, rng.choice(slot.values), kind, branch=branch))
    return out


def _commit(rng: random.Random) -> str:
    return f"{rng.getrandbits(36):09x}"


def _sessions(
    rng: random.Random,
    scenario_id: str,
    events: list[Event],
    noise: int,
    start: datetime,
    zones: list[timezone],
) -> list[Session]:
    sessions = []
    tails = random.Random(f"{scenario_id}:tails")  # its own draws: the scenario's do not move
    at = start
    i = 0
    while i < len(events):
        group = [events[i]]
        # Events of the same kind about other slots may share one note, up to three per note.
        while (
            i + len(group) < len(events)
            and len(group) < 3
            and events[i + len(group)].kind == group[0].kind
            and events[i + len(group)].slot not in {e.slot for e in group}
            and rng.random() < 0.6
        ):
            group.append(events[i + len(group)])
        i += len(group)
        kind = group[0].kind
        has_commit = kind in ("code-change", "incident-hotfix") or (
            kind == "config-observation" and rng.random() < 0.3
        )
        commit = _commit(rng) if has_commit else None
        lines, wordings = [], []
        for event in group:
            scope = scope_phrase(rng, event.branch, event.env)
            wordings.append(stated(rng, event.value))
            said = sentence(rng, kind, event.slot.noun, wordings[-1], commit, scope)
            lines.append(with_tail(tails, said))
        for _ in range(rng.randrange(0, 2) + noise * rng.randrange(1, 3)):
            lines.insert(rng.randrange(len(lines) + 1), distractor(rng, rng.choice(SLOTS).noun))
        claims = tuple(
            ExtractedClaim(
                entity=e.slot.entity,
                slot=e.slot.slot,
                value=e.value,
                branch=e.branch,
                env=e.env,
                evidence_type=kind,
            )
            for e in group
        )
        sessions.append(
            Session(
                id=f"{scenario_id}-s{len(sessions):02d}",
                at=at.astimezone(rng.choice(zones)),
                commit=commit,
                title=f"{rng.choice(TITLES[kind])}: {group[0].slot.noun}",
                text=" ".join(lines),
                claims=claims,
                stated=tuple(wordings),
            )
        )
        if rng.random() < SAME_DAY_RATE:  # a follow-up within hours, often from another zone
            at += timedelta(hours=rng.randrange(1, 8), minutes=rng.randrange(60))
        else:
            at += timedelta(days=rng.randrange(1, 5), hours=rng.randrange(0, 9), minutes=rng.randrange(60))
        if rng.random() < CHATTER_RATE * (1 + noise):
            sessions.append(
                _chatter(rng, f"{scenario_id}-s{len(sessions):02d}", at.astimezone(rng.choice(zones)))
            )
            at += timedelta(hours=rng.randrange(2, 30))
    return sessions


def _chatter(rng: random.Random, session_id: str, at: datetime) -> Session:
    """A note that names slots but asserts nothing: its gold extraction is empty."""
    lines = [distractor(rng, rng.choice(SLOTS).noun) for _ in range(rng.randrange(2, 5))]
    return Session(
        id=session_id, at=at, title=rng.choice(("Standup notes", "Weekly sync", "Misc")), text=" ".join(lines)
    )


def _forbid(values: list[str], required: str) -> tuple[str, ...]:
    req = norm(required)
    return tuple(sorted({norm(v) for v in values if norm(v) != req and norm(v) not in req}))


def _replayed(sessions: list[Session]) -> StateMemory:
    """The engine once every session's gold claims are written, in order."""
    mem = StateMemory()
    for session in sessions:
        for claim in session.memory_claims():
            mem.apply(claim)
    return mem


def _queries(scenario_id: str, sessions: list[Session], slots: list[Slot]) -> list[Query]:
    """A scenario's five queries (current, scoped, provenance, temporal, stale), each answered by
    the gold replay."""
    mem = _replayed(sessions)
    story, _, stale = slots[:3]
    queries = []

    def add(
        qtype: str, question: str, target: QueryTarget, required: str, forbidden: tuple[str, ...] = ()
    ) -> None:
        queries.append(
            Query(
                id=f"{scenario_id}-q{len(queries)}",
                type=qtype,
                question=question,
                target=target,
                required=(norm(required),),
                forbidden=forbidden,
            )
        )

    main_key = (story.entity, story.slot, "main", "production")
    current = mem.current(*main_key)
    entry = mem.entry(current.key)
    all_values = [c.value for item in entry.items for c in item.claims]
    add(
        "current-state",
        f"What is {story.noun} on main in production now?",
        QueryTarget(entity=story.entity, slot=story.slot),
        current.value,
        _forbid(all_values, current.value),
    )
    scoped_entry = next(e for e in mem.entries() if e.key.env != "production" or e.key.branch != "main")
    sc = scoped_entry.current.best
    noun = next(s.noun for s in slots if (s.entity, s.slot) == (sc.entity, sc.slot))
    add(
        "scoped-state",
        f"What is {noun} on branch {sc.branch} in {sc.env}?",
        QueryTarget(entity=sc.entity, slot=sc.slot, branch=sc.branch, env=sc.env),
        sc.value,
    )
    provenance_claim = next(
        e.current.best
        for e in mem.entries()
        if e.key.branch == "main" and e.key.env == "production" and e.current.best.evidence.commit
    )
    noun = next(s.noun for s in slots if (s.entity, s.slot) == provenance_claim.key[:2])
    add(
        "provenance",
        f"Which commit established the current value of {noun}?",
        QueryTarget(entity=provenance_claim.entity, slot=provenance_claim.slot, ask="commit"),
        provenance_claim.evidence.commit,
    )
    # Every family changes a main/production value at least once; ask what held just before.
    first = mem.transitions[0]
    noun = next(s.noun for s in slots if (s.entity, s.slot) == first.key[:2])
    add(
        "temporal",
        f"What was {noun} just before {first.at.date().isoformat()}?",
        QueryTarget(
            entity=first.key.entity,
            slot=first.key.slot,
            branch=first.key.branch,
            env=first.key.env,
            ask="value_at",
            at=first.at - timedelta(minutes=1),
        ),
        first.old,
        _forbid([first.new], first.old),
    )
    stale_current = mem.current(stale.entity, stale.slot)
    stale_values = [c.value for c in mem.contested(stale.entity, stale.slot)]
    add(
        "stale-suppression",
        f"Old docs disagree about {stale.noun}. What is it actually now?",
        QueryTarget(entity=stale.entity, slot=stale.slot),
        stale_current.value,
        _forbid(stale_values, stale_current.value),
    )
    return queries


def scenario(family: str, index: int, seed: int, noise: int = 0) -> Episode:
    variant = f"{family}+{NOISE}" if noise else family
    scenario_id = f"{variant}-{index:04d}"
    rng = random.Random(f"{seed}:{scenario_id}")
    slots = _slots(rng)
    events = _events(rng, family, slots)
    if noise:
        extra = _noise_events(rng, slots, 2 + noise)
        for event in extra:
            events.insert(rng.randrange(1, len(events) + 1), event)
    zones = [timezone(timedelta(hours=h)) for h in rng.sample(OFFSETS, rng.choice(ZONES_PER_SCENARIO))]
    start = datetime(2025, 1, 6, 9, tzinfo=zones[0]) + timedelta(
        days=rng.randrange(500), minutes=rng.randrange(480)
    )
    sessions = _sessions(rng, scenario_id, events, noise, start, zones)
    return Episode(
        id=scenario_id,
        source="synthetic",
        family=variant,
        catalog=_catalog(rng, slots),
        sessions=tuple(sessions),
        queries=tuple(_queries(scenario_id, sessions, slots)),
    )


def scenarios(seed: int, per_family: int, noisy_per_family: int, noise: int) -> list[Episode]:
    out = []
    for family in FAMILIES:
        out += [scenario(family, i, seed) for i in range(per_family)]
        out += [scenario(family, i, seed, noise=noise) for i in range(noisy_per_family)]
    return out
