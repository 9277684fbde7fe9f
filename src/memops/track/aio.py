"""``ProjectMemory``'s calls as coroutines, for an event loop (an agent framework, a web server):
each runs in a worker thread, so a model call or a write waiting for the store's lock never blocks
the loop. Writes go one at a time (the operators are not shared between threads); reads run as
they come."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from memops.memory import Decision, Key
from memops.track.memory import Change, KeyState, NoteResult, ProjectMemory


class AsyncProjectMemory:
    """``AsyncProjectMemory(memory)``: ``await memory.add_note(...)``, ``await memory.snapshot()``."""

    def __init__(self, memory: ProjectMemory) -> None:
        self.memory = memory
        self._writing = asyncio.Lock()

    async def _write(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        async with self._writing:
            return await asyncio.to_thread(call, *args, **kwargs)

    async def add_note(self, text: str, at: str | datetime, **kwargs: Any) -> NoteResult:
        return await self._write(self.memory.add_note, text, at, **kwargs)

    async def retract(self, note_id: str, reason: str) -> list[Key]:
        return await self._write(self.memory.retract, note_id, reason)

    async def resolve(self, entity: str, slot: str, value: str, **kwargs: Any) -> Decision:
        return await self._write(self.memory.resolve, entity, slot, value, **kwargs)

    async def drop_scope(self, branch: str, env: str | None = None, reason: str = "dropped") -> int:
        return await self._write(self.memory.drop_scope, branch, env, reason)

    async def get(self, entity: str, slot: str, *args: Any, **kwargs: Any) -> KeyState | None:
        return await asyncio.to_thread(self.memory.get, entity, slot, *args, **kwargs)

    async def keys(self, entity: str | None = None, **scope: str) -> list[KeyState]:
        return await asyncio.to_thread(self.memory.keys, entity, **scope)

    async def snapshot(self, *args: Any, **kwargs: Any) -> dict[str, str]:
        return await asyncio.to_thread(self.memory.snapshot, *args, **kwargs)

    async def contested(self) -> list[KeyState]:
        return await asyncio.to_thread(self.memory.contested)

    async def find(self, text: str, limit: int = 20) -> list[KeyState]:
        return await asyncio.to_thread(self.memory.find, text, limit)

    async def history(self, entity: str, slot: str, *args: Any, **kwargs: Any) -> list[Change]:
        return await asyncio.to_thread(self.memory.history, entity, slot, *args, **kwargs)

    async def value_at(
        self, entity: str, slot: str, at: str | datetime, *args: Any, **kwargs: Any
    ) -> str | None:
        return await asyncio.to_thread(self.memory.value_at, entity, slot, at, *args, **kwargs)
