"""A structured reader: answers a query about one key straight from the engine's state.

It is the reference reader of the evaluation: whatever a learned operator did to the memory,
the reader asks the resulting state, so query accuracy measures the memory, not a reader.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from memops.memory.claims import Key
from memops.memory.state import StateMemory

UNKNOWN = "unknown"


def value_at(mem: StateMemory, key: Key, when: datetime) -> str:
    """The value current at ``when``, rebuilt from the entry's first sighting and its transitions."""
    entry = mem.entry(key)
    if entry is None or not entry.items or min(c.at for c in entry.items[0].claims) > when:
        return UNKNOWN
    changes = [t for t in mem.transitions if t.key == key]
    past = [t for t in changes if t.at <= when]
    if past:
        return past[-1].new
    return changes[0].old if changes else entry.current.value


def answer(
    mem: StateMemory, key: Key, ask: Literal["value", "commit", "value_at"], at: datetime | None = None
) -> str:
    entry = mem.entry(key)
    if entry is None or entry.current is None:
        return UNKNOWN
    if ask == "value":
        return entry.current.value
    if ask == "commit":
        return entry.current.best.evidence.commit or "none"
    if at is None:
        raise ValueError("a value_at question needs a time")
    return value_at(mem, key, at)
