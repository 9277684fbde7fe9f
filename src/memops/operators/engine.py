"""The engine with its operators injected: ``symbolic``, ``learned`` or ``hybrid``.

- ``symbolic``: gold extraction and the update rule; the reference.
- ``learned``: learned extraction feeds the claims. At a key that already has an entry, the
  learned ``update`` operator decides between add, merge and a conflict; on a conflict the
  learned ``compare`` operator names the winner (``second`` supersedes, anything else keeps
  the claim contested). Both answers are recorded in the decision's reason.
- ``hybrid``: learned extraction, the update rule, and learned ``compare`` only as the judge
  of exact ties (equal evidence score and equal time), the one place the rule cannot decide.

``learned`` with gold extraction (``extract_mode=None``) isolates the learned conflict logic:
what the decisions alone do to the memory.

An unparsable answer never stops a replay: it is counted, and the engine takes the choice
that drops nothing (the claim is kept as contested; a tie keeps the current value).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from tqdm import tqdm

from memops.core.sessions import Episode
from memops.memory.claims import Claim, Key
from memops.memory.compare import Winner
from memops.memory.state import Action, Decision, Entry, StateMemory
from memops.operators.learned import Extraction, ExtractMode, LearnedOperators
from memops.operators.registry import UPDATE
from memops.operators.schemas import CompareOutput, UpdateOutput

Mode = Literal["symbolic", "learned", "hybrid"]
MODES: tuple[Mode, ...] = ("symbolic", "learned", "hybrid")


@dataclass
class LearnedJudge:
    """The tie judge of the hybrid engine: learned compare on (current, incoming)."""

    ops: LearnedOperators
    failures: Counter[str]

    def __call__(self, current: Claim, incoming: Claim) -> Winner:
        outcome = self.ops.compare([(current, incoming)])[0]
        if not isinstance(outcome.output, CompareOutput):
            self.failures["compare"] += 1
            return "none"
        return outcome.output.winner


@dataclass
class LearnedDecide:
    """The learned engine's write step: update picks the action, compare settles conflicts."""

    ops: LearnedOperators
    failures: Counter[str]

    def __call__(self, entry: Entry, claim: Claim) -> tuple[Action, str]:
        update = self.ops.update([(entry, claim)])[0]
        if not isinstance(update.output, UpdateOutput):
            self.failures["update"] += 1
            return "contested", f"learned update unparsable ({update.error})"
        action = update.output.action
        if not _settled_by_compare(update.output):
            return action, f"learned update: {action}"
        assert entry.current is not None
        versus = self.ops.compare([(entry.current.as_claim(), claim)])[0]
        if not isinstance(versus.output, CompareOutput):
            self.failures["compare"] += 1
            return "contested", f"learned update: {action}; learned compare unparsable ({versus.error})"
        winner = versus.output.winner
        final: Action = "supersede" if winner == "second" else "contested"
        return final, f"learned update: {action}; learned compare: {versus.output.relation}, winner {winner}"

    def ask(self, writes: Sequence[tuple[Entry, Claim]]) -> None:
        """Ask what a call on each (entry, claim) would ask, in one update batch and one compare
        batch, so that those calls are answered from ``ops.answers``."""
        updates = self.ops.update(writes)
        self.ops.compare(
            [
                (entry.current.as_claim(), claim)
                for (entry, claim), u in zip(writes, updates, strict=True)
                if isinstance(u.output, UpdateOutput) and _settled_by_compare(u.output) and entry.current
            ]
        )


def _settled_by_compare(update: UpdateOutput) -> bool:
    """An update that supersedes or contests the current value leaves the winner to compare."""
    return update.action in ("supersede", "contested")


