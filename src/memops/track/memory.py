"""A project memory with its operators, as a user holds it: feed it notes, ask it for state.

``open_memory`` brings up the operators (the rules, or adapters on the ``hf`` or ``vllm``
backend) and yields a ``ProjectMemory``; leaving the block stops the backend. Each note goes
through extraction, then every claim through the engine, where the learned ``update`` and
``compare`` decide at keys that already hold a value (``engine="learned"``) or the rules do
(``engine="hybrid"``: learned ``compare`` only as the judge of exact ties).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from memops.core.files import write_atomic
from memops.core.records import Catalog, Note
from memops.memory import Claim, Decision, Entry, Key, StateMemory, Transition, keep_current
from memops.memory.claims import DEFAULT_BRANCH, DEFAULT_ENV, Timestamp
from memops.memory.state import Decide, Judge
from memops.operators.backends import BackendError
from memops.operators.engine import MODES, LearnedDecide, LearnedJudge
from memops.operators.learned import EXTRACT_MODES, ExtractMode, LearnedOperators
from memops.track.database import StoreError
from memops.track.store import Store

SAVED_VERSION = 1


class InputError(ValueError):
    """Input the memory refuses, named by its field: a claim or a catalog with a bad field, a
    saved file it cannot read, a note without a catalog to read it against."""


def field_of(exc: ValidationError) -> str:
    """The first failing field of a pydantic error and why, on one line."""
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "<value>"
    return f"{where}: {error['msg']}"


@dataclass(frozen=True)
class NoteResult:
    """What one note did to the memory."""

    note: Note
    claims: list[Claim]
    """The claims written: extracted from the note, or given."""
    decisions: list[Decision]
    """One per claim: ``action`` (add, merge, supersede, contested), the key, the value it
    replaced or contested (``previous``) and the engine's ``reason``."""
    error: str | None = None
    """Why the note failed (its backend call failed, or no claim parsed): the memory is as
    before this note."""


@dataclass(frozen=True)
class KeyState:
    value: str
    """The current value at the key."""
    status: str
    """``current``, or ``contested`` when lower-scored values are held beside it."""
    claim: Claim
    """The current value's best-supported claim: its evidence, commit and time."""
    contested: list[Claim]

    @property
    def key(self) -> Key:
        """Where the value is held (with ``get``'s fallback, maybe the base branch)."""
        return self.claim.key


@dataclass(frozen=True)
class Change:
    """The value a key took, when and why: its first value, then each supersede."""

    at: datetime
    value: str
    commit: str | None
    source: str | None
    reason: str


