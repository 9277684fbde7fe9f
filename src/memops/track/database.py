"""Which database a store URL names, and a connection to it: an SQLite file (or memory), or a
PostgreSQL server."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from memops.track.postgres import SCHEMES, shown
from memops.track.tables import POSTGRES, SQLITE, Dialect

SQLITE_WAIT_S = 60.0
"""How long an SQLite store waits for another process's lock before it gives up."""


class StoreError(ValueError):
    """A store that cannot be opened or a correction that cannot apply, said in one line."""


class Connection(Protocol):
    """What the store asks of a database connection (``sqlite3.Connection`` has it)."""

    def execute(self, sql: str, args: Sequence[Any] = ..., /) -> Any: ...

    def close(self) -> None: ...


def is_server(url: str | Path) -> bool:
    """Whether a store URL names a PostgreSQL server rather than an SQLite file."""
    return str(url).startswith(SCHEMES)


def store_path(url: str | Path) -> str:
    """Where a store lives, as messages name it: the SQLite file (or ``:memory:``) of
    ``sqlite:///relative.db``, ``sqlite:////absolute.db``, a plain path or ``:memory:``; a
    PostgreSQL URL without its password."""
    text = str(url)
    if is_server(text):
        return shown(text)
    if text.startswith("sqlite://"):
        text = text.removeprefix("sqlite://").removeprefix("/") or ":memory:"
    elif "://" in text:
        raise StoreError(
            f"store={text!r}: a store is an SQLite file (sqlite:///path.db or a path) or a PostgreSQL"
            " server (postgresql://user:password@host/database)"
        )
    return text


def connect(url: str | Path) -> tuple[Dialect, Connection, tuple[type[Exception], ...]]:
    """The database a store URL names, opened: its dialect, a connection, and the errors its
    driver raises."""
    text, path = str(url), store_path(url)
    if is_server(text):
        try:
            from memops.track.postgres import Connection as PostgresConnection

            db = PostgresConnection(text)
        except ImportError:
            raise StoreError(
                f"store {path}: a PostgreSQL store needs psycopg: pip install 'memops[postgres]'"
            ) from None
        except Exception as exc:  # psycopg.OperationalError and kin: the server or its login
            raise StoreError(f"store {path}: cannot connect ({str(exc).strip().splitlines()[0]})") from None
        return POSTGRES, db, db.errors
    if path != ":memory:":
        if Path(path).is_dir():
            raise StoreError(f"store {path}: a folder, not a database file")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=SQLITE_WAIT_S, isolation_level=None, check_same_thread=False)
    if path != ":memory:":
        try:
            write_ahead(db)
        except sqlite3.DatabaseError as exc:
            db.close()
            raise StoreError(f"store {path}: not a memops store ({exc})") from exc
    return SQLITE, db, (sqlite3.DatabaseError,)


def write_ahead(db: sqlite3.Connection) -> None:
    """Put the file in WAL mode, so readers never wait on the writer. Two processes opening one
    new file at once can each hold the lock the other's switch needs, and SQLite then answers
    "database is locked" at once instead of waiting its busy timeout: the switch is tried again
    until ``SQLITE_WAIT_S`` has passed."""
    deadline = time.monotonic() + SQLITE_WAIT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
