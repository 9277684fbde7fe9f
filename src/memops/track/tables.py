"""The store's tables, its schema version and the statements that differ between the two databases
it speaks: SQLite (a file, or memory) and PostgreSQL (a server)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

SCHEMA_VERSION = "1"

TABLES = """
CREATE TABLE IF NOT EXISTS meta (
    ns TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (ns, name));
CREATE TABLE IF NOT EXISTS notes (
    seq {serial}, ns TEXT NOT NULL, id TEXT NOT NULL, at TEXT, title TEXT, text TEXT,
    sha TEXT, files TEXT, skipped TEXT, retracted TEXT, UNIQUE (ns, id));
CREATE TABLE IF NOT EXISTS claims (
    seq {serial}, ns TEXT NOT NULL, note TEXT NOT NULL, kind TEXT NOT NULL,
    entity TEXT NOT NULL, slot TEXT NOT NULL, branch TEXT NOT NULL, env TEXT NOT NULL,
    claim TEXT NOT NULL, action TEXT, previous TEXT, reason TEXT, live INTEGER NOT NULL DEFAULT 1);
CREATE INDEX IF NOT EXISTS claims_key ON claims (ns, entity, slot, branch, env);
CREATE INDEX IF NOT EXISTS claims_note ON claims (ns, note);
CREATE TABLE IF NOT EXISTS entries (
    ns TEXT NOT NULL, entity TEXT NOT NULL, slot TEXT NOT NULL, branch TEXT NOT NULL,
    env TEXT NOT NULL, contested INTEGER NOT NULL, data TEXT NOT NULL, live TEXT NOT NULL,
    first TEXT NOT NULL, rev INTEGER NOT NULL, PRIMARY KEY (ns, entity, slot, branch, env));
CREATE TABLE IF NOT EXISTS transitions (
    seq {serial}, ns TEXT NOT NULL, entity TEXT NOT NULL, slot TEXT NOT NULL,
    branch TEXT NOT NULL, env TEXT NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS transitions_key ON transitions (ns, entity, slot, branch, env);
CREATE TABLE IF NOT EXISTS corrections (
    seq {serial}, ns TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL,
    by TEXT, reason TEXT NOT NULL, at TEXT NOT NULL);
"""
"""``claims.kind`` is ``note`` (a note's claim), ``resolve`` (a person's verdict) or ``import``;
``live`` is 0 once its note is retracted or its scope dropped. An entry is kept whole (``data``:
every item with every claim, what a write decides against), as its live items alone (``live``:
what a query answers from) and with its first claim (``first``: where its history starts);
``rev`` is the store's count of entry writes when it was written (``meta`` row ``rev``), so a
process may keep the live items it has read until they change. ``search`` holds one row per
live claim, keyed by the claim's ``seq``: the words of its entity, slot and value."""

KEY_COLUMNS = "entity = ? AND slot = ? AND branch = ? AND env = ?"

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The words a search matches on, alike in both databases: runs of letters and digits, case
    folded (``PostgreSQL 16.2`` -> ``postgresql``, ``16``, ``2``)."""
    return _WORD.findall(text.casefold())


@dataclass(frozen=True)
class Dialect:
    """What one database spells its own way. Statements take ``?`` placeholders in both (the
    PostgreSQL connection turns them into its driver's)."""

    name: str
    serial: str
    search_table: str
    begin: tuple[str, ...]
    """What opens a write transaction holding the store's one write lock, so that what it reads
    cannot change before it commits."""
    add_search: str
    search_id: str
    """The column of ``search`` that holds a claim's ``seq``."""
    find: str
    """Keys whose claims hold every word, best match first; its arguments are the words as
    ``match`` spells them, the namespace and a limit."""
    match: Callable[[list[str]], object]
    stored: Callable[[list[str]], object]
    """A claim's words as ``add_search`` stores them."""

    @property
    def schema(self) -> list[str]:
        """The statements that create the tables, one by one."""
        script = TABLES.format(serial=self.serial) + self.search_table
        return [s.strip() for s in script.split(";") if s.strip()]


_KEY_ORDER = "GROUP BY c.entity, c.slot, c.branch, c.env"

SQLITE = Dialect(
    name="sqlite",
    serial="INTEGER PRIMARY KEY",
    search_table="CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5 (text, ns UNINDEXED);",
    begin=("BEGIN IMMEDIATE",),
    add_search="INSERT INTO search (rowid, text, ns) VALUES (?, ?, ?)",
    search_id="rowid",
    # FTS5's rank is bm25: the fewer other words beside the ones asked for, the better.
    find="SELECT c.entity, c.slot, c.branch, c.env FROM search JOIN claims c ON c.seq = search.rowid"
    f" WHERE search MATCH ? AND search.ns = ? {_KEY_ORDER} ORDER BY MIN(search.rank), MIN(c.seq) LIMIT ?",
    # Each word a quoted FTS5 string: taken literally, all of them required.
    match=lambda found: " ".join(f'"{w}"' for w in found),
    stored=" ".join,
)

POSTGRES = Dialect(
    name="postgresql",
    serial="BIGSERIAL PRIMARY KEY",
    search_table="CREATE TABLE IF NOT EXISTS search (seq BIGINT PRIMARY KEY, ns TEXT NOT NULL, words TEXT[]"
    " NOT NULL); CREATE INDEX IF NOT EXISTS search_words ON search USING GIN (words);",
    # One lock for the database's writers, as SQLite has: the key is the ASCII of "memops".
    begin=("BEGIN", "SELECT pg_advisory_xact_lock(109101109111112115)"),
    add_search="INSERT INTO search (seq, words, ns) VALUES (?, ?, ?)",
    search_id="seq",
    # Every word held (GIN on the array); the claims with the fewest other words first, as bm25.
    find="SELECT c.entity, c.slot, c.branch, c.env FROM search JOIN claims c ON c.seq = search.seq"
    f" WHERE search.words @> CAST(? AS TEXT[]) AND search.ns = ? {_KEY_ORDER}"
    " ORDER BY MIN(cardinality(search.words)), MIN(c.seq) LIMIT ?",
    match=list,
    stored=list,
)
