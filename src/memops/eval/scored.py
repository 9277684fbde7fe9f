"""Scored samples: an append-only JSONL of per-sample records that a restarted run reads to skip
finished work.

A record is written and flushed as soon as its sample is scored, so a killed run loses at
most the batch in flight. A last line cut off mid-write is dropped on reopening; every other
malformed line is an error naming the file and line, because it means the file was edited.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

Record = dict[str, Any]
FIELDS = (
    "fold",
    "op",
    "variant",
    "id",
    "prompt_hash",
    "raw",
    "parsed",
    "error",
    "gold",
    "score",
    "latency_s",
)


class RecordsError(ValueError):
    pass


def record_key(r: Record) -> tuple[str, str, str, str]:
    return r["fold"], r["op"], r["variant"], r["id"]


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Each line of a JSON-lines file with its number, parsed as it is reached. A last line cut
    off mid-write (no newline after it: the write was interrupted) ends the file; any other
    line that does not parse is an error naming the file and line."""
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for n, line in enumerate(lines, start=1):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            if n == len(lines) and not line.endswith("\n"):
                return
            raise RecordsError(f"{path}:{n}: not a JSON line ({e.msg})") from e
        yield n, value


def mend_tail(path: Path, lines_read: int) -> None:
    """End a JSON-lines file on a line boundary once ``lines_read`` of its lines were read
    (``json_lines``), so that the next append starts a line of its own: cut a torn last line,
    or close a whole one that lost its newline."""
    if not path.exists():
        return
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    if lines_read == data.count(b"\n") + 1:  # the last line was read whole
        with path.open("ab") as f:
            f.write(b"\n")
    else:
        os.truncate(path, data.rfind(b"\n") + 1)


def append_lines(path: Path, values: Iterable[Any]) -> None:
    """Append each value to a JSON-lines file as a line, on disk before this returns: what a run
    that is stopped next has written stays written (``json_lines`` reads it back)."""
    with path.open("a", encoding="utf-8") as f:
        for value in values:
            f.write(json.dumps(value, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_records(path: Path) -> list[Record]:
    out, seen = [], {}
    for n, record in json_lines(path):
        if not isinstance(record, dict):
            raise RecordsError(f"{path}:{n}: a record is a JSON object, not {type(record).__name__}")
        missing = [f for f in FIELDS if f not in record]
        if missing:
            raise RecordsError(f"{path}:{n}: record lacks field(s) {', '.join(missing)}")
        if record_key(record) in seen:
            raise RecordsError(
                f"{path}:{n}: a second record for {'/'.join(map(str, record_key(record)))} "
                f"(first at line {seen[record_key(record)]})"
            )
        seen[record_key(record)] = n
        out.append(record)
    return out


def write_records(path: Path, records: Iterable[Record]) -> None:
    """Replace ``path`` whole: written beside it, then renamed, so a crash leaves the old file."""
    staging = path.with_name(f".{path.name}.tmp")
    with staging.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(staging, path)


class Records:
    """The records of one run; ``done`` tells which samples a restarted run may skip."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records = read_records(path)
        self._done = {record_key(r) for r in self.records}
        path.parent.mkdir(parents=True, exist_ok=True)
        mend_tail(path, len(self.records))

    def done(self, fold: str, op: str, variant: str, id: str) -> bool:
        return (fold, op, variant, id) in self._done

    def add(self, records: Iterable[Record]) -> None:
        batch = [r for r in records if record_key(r) not in self._done]
        append_lines(self.path, batch)
        self.records.extend(batch)
        self._done.update(record_key(r) for r in batch)
