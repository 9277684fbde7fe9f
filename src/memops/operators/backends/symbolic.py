"""The symbolic operators behind the text interface of a backend, so the learned pipeline
(prompts, parsing, scoring) can be run end to end with known-perfect answers: any loss there is
a plumbing bug, not a model error."""

from __future__ import annotations

import time
from collections.abc import Sequence

from memops.core.records import Catalog, Note
from memops.core.sessions import Episode
from memops.operators.backends import BackendError, Completion, Messages, Odds, Probe, Request
from memops.operators.prompts import (
    compare_messages,
    extract_messages,
    fill_messages,
    right_answers,
    select_messages,
    update_messages,
)
from memops.operators.schemas import ExtractOutput, stage_answers
from memops.operators.symbolic import prompt_key, symbolic_compare, symbolic_update


class SymbolicBackend:
    """An oracle behind the backend interface: it knows the gold answer of registered prompts.

    Not a model: it answers only prompts it was given answers for, and raises on any other,
    so a test that uses it cannot silently score a prompt it never saw.
    """

    def __init__(self) -> None:
        self._answers: dict[str, str] = {}
        self._certain: dict[str, set[str]] = {}
        """Per probed prompt, the options that are right (a probe's answer is read, not given)."""

    def merge(self, other: SymbolicBackend) -> None:
        self._answers.update(other._answers)
        self._certain.update(other._certain)

    def remember(self, messages: Messages, answer: str) -> None:
        self._answers[prompt_key(messages)] = answer

    def remember_suite(self) -> None:
        """The rules' answer to every case of the contract suite (``operators.contract``)."""
        from memops.operators.contract import suite
        from memops.operators.registry import DECISIONS

        for op in DECISIONS:
            for part in ("validation", "test"):
                for case in suite(op, part):
                    self.remember(case["prompt"], case["completion"][0]["content"])

    def remember_extraction(self, note: Note, catalog: Catalog, gold: ExtractOutput) -> None:
        """Register the two-stage prompts of a note: the gold pairs (listed, and each stated
        pair's one-pair answer as certain when the list is read), then each pair's claim."""
        selection, fills = stage_answers(note, catalog, gold.claims)
        select = select_messages(note, catalog)
        self.remember(select, selection.model_dump_json())
        self._certain[prompt_key(select)] = set(right_answers(selection.pairs))
        for pair, claim in zip(selection.pairs, fills, strict=True):
            self.remember(fill_messages(note, catalog, pair), claim.model_dump_json())

    @classmethod
    def for_episode(cls, episode: Episode) -> SymbolicBackend:
        """Answers for every prompt a replay of ``episode`` asks when each answer is the rule's.

        Extraction answers are the gold claims (direct and two-stage); update and compare
        answers are registered along the gold replay, at the entry each claim meets.
        """
        backend = cls()
        for session in episode.sessions:
            gold = ExtractOutput(claims=list(session.claims))
            backend.remember(extract_messages(session.note(), episode.catalog), gold.model_dump_json())
            backend.remember_extraction(session.note(), episode.catalog, gold)
        for _, claim, entry, _ in episode.trace():
            backend.remember(update_messages(entry, claim), symbolic_update(entry, claim).model_dump_json())
            if entry is not None and entry.current is not None:
                answer = symbolic_compare(entry.current.as_claim(), claim).model_dump_json()
                backend.remember(compare_messages(entry.current.as_claim(), claim), answer)
        return backend

    def _answer(self, adapter: str, messages: Messages) -> str:
        text = self._answers.get(prompt_key(messages))
        if text is None:
            raise BackendError(f"symbolic backend: no answer registered for this {adapter} prompt")
        return text

    def complete(self, requests: Sequence[Request]) -> list[Completion]:
        out = []
        for r in requests:
            began = time.perf_counter()
            text = self._answer(r.adapter, r.messages)
            out.append(Completion(text, time.perf_counter() - began, 0))
        return out

    def probe(self, probes: Sequence[Probe]) -> list[Odds]:
        """Certainty: each right option gets probability 1, every other 0 (the oracle knows all
        the stated pairs of a note at once, so these are not one distribution). A decision read
        rather than decoded is certain of the answer remembered for its prompt."""
        out = []
        for p in probes:
            began = time.perf_counter()
            key = prompt_key(p.messages)
            certain = self._certain.get(key) or ({self._answers[key]} if key in self._answers else None)
            if certain is None:
                raise BackendError(f"symbolic backend: no options registered for this {p.adapter} probe")
            out.append(Odds(tuple(float(o in certain) for o in p.options), time.perf_counter() - began))
        return out