def ask_ahead(
    ops: LearnedOperators, streams: Sequence[Sequence[Claim]], progress: bool = False
) -> list[float]:
    """Ask the learned decisions that writing each stream of claims in order will ask, a round
    at a time, and return each stream's share of the seconds spent.

    A write reads and changes only its own key's entry, so the entry the k-th claim of a key
    meets depends on that key's earlier claims alone. Round k asks, in one batch, the k-th write
    of every key of every stream (a replay's writes, each on a scratch memory that applies
    them), and its seconds are shared by the streams in proportion to the updates each asked
    that ``ops.answers`` did not hold yet (by the writes, if it held them all).
    Writing the claims afterwards asks the same requests, answered from ``ops.answers``. Asked
    one write at a time, every request was a batch of one: a decoding step of one row on
    ``hf``, one request in flight on a vLLM server."""
    scratch = LearnedDecide(ops, Counter())
    runs: list[tuple[StateMemory, dict[Key, deque[Claim]]]] = []
    for stream in streams:
        queues: dict[Key, deque[Claim]] = {}
        for claim in stream:
            queues.setdefault(claim.key, deque()).append(claim)
        runs.append((StateMemory(decide=scratch), queues))
    seconds = [0.0] * len(runs)
    rounds = max((len(q) for _, queues in runs for q in queues.values()), default=0)
    for _ in tqdm(range(rounds), desc="decisions asked ahead", disable=not progress or not rounds):
        heads = [[queue.popleft() for queue in queues.values() if queue] for _, queues in runs]
        writes = [
            [(entry, c) for c in claims if (entry := memory.entry(c.key))]
            for (memory, _), claims in zip(runs, heads, strict=True)
        ]
        new = [ops.unanswered(UPDATE, stream) for stream in writes]
        weights = new if any(new) else [len(stream) for stream in writes]
        began = time.perf_counter()
        scratch.ask([w for stream in writes for w in stream])
        share = (time.perf_counter() - began) / max(sum(weights), 1)
        for i, ((memory, _), claims) in enumerate(zip(runs, heads, strict=True)):
            seconds[i] += share * weights[i]
            for claim in claims:
                memory.apply(claim)
    return seconds


def learned_writes(
    episode: Episode, ops: LearnedOperators, extract_mode: ExtractMode | None
) -> tuple[list[Claim], list[Extraction], Counter[str]]:
    """The claims a learned replay writes, in order: the sessions' gold claims
    (``extract_mode=None``) or the extracted ones, with the extractions and the steps whose
    calls failed."""
    sessions, failures = episode.sessions, Counter[str]()
    if extract_mode is None:
        return [c for s in sessions for c in s.memory_claims()], [], failures
    extractions = ops.extract([(s.note(), episode.catalog) for s in sessions], extract_mode)
    failures.update(call.step for e in extractions for call in e.calls if call.error)
    claims = [c.to_claim(s) for s, e in zip(sessions, extractions, strict=True) for c in e.claims]
    return claims, extractions, failures


@dataclass
class Replay:
    """A replayed episode: the final memory, every decision and what the operators cost."""

    memory: StateMemory
    decisions: list[Decision]
    extractions: list[Extraction] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)


def memory_for(mode: Mode, ops: LearnedOperators | None, failures: Counter[str]) -> StateMemory:
    if mode == "symbolic":
        return StateMemory()
    if ops is None:
        raise ValueError(f"engine={mode} needs learned operators (a backend)")
    if mode == "learned":
        return StateMemory(decide=LearnedDecide(ops, failures))
    return StateMemory(judge=LearnedJudge(ops, failures))


def replay(
    episode: Episode,
    mode: Mode = "symbolic",
    ops: LearnedOperators | None = None,
    extract_mode: ExtractMode | None = "direct",
) -> Replay:
    """Replay the episode's sessions in order through the engine; with ``extract_mode=None``
    the sessions' gold claims are written instead of extracted ones."""
    failures: Counter[str] = Counter()
    mem = memory_for(mode, ops, failures)
    before = Counter(ops.calls) if ops else Counter()
    extractions: list[Extraction] = []
    if mode == "symbolic":
        decisions = [step.decision for step in episode.trace(mem)]
    else:
        assert ops is not None
        writes, extractions, failed = learned_writes(episode, ops, extract_mode)
        failures.update(failed)
        if isinstance(mem.decide, LearnedDecide):
            asked = Counter(ops.calls)
            ask_ahead(ops, [writes])
            before += Counter(ops.calls) - asked  # the writes below count each call once
        decisions = [mem.apply(c) for c in writes]
    calls = Counter(ops.calls) - before if ops else Counter()
    return Replay(mem, decisions, extractions, calls, failures)
