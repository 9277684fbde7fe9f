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

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from core.sessions import Episode
from memory.claims import Claim
from memory.compare import Winner
from memory.state import Action, Decision, Entry, StateMemory
from operators.learned import Extraction, ExtractMode, LearnedOperators
from operators.schemas import CompareOutput, UpdateOutput

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
        if action not in ("supersede", "contested"):
            return action, f"learned update: {action}"
        assert entry.current is not None
        versus = self.ops.compare([(entry.current.as_claim(), claim)])[0]
        if not isinstance(versus.output, CompareOutput):
            self.failures["compare"] += 1
            return "contested", f"learned update: {action}; learned compare unparsable ({versus.error})"
        winner = versus.output.winner
        final: Action = "supersede" if winner == "second" else "contested"
        return final, f"learned update: {action}; learned compare: {versus.output.relation}, winner {winner}"


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
    sessions = episode.sessions
    failures: Counter[str] = Counter()
    mem = memory_for(mode, ops, failures)
    before = Counter(ops.calls) if ops else Counter()
    extractions: list[Extraction] = []
    if mode == "symbolic":
        decisions = [step.decision for step in episode.trace(mem)]
    else:
        assert ops is not None
        if extract_mode is None:
            claims = [s.memory_claims() for s in sessions]
        else:
            extractions = ops.extract([(s.note(), episode.catalog) for s in sessions], extract_mode)
            for e in extractions:
                for call in e.calls:
                    if call.error:
                        failures[call.step] += 1
            claims = [[c.to_claim(s) for c in e.claims] for s, e in zip(sessions, extractions, strict=True)]
        decisions = [mem.apply(c) for batch in claims for c in batch]
    calls = Counter(ops.calls) - before if ops else Counter()
    return Replay(mem, decisions, extractions, calls, failures)
