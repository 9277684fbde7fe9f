"""The memory's store: notes, claims, their decisions and the entries at each key as rows of one
database, several namespaces (repositories, tenants) side by side: an SQLite file (stdlib
``sqlite3``, WAL journal) or memory by default, or a PostgreSQL server (``postgresql://…``).

Each note is decided and written in one transaction that holds the database's one write lock
from its start (SQLite's ``BEGIN IMMEDIATE``, a PostgreSQL advisory lock): the entries at the
note's keys are read, the engine (``StateMemory``, with whatever operators decide) applies its
claims, and the touched entries, the new transitions and each claim's decision are written back
before the lock is released. Two processes writing to one store therefore lose no update, and a
note id already in the store is never decided again. Corrections (``retract``, ``resolve``,
``drop_scope``) decide the keys they touch again from the claims that remain, in the order they
were written. ``ProjectMemory`` (``memops.track``) is the API users hold; this module knows no
model.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memops.core.records import Note
from memops.memory.claims import DEFAULT_BRANCH, Claim, Key
from memops.memory.state import Decision, Entry, StateMemory, Transition, entry_dict, entry_from_dict
from memops.track.database import Connection, StoreError, connect, store_path
from memops.track.tables import KEY_COLUMNS, SCHEMA_VERSION, words

DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class Correction:
    """A retraction, a verdict or a dropped scope, as the store keeps it."""

    kind: str
    target: str
    by: str | None
    reason: str
    at: datetime


class Store:
    """One database, read and written in one namespace. Safe across threads (one connection
    behind a lock) and across processes (the database's own locking)."""

    def __init__(self, url: str | Path = ":memory:", namespace: str = DEFAULT_NAMESPACE) -> None:
        if not namespace or not namespace.strip():
            raise StoreError("namespace: a non-empty name")
        self.path, self.namespace = store_path(url), namespace
        self.dialect, self._db, errors = connect(url)
        self._lock = threading.RLock()
        self._read: dict[Key, tuple[int, Entry]] = {}
        try:
            with self._write() as db:
                for statement in self.dialect.schema:
                    db.execute(statement)
                found = db.execute("SELECT value FROM meta WHERE ns = '' AND name = 'schema'").fetchone()
                if found is None:
                    db.execute("INSERT INTO meta VALUES ('', 'schema', ?)", (SCHEMA_VERSION,))
                elif found[0] != SCHEMA_VERSION:
                    raise StoreError(
                        f"store {self.path}: schema {found[0]}, this memops reads {SCHEMA_VERSION}"
                    )
        except errors as exc:
            self._db.close()
            raise StoreError(f"store {self.path}: not a memops store ({exc})") from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One write transaction, taking the database's write lock at its start so that what it
        reads cannot change before it commits."""
        with self._lock:
            for statement in self.dialect.begin:
                self._db.execute(statement)
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # -- settings of the namespace ------------------------------------------------------------

    def meta(self, name: str) -> Any:
        rows = self._rows("SELECT value FROM meta WHERE ns = ? AND name = ?", (self.namespace, name))
        return json.loads(rows[0][0]) if rows else None

    def set_meta(self, **values: Any) -> None:
        with self._write() as db:
            for name, value in values.items():
                db.execute(
                    "INSERT INTO meta VALUES (?, ?, ?)"
                    " ON CONFLICT (ns, name) DO UPDATE SET value = excluded.value",
                    (self.namespace, name, json.dumps(value, ensure_ascii=False)),
                )

    # -- writing -----------------------------------------------------------------------------

    def write_note(
        self, note: Note, claims: Sequence[Claim], engine: StateMemory
    ) -> tuple[list[Decision], bool]:
        """Decide and write a note's claims in one transaction; its decisions, and whether they
        were made now (False: the note's id was already in the store, and its recorded
        decisions are returned, not made again)."""
        with self._write() as db:
            if self._has_note(db, note.id):
                return self.decisions(note.id), False
            keys = {c.key for c in claims}
            engine.adopt(self._entries(db, keys))
            done = len(engine.transitions)
            decisions = [engine.apply(c) for c in claims]
            db.execute(
                "INSERT INTO notes (ns, id, at, title, text, sha, files) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    self.namespace,
                    note.id,
                    note.at.isoformat(),
                    note.title,
                    note.text,
                    note.commit,
                    json.dumps(list(note.files)),
                ),
            )
            for decision in decisions:
                self._add_claim(db, note.id, "note", decision.claim, decision)
            self._put(db, engine, keys, engine.transitions[done:])
        return decisions, True

    def skip(self, note_id: str, reason: str) -> None:
        """A note read and refused: seen, never written."""
        with self._write() as db:
            if not self._has_note(db, note_id):
                db.execute(
                    "INSERT INTO notes (ns, id, skipped) VALUES (?, ?, ?)", (self.namespace, note_id, reason)
                )

    def _has_note(self, db: Connection, note_id: str) -> bool:
        found = db.execute("SELECT 1 FROM notes WHERE ns = ? AND id = ?", (self.namespace, note_id))
        return found.fetchone() is not None

    def _add_claim(
        self, db: Connection, note: str, kind: str, claim: Claim, decision: Decision | None = None
    ) -> None:
        previous = decision.previous if decision else None
        (seq,) = db.execute(
            "INSERT INTO claims (ns, note, kind, entity, slot, branch, env, claim, action, previous, reason)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
            (
                self.namespace,
                note,
                kind,
                *claim.key,
                claim.model_dump_json(),
                decision.action if decision else None,
                previous.model_dump_json() if previous else None,
                decision.reason if decision else None,
            ),
        ).fetchone()
        found = self.dialect.stored(words(f"{claim.entity} {claim.slot} {claim.value}"))
        db.execute(self.dialect.add_search, (seq, found, self.namespace))

    def _put(
        self,
        db: Connection,
        engine: StateMemory,
        keys: Iterable[Key],
        transitions: Iterable[Transition],
    ) -> None:
        """Write back the entries at ``keys`` as the engine holds them, and its new transitions."""
        for key in keys:
            entry = engine.entry(key)
            db.execute(f"DELETE FROM entries WHERE ns = ? AND {KEY_COLUMNS}", (self.namespace, *key))
            if entry is not None and entry.items:
                (rev,) = db.execute(
                    "INSERT INTO meta VALUES ('', 'rev', '1') ON CONFLICT (ns, name)"
                    " DO UPDATE SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)"
                    " RETURNING CAST(value AS INTEGER)"
                ).fetchone()
                db.execute(
                    "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        self.namespace,
                        *key,
                        int(bool(entry.contested())),
                        json.dumps(entry_dict(entry)),
                        json.dumps(entry.snapshot_dict()),
                        entry.items[0].claims[0].model_dump_json(),
                        rev,
                    ),
                )
        for t in transitions:
            db.execute(
                "INSERT INTO transitions (ns, entity, slot, branch, env, data) VALUES (?, ?, ?, ?, ?, ?)",
                (self.namespace, *t.key, json.dumps(t.to_dict())),
            )

    def _entries(self, db: Connection, keys: Iterable[Key]) -> list[Entry]:
        out = []
        for key in keys:
            row = db.execute(
                f"SELECT data FROM entries WHERE ns = ? AND {KEY_COLUMNS}", (self.namespace, *key)
            ).fetchone()
            if row is not None:
                out.append(entry_from_dict(json.loads(row[0]), str(key)))
        return out

    # -- reading -----------------------------------------------------------------------------

    def entry(self, key: Key) -> Entry | None:
        """The live items at a key (``Entry.snapshot``), or None."""
        rows = self._rows(
            f"SELECT rev, live FROM entries WHERE ns = ? AND {KEY_COLUMNS}", (self.namespace, *key)
        )
        return self._live(key, *rows[0]) if rows else None

    def _live(self, key: Key, rev: int, live: str) -> Entry:
        """A key's live items as last read, read again only when a write has changed them: a
        claim takes longer to check than the database takes to find it."""
        held = self._read.get(key)
        if held is None or held[0] != rev:
            held = self._read[key] = (rev, Entry.from_snapshot(key, json.loads(live)))
        return held[1]

    def entries(
        self,
        entity: str | None = None,
        *,
        slot: str | None = None,
        branch: str | None = None,
        env: str | None = None,
        contested: bool = False,
        whole: bool = False,
    ) -> list[Entry]:
        """The entries in key order, those of one entity, slot, branch or environment if named,
        only those with contested values if ``contested``: their live items (``Entry.snapshot``),
        all that a query answers from, or ``whole``."""
        where, args = self._where(entity=entity, slot=slot, branch=branch, env=env)
        if contested:
            where += " AND contested = 1"
        column = "data" if whole else "live"
        rows = self._rows(
            f"SELECT entity, slot, branch, env, rev, {column} FROM entries WHERE {where}"
            " ORDER BY entity, slot, branch, env",
            args,
        )
        if whole:
            return [entry_from_dict(json.loads(data), "entries") for *_, data in rows]
        return [self._live(Key(e, s, b, v), rev, live) for e, s, b, v, rev, live in rows]

    def timelines(self, **scope: str) -> dict[Key, tuple[Claim, list[Transition]]]:
        """Each key's first claim and its changes of current value in the order they were made,
        at the keys of a scope (``entity``, ``slot``, ``branch``, ``env``): all a history needs."""
        where, args = self._where(**scope)
        firsts = self._rows(f"SELECT entity, slot, branch, env, first FROM entries WHERE {where}", args)
        out = {Key(*key): (Claim.model_validate_json(first), []) for *key, first in firsts}
        for (data,) in self._rows(f"SELECT data FROM transitions WHERE {where} ORDER BY seq", args):
            transition = Transition.from_dict(json.loads(data))
            out[transition.key][1].append(transition)
        return out

    def _where(self, **scope: str | None) -> tuple[str, list[str]]:
        where, args = ["ns = ?"], [self.namespace]
        for column, value in scope.items():
            if column not in ("entity", "slot", "branch", "env"):
                raise StoreError(f"unknown key field {column!r}")
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        return " AND ".join(where), args

    def find(self, text: str, limit: int = 50) -> list[Key]:
        """The keys whose names or any of whose live claims' values hold every word of ``text``,
        best match first."""
        asked = words(text)
        if not asked:
            return []
        rows = self._rows(self.dialect.find, (self.dialect.match(asked), self.namespace, limit))
        return [Key(*row) for row in rows]

    def seen(self) -> list[str]:
        """The ids of the notes read (written or skipped), in the order they were read."""
        return [r[0] for r in self._rows("SELECT id FROM notes WHERE ns = ? ORDER BY seq", (self.namespace,))]

    def skipped(self) -> dict[str, str]:
        rows = self._rows(
            "SELECT id, skipped FROM notes WHERE ns = ? AND skipped IS NOT NULL ORDER BY seq",
            (self.namespace,),
        )
        return dict(rows)

    def decisions(self, note_id: str) -> list[Decision]:
        """The decisions recorded for a note's claims (as last decided: a correction may have
        decided them again)."""
        rows = self._rows(
            "SELECT claim, action, previous, reason FROM claims WHERE ns = ? AND note = ? ORDER BY seq",
            (self.namespace, note_id),
        )
        out = []
        for claim, action, previous, reason in rows:
            c = Claim.model_validate_json(claim)
            out.append(
                Decision(action, c.key, c, Claim.model_validate_json(previous) if previous else None, reason)
            )
        return out

    def claims(self) -> list[tuple[str, Claim]]:
        """Every claim in force with the note that wrote it, in the order they were written: the
        order to replay them in to get this store's state again."""
        rows = self._rows(
            "SELECT note, claim FROM claims WHERE ns = ? AND live = 1 ORDER BY seq", (self.namespace,)
        )
        return [(note, Claim.model_validate_json(raw)) for note, raw in rows]

    def corrections(self) -> list[Correction]:
        rows = self._rows(
            "SELECT kind, target, by, reason, at FROM corrections WHERE ns = ? ORDER BY seq",
            (self.namespace,),
        )
        return [Correction(k, t, b, r, datetime.fromisoformat(a)) for k, t, b, r, a in rows]

    def state(self, engine: StateMemory) -> StateMemory:
        """The whole namespace held by ``engine`` (rendering, the JSON export)."""
        engine.adopt(self.entries(whole=True))
        rows = self._rows("SELECT data FROM transitions WHERE ns = ? ORDER BY seq", (self.namespace,))
        engine.transitions = [Transition.from_dict(json.loads(data)) for (data,) in rows]
        return engine

    # -- corrections -------------------------------------------------------------------------

    def retract(self, note_id: str, reason: str, engine: Callable[[], StateMemory]) -> list[Key]:
        """Take a note's claims back: every key it wrote to is decided again, by a fresh
        ``engine()``, from the claims that remain there. The keys it touched."""
        with self._write() as db:
            found = db.execute(
                "SELECT retracted FROM notes WHERE ns = ? AND id = ?", (self.namespace, note_id)
            ).fetchone()
            if found is None:
                raise StoreError(f"retract: no note {note_id!r} in this memory")
            if found[0] is not None:
                raise StoreError(f"retract: note {note_id!r} was already retracted ({found[0]})")
            keys = [
                Key(*row)
                for row in db.execute(
                    "SELECT DISTINCT entity, slot, branch, env FROM claims"
                    " WHERE ns = ? AND note = ? AND live = 1",
                    (self.namespace, note_id),
                )
            ]
            db.execute(
                "UPDATE notes SET retracted = ? WHERE ns = ? AND id = ?", (reason, self.namespace, note_id)
            )
            self._retire(db, "ns = ? AND note = ?", (self.namespace, note_id))
            self._decide_again(db, keys, engine)
            self._correction(db, "retract", note_id, None, reason)
        return keys

    def resolve(self, claim: Claim, by: str, reason: str, engine: StateMemory) -> Decision:
        """A person settles a key on one of the values it holds live (``StateMemory.settle``)."""
        with self._write() as db:
            engine.adopt(self._entries(db, [claim.key]))
            try:
                decision = engine.settle(claim, f"resolved by {by}: {reason}")
            except ValueError as exc:
                raise StoreError(f"resolve: {exc}") from None
            seq = self._correction(db, "resolve", str(claim.key), by, reason)
            self._add_claim(db, f"resolve-{seq}", "resolve", decision.claim, decision)
            self._put(db, engine, [claim.key], engine.transitions[-1:])
        return decision

    def drop_scope(self, branch: str, env: str | None, reason: str) -> int:
        """Forget a branch (in one environment, or all): its entries, history and claims; the
        number of keys dropped. The default branch is every other branch's base, and is kept."""
        if branch == DEFAULT_BRANCH:
            raise StoreError(f"drop_scope: {DEFAULT_BRANCH} is the base of every branch; it is not dropped")
        where, args = self._where(branch=branch, env=env)
        with self._write() as db:
            dropped = db.execute(f"DELETE FROM entries WHERE {where}", args).rowcount
            db.execute(f"DELETE FROM transitions WHERE {where}", args)
            self._retire(db, where, args)
            self._correction(db, "drop_scope", branch if env is None else f"{branch}/{env}", None, reason)
        return dropped

    def _retire(self, db: Connection, where: str, args: Sequence[Any]) -> None:
        """Claims no longer in force (those ``where`` selects): kept as rows, out of every later
        decision and search."""
        db.execute(
            f"DELETE FROM search WHERE {self.dialect.search_id} IN"
            f" (SELECT seq FROM claims WHERE live = 1 AND {where})",
            args,
        )
        db.execute(f"UPDATE claims SET live = 0 WHERE live = 1 AND {where}", args)

    def _decide_again(self, db: Connection, keys: Sequence[Key], engine: Callable[[], StateMemory]) -> None:
        """Each key's entry and history rebuilt from its live claims and verdicts, in their order."""
        for key in keys:
            db.execute(f"DELETE FROM transitions WHERE ns = ? AND {KEY_COLUMNS}", (self.namespace, *key))
            state = engine()
            rows = db.execute(
                f"SELECT seq, kind, claim, reason FROM claims WHERE ns = ? AND live = 1 AND {KEY_COLUMNS}"
                " ORDER BY seq",
                (self.namespace, *key),
            ).fetchall()
            for seq, kind, raw, reason in rows:
                claim = Claim.model_validate_json(raw)
                if kind == "resolve":
                    try:
                        decision = state.settle(claim, reason)
                    except ValueError:  # the value it settled on is no longer held: the verdict lapses
                        self._retire(db, "seq = ?", (seq,))
                        continue
                else:
                    decision = state.apply(claim)
                previous = decision.previous.model_dump_json() if decision.previous else None
                db.execute(
                    "UPDATE claims SET action = ?, previous = ?, reason = ? WHERE seq = ?",
                    (decision.action, previous, decision.reason, seq),
                )
            self._put(db, state, [key], state.transitions)

    def _correction(self, db: Connection, kind: str, target: str, by: str | None, reason: str) -> int:
        return db.execute(
            "INSERT INTO corrections (ns, kind, target, by, reason, at)"
            " VALUES (?, ?, ?, ?, ?, ?) RETURNING seq",
            (self.namespace, kind, target, by, reason, datetime.now(UTC).isoformat()),
        ).fetchone()[0]

    # -- import ------------------------------------------------------------------------------

    def load_state(self, state: StateMemory, seen: Sequence[str], skipped: dict[str, str]) -> None:
        """Fill an empty namespace from a saved memory (``ProjectMemory.save``'s JSON): its
        entries, history and the notes it read. The file keeps no note's claims apart, so each
        held claim is filed under its evidence's source (a note id where the memory wrote it), in
        time order: a retraction decides their keys again from them."""
        with self._write() as db:
            if db.execute("SELECT 1 FROM notes WHERE ns = ? LIMIT 1", (self.namespace,)).fetchone():
                raise StoreError(f"store {self.path}: namespace {self.namespace!r} already holds notes")
            for note_id in seen:
                db.execute(
                    "INSERT INTO notes (ns, id, skipped) VALUES (?, ?, ?)",
                    (self.namespace, note_id, skipped.get(note_id)),
                )
            self._put(db, state, [entry.key for entry in state.entries()], state.transitions)
            held = [claim for entry in state.entries() for item in entry.items for claim in item.claims]
            for claim in sorted(held, key=lambda c: c.at):
                self._add_claim(db, claim.evidence.source or "", "import", claim)
