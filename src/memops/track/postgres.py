"""A PostgreSQL server as the store's database, through psycopg 3 (the ``postgres`` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

SCHEMES = ("postgresql://", "postgres://")


def shown(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class Connection:
    """One psycopg connection in autocommit mode (a write opens its own transaction), taking the
    ``?`` placeholders the store's statements are written with. The statements hold no ``?`` or
    ``%`` of their own."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.errors: tuple[type[Exception], ...] = (psycopg.Error,)
        self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        return self._conn.execute(sql.replace("?", "%s"), tuple(args))

    def close(self) -> None:
        self._conn.close()
