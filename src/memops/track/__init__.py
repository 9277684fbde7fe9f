"""The learned memory as a component: ``open_memory`` and ``ProjectMemory`` (a project memory
with its operators, fed notes and asked for state), and ``memops track`` (a git repository's
history through it)."""

from memops.data.catalog import load_catalog
from memops.track.aio import AsyncProjectMemory
from memops.track.memory import (
    Change,
    InputError,
    KeyState,
    NoteResult,
    ProjectMemory,
)
from memops.track.opening import open_memory

__all__ = [
    "AsyncProjectMemory",
    "Change",
    "InputError",
    "KeyState",
    "NoteResult",
    "ProjectMemory",
    "load_catalog",
    "open_memory",
]
