"""The engine with injected operators: learned/hybrid plumbing against the rules' own answers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from memops.data.trajectory import load_trajectory
from memops.memory.state import StateMemory
from memops.operators.backends import BackendError, Completion, Request
from memops.operators.backends.symbolic import SymbolicBackend
from memops.operators.engine import ask_ahead, learned_writes, replay
from memops.operators.learned import LearnedOperators
from tests.conftest import shipped


@pytest.fixture(scope="module")
def episode(export_dir: Path):
    return load_trajectory("permissions-flow", shipped(export_dir))


def state(mem: StateMemory) -> dict:
    """The memory's content; transition reasons name who decided, so they are left out."""
    data = mem.to_dict()
    for t in data["transitions"]:
        del t["reason"]
    return data


@pytest.mark.parametrize("extract_mode", ["direct", "two-stage", None])
@pytest.mark.parametrize("mode", ["learned", "hybrid"])
def test_oracle_answers_reproduce_the_symbolic_memory(episode, mode: str, extract_mode: str | None) -> None:
    """With every answer equal to the rule's, the learned engine must end where the rules end."""
    ops = LearnedOperators(SymbolicBackend.for_episode(episode))
    got = replay(episode, mode, ops, extract_mode)
    want = replay(episode, "symbolic")
    assert state(got.memory) == state(want.memory)
    assert [d.action for d in got.decisions] == [d.action for d in want.decisions]
    assert not got.failures
    n_notes, n_claims = len(episode.sessions), sum(len(s.claims) for s in episode.sessions)
    if extract_mode is None:  # gold claims: no extraction call
        assert not {"extract", "select", "fill"} & set(got.calls)
    elif extract_mode == "direct":
        assert got.calls["extract"] == n_notes
    else:
        assert got.calls["select"] == n_notes and got.calls["fill"] == n_claims
    if mode == "learned":
        assert got.calls["update"] == n_claims - len(want.memory)  # every write at an existing key
        assert got.calls["compare"] == sum(d.action in ("supersede", "contested") for d in want.decisions)
    else:
        assert got.calls["update"] == 0  # hybrid: rules decide; compare only judges exact ties


class Batches:
    """The oracle, with each batch it is sent counted per adapter."""

    def __init__(self, backend: SymbolicBackend) -> None:
        self.backend = backend
        self.batches: list[Counter[str]] = []

    def complete(self, requests: list[Request]) -> list[Completion]:
        self.batches.append(Counter(r.adapter for r in requests))
        return self.backend.complete(requests)


def test_a_replay_asks_the_kth_write_of_every_key_in_one_batch(episode) -> None:
    """The decisions are asked a round per write index of a key, each request once, and the
    memory is the one that asking one write at a time gives (the oracle test above)."""
    backend = Batches(SymbolicBackend.for_episode(episode))
    got = replay(episode, "learned", LearnedOperators(backend), extract_mode=None)
    writes = Counter(c.key for s in episode.sessions for c in s.memory_claims())
    rounds = max(writes.values()) - 1  # a key's first claim is added without asking
    updates = [b["update"] for b in backend.batches if b["update"]]
    assert sum(updates) == got.calls["update"] == sum(writes.values()) - len(writes)
    assert len(updates) == rounds < got.calls["update"]
    assert sum(b["compare"] for b in backend.batches) == got.calls["compare"] > 0
    assert state(got.memory) == state(replay(episode, "symbolic").memory)


def test_replays_of_two_trajectories_are_asked_in_the_same_rounds(episode, export_dir: Path) -> None:
    """Asked ahead together, two replays take as many rounds as the longer one; writing them
    afterwards asks the backend nothing more and ends where the rules end."""
    episodes = [episode, load_trajectory("patch-guardrails", shipped(export_dir))]
    oracle = SymbolicBackend.for_episode(episodes[0])
    oracle.merge(SymbolicBackend.for_episode(episodes[1]))
    backend = Batches(oracle)
    ops = LearnedOperators(backend)
    streams = [learned_writes(e, ops, None)[0] for e in episodes]
    seconds = ask_ahead(ops, streams)
    longest = max(n for stream in streams for n in Counter(c.key for c in stream).values())
    assert len([b for b in backend.batches if b["update"]]) == longest - 1
    assert len(seconds) == 2 and min(seconds) > 0
    asked = len(backend.batches)
    for e in episodes:
        assert state(replay(e, "learned", ops, None).memory) == state(replay(e, "symbolic").memory)
    assert len(backend.batches) == asked


class Garbage:
    """A backend whose every answer is malformed JSON: the engine must keep going and drop nothing."""

    def complete(self, requests: list[Request]) -> list[Completion]:
        return [Completion('{"action": "sup', 0.0, 3) for _ in requests]


def test_unparsable_answers_are_counted_and_drop_nothing(episode) -> None:
    ops = LearnedOperators(Garbage())
    got = replay(episode, "learned", ops)
    assert got.failures["extract"] == len(episode.sessions)
    assert len(got.memory) == 0 and not got.decisions
    # With gold claims fed in, unparsable update answers keep every claim (as contested).
    gold = replay(episode, "learned", ops, extract_mode=None)
    claims = [c for s in episode.sessions for c in s.memory_claims()]
    held = sum(len(e.items) for e in gold.memory.entries())
    assert held == len({(c.key, c.norm_value) for c in claims})
    assert gold.failures["update"] == sum(d.action != "add" for d in gold.decisions) > 0
    assert {d.action for d in gold.decisions} <= {"add", "merge", "contested"}  # never a supersede


def test_symbolic_backend_refuses_unknown_prompts(episode) -> None:
    backend = SymbolicBackend.for_episode(episode)
    with pytest.raises(BackendError, match="no answer registered"):
        backend.complete([Request("compare", [{"role": "user", "content": "?"}], None, 8)])
