"""Long trajectories: what a replay step keeps of an entry, and what an update example carries,
is bounded by the entry's live values, not by the key's history."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from memops.core.sessions import Episode
from memops.data.trajectory import load_trajectory
from memops.memory.state import Entry, StateMemory, rule
from memops.operators.prompts import update_messages
from memops.operators.registry import UPDATE
from tests.conftest import shipped


def tiled(episode: Episode, copies: int) -> Episode:
    """The episode's sessions repeated, each copy dated before the one after it (the last is the
    original, so no time lies in the future): the same keys collect a history ``copies`` times
    as long."""
    span = (episode.sessions[-1].at - episode.sessions[0].at) * 1.01
    sessions = [
        s.model_copy(update={"id": f"{s.id}-{k}", "at": s.at - (copies - 1 - k) * span})
        for k in range(copies)
        for s in episode.sessions
    ]
    return episode.model_copy(update={"sessions": tuple(sessions)})


@pytest.fixture(scope="module")
def episode(export_dir: Path) -> Episode:
    return load_trajectory("patch-guardrails", shipped(export_dir))


def test_a_snapshot_decides_and_prompts_as_the_whole_entry(episode: Episode) -> None:
    """At every claim of a long replay, the entry rebuilt from its snapshot's JSON gets the same
    rule decision and the same update prompt as the entry with its whole history."""
    memory, checked = StateMemory(), 0
    for session in tiled(episode, 4).sessions:
        for claim in session.memory_claims():
            entry = memory.entry(claim.key)
            if entry is not None:
                rebuilt = Entry.from_snapshot(claim.key, json.loads(json.dumps(entry.snapshot_dict())))
                assert rule(rebuilt, claim) == rule(entry, claim)
                assert update_messages(rebuilt, claim) == update_messages(entry, claim)
                assert sum(len(i.claims) for i in rebuilt.items) <= len(entry.live)
                checked += 1
            memory.apply(claim)
    assert checked > 3 * len(episode.sessions)


def test_update_examples_do_not_grow_with_the_history(episode: Episode) -> None:
    """They carried every earlier claim at the key, so 5,000 commits wrote 1.4 GB."""

    def largest(copies: int) -> int:
        examples = UPDATE.examples(tiled(episode, copies), random.Random(0), 2)
        return max(len(e["inputs"]) for e in examples)

    # four times the history; only the times' spelling may differ by a few characters
    assert largest(8) < 1.05 * largest(2)
