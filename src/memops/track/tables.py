"""The store's tables (SQLite), its schema version, and the columns that name a key."""

SCHEMA_VERSION = "1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    ns TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (ns, name));
CREATE TABLE IF NOT EXISTS notes (
    seq INTEGER PRIMARY KEY, ns TEXT NOT NULL, id TEXT NOT NULL, at TEXT, title TEXT, text TEXT,
    sha TEXT, files TEXT, skipped TEXT, retracted TEXT, UNIQUE (ns, id));
CREATE TABLE IF NOT EXISTS claims (
    seq INTEGER PRIMARY KEY, ns TEXT NOT NULL, note TEXT NOT NULL, kind TEXT NOT NULL,
    entity TEXT NOT NULL, slot TEXT NOT NULL, branch TEXT NOT NULL, env TEXT NOT NULL,
    claim TEXT NOT NULL, action TEXT, previous TEXT, reason TEXT, live INTEGER NOT NULL DEFAULT 1);
CREATE INDEX IF NOT EXISTS claims_key ON claims (ns, entity, slot, branch, env);
CREATE INDEX IF NOT EXISTS claims_note ON claims (ns, note);
CREATE TABLE IF NOT EXISTS entries (
    ns TEXT NOT NULL, entity TEXT NOT NULL, slot TEXT NOT NULL, branch TEXT NOT NULL,
    env TEXT NOT NULL, contested INTEGER NOT NULL, data TEXT NOT NULL, live TEXT NOT NULL,
    first TEXT NOT NULL, rev INTEGER NOT NULL, PRIMARY KEY (ns, entity, slot, branch, env));
CREATE TABLE IF NOT EXISTS transitions (
    seq INTEGER PRIMARY KEY, ns TEXT NOT NULL, entity TEXT NOT NULL, slot TEXT NOT NULL,
    branch TEXT NOT NULL, env TEXT NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS transitions_key ON transitions (ns, entity, slot, branch, env);
CREATE TABLE IF NOT EXISTS corrections (
    seq INTEGER PRIMARY KEY, ns TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL,
    by TEXT, reason TEXT NOT NULL, at TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5 (text, ns UNINDEXED);
"""
"""``claims.kind`` is ``note`` (a note's claim), ``resolve`` (a person's verdict) or ``import``;
``live`` is 0 once its note is retracted or its scope dropped. An entry is kept whole (``data``:
every item with every claim, what a write decides against), as its live items alone (``live``:
what a query answers from) and with its first claim (``first``: where its history starts);
``rev`` is the store's count of entry writes when it was written (``meta`` row ``rev``), so a
process may keep the live items it has read until they change.
``search`` holds one row per live claim, its rowid the claim's ``seq``."""

KEY_COLUMNS = "entity = ? AND slot = ? AND branch = ? AND env = ?"
