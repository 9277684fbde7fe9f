"""The state memory: entries per key, the write-time update rule, history and JSON form."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memops.memory.claims import DEFAULT_BRANCH, DEFAULT_ENV, Claim, Key, norm
from memops.memory.compare import Winner
from memops.memory.evidence import Evidence
from memops.memory.status import Status, advance

Action = Literal["add", "merge", "supersede", "contested"]
ACTIONS: tuple[Action, ...] = ("add", "merge", "supersede", "contested")

Judge = Callable[[Claim, Claim], Winner]
"""Decides an exact tie between the current claim (``first``) and the incoming one (``second``).

It sees the same pair the learned ``compare`` operator sees, so a hybrid engine can plug
that operator in here; any answer but ``second`` keeps the current value.
"""

JSON_VERSION = 1


def keep_current(current: Claim, incoming: Claim) -> Winner:
    return "first"


class Item:
    """One value held at a key, with every claim that supported it (its provenance)."""

    __slots__ = ("_seen", "at", "best", "claims", "norm_value", "score", "status")

    def __init__(self, claim: Claim, status: Status) -> None:
        self.status = status
        self.norm_value = claim.norm_value
        self.claims: list[Claim] = [claim]
        self._seen: set[Evidence] = {claim.evidence}
        self.score = claim.score
        self.at = claim.at
        self.best = claim

    @property
    def value(self) -> str:
        """The wording of the best-supported claim, the one readers are shown."""
        return self.best.value

    def support(self, claim: Claim) -> bool:
        """Append a claim's evidence; a duplicate changes nothing, so re-applying is a no-op."""
        if claim.evidence in self._seen:
            return False
        self._seen.add(claim.evidence)
        self.claims.append(claim)
        if claim.at > self.at:
            self.at = claim.at
        if claim.score > self.score:
            self.score = claim.score
            self.best = claim
        return True

    def as_claim(self) -> Claim:
        """The item as one claim, as the update rule weighs it: best evidence, latest sighting.

        A pairwise comparison against this claim orders exactly as rules 3-5 order the item.
        """
        if self.best.at == self.at:
            return self.best
        return Claim.model_validate({**self.best.model_dump(), "at": self.at})

    def move(self, target: Status) -> None:
        self.status = advance(self.status, target)

    def summary(self) -> Item:
        """The item as the update rule and the prompts read it: its status, best claim and
        latest sighting, without the claims that supported it on the way."""
        item = Item(self.best, self.status)
        item.at = self.at
        return item

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Item) and (self.status, self.claims) == (other.status, other.claims)

    def __repr__(self) -> str:
        return f"Item({self.value!r}, {self.status}, claims={len(self.claims)})"


@dataclass(eq=True, slots=True)
class Entry:
    """Everything known at one key: the current item, contested ones and superseded history."""

    key: Key
    items: list[Item] = field(default_factory=list)
    current: Item | None = None
    live: dict[str, Item] = field(default_factory=dict, compare=False, repr=False)
    """Items that can still absorb a claim (current and contested), by normalised value."""

    def contested(self) -> list[Item]:
        return [i for i in self.items if i.status is Status.CONTESTED]

    def snapshot(self) -> Entry:
        """The live items (current and contested) as ``Item.summary`` gives them: all that the
        update rule decides on and a prompt shows. Its size is the number of live values, not
        the key's history, so taking one per written claim keeps a replay linear."""
        copies = {id(item): item.summary() for item in self.live.values()}
        return Entry(
            self.key,
            [copies[id(item)] for item in self.items if id(item) in copies],
            copies[id(self.current)] if self.current is not None else None,
            {value: copies[id(item)] for value, item in self.live.items()},
        )

    def snapshot_dict(self) -> dict[str, Any]:
        """``snapshot`` as JSON data: each live item's status, best claim and latest sighting."""
        return {
            "items": [
                {"status": i.status.value, "claim": i.best.model_dump(mode="json"), "at": i.at.isoformat()}
                for i in self.snapshot().items
            ]
        }

    @classmethod
    def from_snapshot(cls, key: Key, data: dict[str, Any]) -> Entry:
        """The entry ``snapshot_dict`` wrote."""
        entry = cls(key)
        for raw in data["items"]:
            item = Item(Claim.model_validate(raw["claim"]), Status(raw["status"]))
            item.at = datetime.fromisoformat(raw["at"])
            entry.items.append(item)
            entry.live[item.norm_value] = item
            if item.status is Status.CONFIRMED:
                entry.current = item
        return entry