@dataclass
class ProjectMemory:
    """The engine with its operators, over a store. ``engine``: ``symbolic`` (claims are given,
    the rules decide), ``learned`` or ``hybrid`` (notes are read by learned extraction). ``store``
    holds the state (``memory.store``): in this process by default, or an SQLite file that several
    processes share, each note decided and written in one transaction."""

    engine: str = "symbolic"
    ops: LearnedOperators | None = None
    extract: ExtractMode = "two-stage-overlap"
    catalog: Catalog | None = None
    store: Store = field(default_factory=Store)
    failures: Counter[str] = field(default_factory=Counter)
    """Answers of the learned decisions that did not parse, per operator (the engine then kept
    the claim contested)."""
    judge: Judge = field(default=keep_current, repr=False)
    decide: Decide | None = field(default=None, repr=False)
    """The operators the engine decides with: the rules' by default, the learned ones that
    ``engine`` names when ``ops`` is given."""

    def __post_init__(self) -> None:
        if self.engine not in MODES:
            raise InputError(f"engine={self.engine!r}; expected one of {', '.join(MODES)}")
        if self.extract not in EXTRACT_MODES:
            raise InputError(f"extract={self.extract!r}; expected one of {', '.join(EXTRACT_MODES)}")
        # A store keeps the catalog its notes were read against and the failures counted so far.
        if self.catalog is None and (catalog := self.store.meta("catalog")) is not None:
            self.catalog = Catalog.model_validate(catalog)
        elif self.catalog is not None:
            self.store.set_meta(catalog=self.catalog.model_dump(mode="json"))
        self.failures.update(self.store.meta("failures") or {})
        # The engine's operators: a loaded state holds none (a file holds no code). Without
        # them a learned memory answers queries and refuses notes (``add_note``).
        if self.ops is None:
            return
        if self.engine == "learned":
            self.decide = LearnedDecide(self.ops, self.failures)  # type: ignore[assignment]
        elif self.engine == "hybrid":
            self.judge = LearnedJudge(self.ops, self.failures)  # type: ignore[assignment]

    def _engine(self) -> StateMemory:
        """An empty engine with this memory's operators; the store fills it with the entries a
        write needs."""
        return StateMemory(judge=self.judge, decide=self.decide)

    @property
    def state(self) -> StateMemory:
        """The whole memory as the engine holds it, read from the store now."""
        return self.store.state(self._engine())

    @property
    def seen(self) -> list[str]:
        """The ids of the notes read so far, in order (``memops track`` keeps commit hashes here)."""
        return self.store.seen()

    @property
    def skipped(self) -> dict[str, str]:
        """Notes read and refused (a date in the future, say), by id, with why: seen, never written."""
        return self.store.skipped()

    # -- writing ----------------------------------------------------------------------------

    def add_note(
        self,
        text: str,
        at: str | datetime,
        *,
        title: str | None = None,
        commit: str | None = None,
        files: Sequence[str] = (),
        branch: str | None = None,
        env: str | None = None,
        note_id: str | None = None,
        claims: Sequence[Claim | dict[str, Any]] | None = None,
        catalog: Catalog | None = None,
    ) -> NoteResult:
        """Read a note and write what it says. Its claims are extracted against ``catalog`` (or
        the memory's) unless given; ``branch`` and ``env`` scope every claim of the note."""
        if self.engine != "symbolic" and self.ops is None:
            raise InputError(
                f"engine={self.engine} reads notes with learned operators: open it with adapters "
                "(open_memory); loaded without them, it answers queries only"
            )
        note_id = note_id or commit or f"note-{uuid.uuid4().hex[:12]}"
        check_input(note_id, text=text, title=title, commit=commit, files=files, branch=branch, env=env)
        if claims is not None and (
            isinstance(claims, str | bytes | dict) or not isinstance(claims, Sequence)
        ):
            raise InputError(f"note {note_id}: claims: a list of claims, not {type(claims).__name__}")
        first_line = text.strip().splitlines()[0][:120] if text.strip() else "(empty note)"
        try:
            note = Note(
                id=note_id, at=at, commit=commit, title=title or first_line, text=text, files=tuple(files)
            )
        except ValidationError as exc:
            raise InputError(f"note {note_id}: {field_of(exc)}") from exc
        if claims is not None:
            written = [self._claim(c, note, i) for i, c in enumerate(claims)]
        else:
            read = self._read(note, catalog or self.catalog)
            if isinstance(read, str):  # read, and nothing written: seen, not skipped
                self.store.write_note(note, [], self._engine())
                return NoteResult(note, [], [], read)
            written = read
        if branch or env:
            scope = {"branch": branch or DEFAULT_BRANCH, "env": env or DEFAULT_ENV}
            try:  # validated anew, not copied: a claim's key is cached on it once computed
                written = [Claim.model_validate({**c.model_dump(), **scope}) for c in written]
            except ValidationError as exc:
                raise InputError(f"note {note_id}: {field_of(exc)}") from exc
        failed = self.failures.total()
        decisions, _ = self.store.write_note(note, written, self._engine())
        if self.failures.total() != failed:  # a learned decision did not parse: kept for the next process
            self.store.set_meta(failures=dict(self.failures))
        return NoteResult(note, [d.claim for d in decisions], decisions)

    def skip(self, note_id: str, reason: str) -> None:
        """Record a note that was read and refused, so the memory goes on past it and a rerun
        does not read it again."""
        self.store.skip(note_id, reason)

    def _claim(self, given: Claim | dict[str, Any], note: Note, i: int) -> Claim:
        if isinstance(given, Claim):
            return given
        if not isinstance(given, dict):
            raise InputError(f"note {note.id}: claims[{i}]: a Claim or a dict, not {type(given).__name__}")
        row = {"at": note.at, **given}
        row.setdefault("evidence", {"type": "human-note", "commit": note.commit, "source": note.id})
        try:
            claim = Claim.model_validate(row)
        except ValidationError as exc:
            raise InputError(f"note {note.id}: claims[{i}].{field_of(exc)}") from exc
        check_input(note.id, **{f"claims[{i}].value": claim.value})
        return claim

    def _read(self, note: Note, catalog: Catalog | None) -> list[Claim] | str:
        """The note's claims from learned extraction, or why there are none."""
        if self.ops is None:
            raise InputError(
                "symbolic operators do not read notes: pass claims=[...], or open the memory with adapters"
            )
        if catalog is None:
            raise InputError(f"note {note.id}: no slot catalog to read it against (catalog=...)")
        try:
            (extraction,) = self.ops.extract([(note, catalog)], self.extract)
        except BackendError as exc:
            return f"the backend failed on this note: {exc}"
        if extraction.error and not extraction.claims:
            return f"no claim parsed: {extraction.error}"
        return [c.to_claim(note) for c in extraction.claims]

    # -- reading ----------------------------------------------------------------------------

    def get(
        self,
        entity: str,
        slot: str,
        branch: str = DEFAULT_BRANCH,
        env: str = DEFAULT_ENV,
        *,
        base: str | None = DEFAULT_BRANCH,
    ) -> KeyState | None:
        """The current value at a key and its status, or None when the memory holds none. A
        branch without a value of its own answers with its ``base``'s (``base=None``: no
        fallback); the answer's ``key`` says which branch it came from."""
        entry = self.store.entry(Key(entity, slot, branch, env))
        if entry is None and base is not None and branch != base:
            entry = self.store.entry(Key(entity, slot, base, env))
        return key_state(entry)

    def keys(self, entity: str | None = None, **scope: str) -> list[KeyState]:
        """Every key with a current value, in key order: of one ``entity``, and of a ``slot``,
        ``branch`` or ``env`` if named."""
        unknown = set(scope) - {"slot", "branch", "env"}
        if unknown:
            raise InputError(
                f"keys: unknown field(s) {', '.join(sorted(unknown))}; expected slot, branch, env"
            )
        return [s for e in self.store.entries(entity, **scope) if (s := key_state(e)) is not None]

    def snapshot(
        self, branch: str = DEFAULT_BRANCH, env: str = DEFAULT_ENV, at: str | datetime | None = None
    ) -> dict[str, str]:
        """Every slot's value on a branch and in an environment (``entity.slot`` -> value), as
        held at ``at`` or now; a slot the branch has no value of its own for has its base's
        (the default branch)."""
        when = None if at is None else timestamp(at, "snapshot")
        out: dict[str, str] = {}
        for scope in dict.fromkeys([DEFAULT_BRANCH, branch]):  # the branch's own values last: they win
            if when is None:
                held = {
                    e.key: e.current.value for e in self.store.entries(branch=scope, env=env) if e.current
                }
            else:
                held = {
                    k: held_at(changes(*t), when)
                    for k, t in self.store.timelines(branch=scope, env=env).items()
                }
            out |= {f"{k.entity}.{k.slot}": v for k, v in held.items() if v is not None}
        return dict(sorted(out.items()))

    def contested(self) -> list[KeyState]:
        """The keys that hold values beside their current one, in key order."""
        return [s for e in self.store.entries(contested=True) if (s := key_state(e)) is not None]

    def find(self, text: str, limit: int = 20) -> list[KeyState]:
        """The keys whose names or values (current, contested or superseded) hold every word of
        ``text``, best match first."""
        found = (key_state(self.store.entry(key)) for key in self.store.find(text, limit))
        return [s for s in found if s is not None]

    def history(
        self, entity: str, slot: str, branch: str = DEFAULT_BRANCH, env: str = DEFAULT_ENV
    ) -> list[Change]:
        """The values the key took, in the order they were written: its first value, then every
        supersede (rollbacks, restores and a person's verdicts included)."""
        found = self.store.timelines(entity=entity, slot=slot, branch=branch, env=env)
        return changes(*found[Key(entity, slot, branch, env)]) if found else []

    def value_at(
        self, entity: str, slot: str, at: str | datetime, branch: str = DEFAULT_BRANCH, env: str = DEFAULT_ENV
    ) -> str | None:
        """The value the key held at a time: the last change dated at or before it."""
        return held_at(self.history(entity, slot, branch, env), timestamp(at, "value_at"))

    def render(self, budget: int = 1700) -> str:
        return self.state.render(budget)

    # -- corrections --------------------------------------------------------------------------

    def retract(self, note_id: str, reason: str) -> list[Key]:
        """Take a note back: each key it wrote to is decided again from the claims that remain
        there, in the order they came. The keys it touched."""
        with store_refusals():
            return self.store.retract(note_id, reason, self._engine)

    def resolve(
        self,
        entity: str,
        slot: str,
        value: str,
        *,
        by: str,
        reason: str,
        branch: str = DEFAULT_BRANCH,
        env: str = DEFAULT_ENV,
    ) -> Decision:
        """A person settles a key on one of the values it holds (current or contested): that
        value is current, the others superseded, and the verdict is in the key's history."""
        try:
            claim = Claim.model_validate(
                {
                    "entity": entity,
                    "slot": slot,
                    "value": value,
                    "branch": branch,
                    "env": env,
                    "evidence": {"type": "human-note", "source": f"resolve:{by}"},
                    "at": datetime.now(UTC),
                }
            )
        except ValidationError as exc:
            raise InputError(f"resolve: {field_of(exc)}") from exc
        with store_refusals():
            return self.store.resolve(claim, by, reason, self._engine())

    def drop_scope(self, branch: str, env: str | None = None, reason: str = "dropped") -> int:
        """Forget a branch (a merged or abandoned one), in one environment or all: the number of
        keys dropped."""
        with store_refusals():
            return self.store.drop_scope(branch, env, reason)

    # -- saving -----------------------------------------------------------------------------

    def save(self, path: str | Path) -> Path:
        """Export the memory to a JSON file, atomically: a crash leaves the old file or the new one."""
        data = {
            "version": SAVED_VERSION,
            "engine": self.engine,
            "extract": self.extract,
            "catalog": self.catalog.model_dump(mode="json") if self.catalog else None,
            "seen": self.seen,
            "skipped": self.skipped,
            "failures": dict(self.failures),
            "state": self.state.to_dict(),
        }
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return write_atomic(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")

    @classmethod
    def load(
        cls, path: str | Path, ops: LearnedOperators | None = None, store: Store | None = None
    ) -> ProjectMemory:
        """A memory exported by ``save``, imported into ``store`` (a new one in this process by
        default) and driven again by the operators it was saved with (``ops`` for a learned or
        hybrid one; without them it answers queries but reads no note, so a look at the state
        loads no model)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            saved = SavedMemory.model_validate(data)
            state = StateMemory.from_dict(saved.state)
            catalog = Catalog.model_validate(saved.catalog) if saved.catalog else None
        except ValidationError as exc:
            raise InputError(f"{path}: not a saved memory ({field_of(exc)})") from exc
        except (OSError, ValueError, RecursionError) as exc:
            raise InputError(f"{path}: not a saved memory ({exc.__class__.__name__}: {exc})") from exc
        store = store or Store()
        with store_refusals():
            store.load_state(state, saved.seen, saved.skipped)
        return cls(
            engine=saved.engine,
            ops=ops,
            extract=saved.extract,
            catalog=catalog,
            store=store,
            failures=Counter(saved.failures),
        )


@contextmanager
def store_refusals() -> Iterator[None]:
    """The store's refusals (a correction that cannot apply, a file that is no store) as the
    component's one error type."""
    try:
        yield
    except StoreError as exc:
        raise InputError(str(exc)) from None


def key_state(entry: Entry | None) -> KeyState | None:
    """What a query answers for a key: its current value and status, or None without one."""
    if entry is None or entry.current is None:
        return None
    contested = [item.best for item in entry.contested()]
    return KeyState(
        entry.current.value, "contested" if contested else "current", entry.current.best, contested
    )


def changes(first: Claim, transitions: Sequence[Transition]) -> list[Change]:
    """A key's history: its first value, then each change of its current value."""
    out = [Change(first.at, first.value, first.evidence.commit, first.evidence.source, "first value")]
    return out + [Change(t.at, t.new, t.commit, t.source, t.reason) for t in transitions]


def held_at(history: Sequence[Change], when: datetime) -> str | None:
    """The value a history held at a time: its last change dated at or before it."""
    held = [c.value for c in history if c.at <= when]
    return held[-1] if held else None


def timestamp(at: str | datetime, where: str) -> datetime:
    try:
        return TypeAdapter(Timestamp).validate_python(at)
    except ValidationError as exc:
        raise InputError(f"{where}: at={at!r}: {field_of(exc)}") from exc


class SavedMemory(BaseModel):
    """The saved file's structure (``ProjectMemory.save``), checked whole before its state is."""

    model_config = ConfigDict(extra="forbid", strict=True)

    version: Literal[1]
    engine: str
    extract: str
    catalog: dict[str, Any] | None
    seen: list[str]
    skipped: dict[str, str] = {}
    failures: dict[str, int]
    state: dict[str, Any]


def check_input(note_id: str, **fields: Any) -> None:
    """The note's own fields, as a caller of the API may pass anything: each a string (``files``
    a list of them), encodable as UTF-8 (a lone surrogate would fail every later save)."""
    for name, value in fields.items():
        values = value if name == "files" else [value]
        if name == "files" and isinstance(value, str | bytes):
            raise InputError(f"note {note_id}: files: a list of paths, not one string ({value!r})")
        for v in values:
            if v is None and name != "text":
                continue
            if not isinstance(v, str):
                raise InputError(f"note {note_id}: {name}: a string, not {type(v).__name__}")
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(f"note {note_id}: {name}: not valid text ({exc.reason})") from None