def entry_dict(entry: Entry) -> dict[str, Any]:
    """An entry as JSON data: its items in the order they were held, each with every claim that
    supported it, and the index of the current one (the saved form of ``StateMemory.to_dict``)."""
    return {
        "key": entry.key._asdict(),
        "current": entry.items.index(entry.current) if entry.current else None,
        "items": [
            {"status": item.status.value, "claims": [c.model_dump(mode="json") for c in item.claims]}
            for item in entry.items
        ],
    }


def entry_from_dict(raw: dict[str, Any], where: str) -> Entry:
    """The entry ``entry_dict`` wrote, its invariants checked (``where`` names it in an error)."""
    entry = Entry(Key(**raw["key"]))
    for i, raw_item in enumerate(raw["items"]):
        claims = [Claim.model_validate(c) for c in raw_item["claims"]]
        if not claims:
            raise ValueError(f"{where}.items[{i}]: no claims")
        if stray := [c for c in claims if c.key != entry.key]:
            raise ValueError(f"{where}.items[{i}]: a claim for {stray[0].key} in the entry {entry.key}")
        item = Item(claims[0], Status(raw_item["status"]))
        for claim in claims[1:]:
            item.support(claim)
        entry.items.append(item)
        if item.status in (Status.CONFIRMED, Status.CONTESTED):
            if item.norm_value in entry.live:
                raise ValueError(f"{where}.items[{i}]: {item.value!r} is live twice")
            entry.live[item.norm_value] = item
    current = raw["current"]
    if current is not None:
        if type(current) is not int or not 0 <= current < len(entry.items):
            raise ValueError(f"{where}.current: {current!r} is not an item index (0..{len(entry.items) - 1})")
        if entry.items[current].status is not Status.CONFIRMED:
            status = entry.items[current].status.value
            raise ValueError(f"{where}.current: points at a {status} item, not a confirmed one")
        entry.current = entry.items[current]
    if (confirmed := sum(i.status is Status.CONFIRMED for i in entry.items)) != (current is not None):
        raise ValueError(
            f"{where}: {confirmed} confirmed item(s) with current={current!r}; "
            "a key holds one confirmed item, its current value, or none"
        )
    return entry


class Decision(NamedTuple):
    """What the update rule did with one claim, and why (the label of the update operator)."""

    action: Action
    key: Key
    claim: Claim
    previous: Claim | None
    reason: str


@dataclass(frozen=True)
class Transition:
    """A change of the current value at a key; rollbacks and restores are ordinary ones."""

    key: Key
    old: str
    new: str
    commit: str | None
    at: datetime
    source: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key._asdict(),
            "old": self.old,
            "new": self.new,
            "commit": self.commit,
            "at": self.at.isoformat(),
            "source": self.source,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Transition:
        return cls(
            key=Key(**data["key"]),
            old=data["old"],
            new=data["new"],
            commit=data["commit"],
            at=datetime.fromisoformat(data["at"]),
            source=data["source"],
            reason=data["reason"],
        )


class _Saved(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SavedKey(_Saved):
    entity: str
    slot: str
    branch: str
    env: str


class SavedItem(_Saved):
    status: Status = Field(strict=False)  # the enum's own values, as the file spells them
    claims: list[dict[str, Any]] = Field(min_length=1)


class SavedEntry(_Saved):
    key: SavedKey
    current: int | None
    items: list[SavedItem] = Field(min_length=1)


class SavedTransition(_Saved):
    key: SavedKey
    old: str
    new: str
    commit: str | None
    at: str
    source: str | None
    reason: str

    @field_validator("at")
    @classmethod
    def aware(cls, at: str) -> str:
        when = datetime.fromisoformat(at)
        if when.tzinfo is None:
            raise ValueError("a time without its UTC offset")
        return at


class SavedState(_Saved):
    """The JSON form's structure, checked whole before the engine's invariants are."""

    version: int
    entries: list[SavedEntry]
    transitions: list[SavedTransition]


def resolve(current: Item, incoming: Claim, judge: Judge) -> tuple[Winner, str]:
    """Rules 3-5 of the update rule: evidence score, then recency, then the judge."""
    if incoming.score != current.score:
        winner: Winner = "second" if incoming.score > current.score else "first"
        return winner, f"evidence score {incoming.score} vs {current.score}"
    if incoming.at != current.at:
        winner = "second" if incoming.at > current.at else "first"
        return winner, "equal evidence score; more recent wins"
    verdict = judge(current.best, incoming)
    return ("second" if verdict == "second" else "first"), f"exact tie; judge said {verdict}"


Decide = Callable[[Entry, Claim], tuple[Action, str]]
"""Chooses the action for a claim at a key that already has an entry, with a reason.

The default is ``rule``; a learned policy plugs in here. Whatever it answers, the memory
executes it safely: nothing held is ever dropped, and an action that cannot apply (``merge``
of a value nobody holds, ``add`` at an existing key) keeps the claim as contested.
"""


Same = Callable[[Item, Claim], bool]
"""Whether a claim's value is the value an item holds: the one judgment the update rule makes of
values. The rule makes it by normaliser (``same_value``); ``decisions="judged"`` asks it of the
compare adapter (``operators.learned``)."""


def same_value(item: Item, claim: Claim) -> bool:
    return item.norm_value == claim.norm_value


def rule(
    entry: Entry, claim: Claim, judge: Judge = keep_current, same: Same = same_value
) -> tuple[Action, str]:
    """Rules 2-5 of the update rule for a claim at an existing entry."""
    current = entry.current
    assert current is not None
    if same(current, claim):
        return "merge", "same value as current"
    winner, why = resolve(current, claim, judge)
    if winner == "second":
        return "supersede", why
    if any(same(item, claim) for item in entry.live.values() if item is not current):
        return "merge", f"same value as contested; {why}"
    return "contested", why


def open_actions(entry: Entry | None, claim: Claim, judge: Judge = keep_current) -> tuple[Action, ...]:
    """The actions the update rule leaves open for a claim at an entry once the fields have said
    all they can: ``add`` at a new key; otherwise ``merge`` (the value is one the entry holds) or
    what rules 3-5 make of a value it does not hold (``supersede`` when the claim wins,
    ``contested`` when it loses). Which of the two is the judgment of whether the values are one
    value; ``rule``'s answer is always among them."""
    if entry is None or entry.current is None:
        return ("add",)
    winner, _ = resolve(entry.current, claim, judge)
    return "merge", "supersede" if winner == "second" else "contested"


class StateMemory:
    """Conflict-aware project state: contradictions are resolved when a claim is written."""

    def __init__(self, judge: Judge = keep_current, decide: Decide | None = None) -> None:
        self.judge = judge
        self.decide = decide
        self._entries: dict[Key, Entry] = {}
        self.transitions: list[Transition] = []

    def apply(self, claim: Claim) -> Decision:
        key = claim.key
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = Entry(key)
            self._hold(entry, Item(claim, Status.PROPOSED), Status.CONFIRMED)
            return Decision("add", key, claim, None, "no entry at key")
        if self.decide is None:
            action, why = rule(entry, claim, self.judge)
        else:
            action, why = self.decide(entry, claim)
        return self._execute(entry, claim, action, why)

    def _execute(self, entry: Entry, claim: Claim, action: Action, why: str) -> Decision:
        current = entry.current
        assert current is not None
        previous = current.best
        match = entry.live.get(claim.norm_value)
        if action == "supersede" and match is not current:
            current.move(Status.SUPERSEDED)
            del entry.live[current.norm_value]
            if match is not None:
                match.support(claim)
                match.move(Status.CONFIRMED)
                entry.current = match
            else:
                self._hold(entry, Item(claim, Status.PROPOSED), Status.CONFIRMED)
            self.transitions.append(
                Transition(
                    key=entry.key,
                    old=current.value,
                    new=claim.value,
                    commit=claim.evidence.commit,
                    at=claim.at,
                    source=claim.evidence.source,
                    reason=why,
                )
            )
            return Decision("supersede", entry.key, claim, previous, why)
        if match is not None:
            match.support(claim)
            return Decision("merge", entry.key, claim, previous, why)
        if action != "contested":
            why = f"{why}; no held value to {action} with, kept as contested"
        self._hold(entry, Item(claim, Status.PROPOSED), Status.CONTESTED)
        return Decision("contested", entry.key, claim, previous, why)

    def settle(self, claim: Claim, reason: str) -> Decision:
        """A person's verdict at a key (the store's ``resolve``): the claim's value, one the key
        holds live, becomes current and every other live value is superseded. The claim joins that
        value's support, and the verdict is a transition like any other, so the history keeps it."""
        entry = self._entries.get(claim.key)
        match = entry.live.get(claim.norm_value) if entry is not None else None
        if entry is None or entry.current is None or match is None:
            held = ", ".join(repr(i.value) for i in entry.live.values()) if entry else ""
            raise ValueError(f"{claim.key} holds no live value {claim.value!r} (it holds: {held or 'none'})")
        current = entry.current
        for item in [i for i in entry.live.values() if i is not match]:
            item.move(Status.SUPERSEDED)
            del entry.live[item.norm_value]
        match.support(claim)
        if match is not current:
            match.move(Status.CONFIRMED)
            entry.current = match
        self.transitions.append(
            Transition(entry.key, current.value, match.value, None, claim.at, claim.evidence.source, reason)
        )
        action: Action = "merge" if match is current else "supersede"
        return Decision(action, entry.key, claim, current.best, reason)

    def adopt(self, entries: Iterable[Entry]) -> None:
        """Hold entries read from a store, so that claims at their keys are decided against them."""
        for entry in entries:
            self._entries[entry.key] = entry

    @staticmethod
    def _hold(entry: Entry, item: Item, status: Status) -> None:
        item.move(status)
        entry.items.append(item)
        entry.live[item.norm_value] = item
        if status is Status.CONFIRMED:
            entry.current = item

    def entry(self, key: Key) -> Entry | None:
        return self._entries.get(key)

    def entries(self) -> Iterator[Entry]:
        """Entries in key order, so everything derived from them is deterministic."""
        for key in sorted(self._entries):
            yield self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)

    def current(
        self, entity: str, slot: str, branch: str = DEFAULT_BRANCH, env: str = DEFAULT_ENV
    ) -> Claim | None:
        entry = self._entries.get(Key(entity, slot, branch, env))
        return entry.current.best if entry and entry.current else None

    def contested(
        self, entity: str, slot: str, branch: str = DEFAULT_BRANCH, env: str = DEFAULT_ENV
    ) -> list[Claim]:
        entry = self._entries.get(Key(entity, slot, branch, env))
        return [item.best for item in entry.contested()] if entry else []

    def render(self, budget: int = 1700) -> str:
        from memops.memory.renderer import render

        return render(self, budget)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": JSON_VERSION,
            "entries": [entry_dict(entry) for entry in self.entries()],
            "transitions": [t.to_dict() for t in self.transitions],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1)

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], judge: Judge = keep_current, decide: Decide | None = None
    ) -> StateMemory:
        """Load a saved memory, checking the invariants the engine keeps (a hand-edited or
        corrupt file fails here, naming the entry, not later as a wrong answer). ``judge`` and
        ``decide`` are its operators, as the constructor takes them: a file holds state, not code."""
        if not isinstance(data, dict):
            raise ValueError(f"a memory is a JSON object, not {type(data).__name__}")
        version = data.get("version")
        if type(version) is not int or version != JSON_VERSION:
            raise ValueError(f"memory JSON version {version!r}; expected {JSON_VERSION}")
        try:
            SavedState.model_validate(data)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"]).lstrip(".")
            raise ValueError(f"{where}: {error['msg']}") from None
        mem = cls(judge=judge, decide=decide)
        for e, raw in enumerate(data["entries"]):
            entry = entry_from_dict(raw, f"entries[{e}]")
            if entry.key in mem._entries:
                raise ValueError(f"entries[{e}]: a second entry for {entry.key}")
            mem._entries[entry.key] = entry
        mem.transitions = [Transition.from_dict(t) for t in data["transitions"]]
        for t, transition in enumerate(mem.transitions):
            entry = mem._entries.get(transition.key)
            held = {i.norm_value for i in entry.items} if entry else set()
            if entry is None or not {norm(transition.old), norm(transition.new)} <= held:
                raise ValueError(
                    f"transitions[{t}]: from {transition.old!r} to {transition.new!r}, values "
                    f"the key {transition.key} never held"
                )
        return mem

    @classmethod
    def from_json(cls, text: str, judge: Judge = keep_current, decide: Decide | None = None) -> StateMemory:
        return cls.from_dict(json.loads(text), judge=judge, decide=decide)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StateMemory):
            return NotImplemented
        return self._entries == other._entries and self.transitions == other.transitions

    __hash__ = None  # type: ignore[assignment]
