"""The symbolic operators behind the text interface of a backend, so the learned pipeline
(prompts, parsing, scoring) can be run end to end with known-perfect answers: any loss there is
a plumbing bug, not a model error."""

from __future__ import annotations

import time
from collections.abc import Sequence

from core.records import Catalog, Note
from core.sessions import Episode
from operators.backends import BackendError, Completion, Messages, Request
from operators.prompts import (
    compare_messages,
    extract_messages,
    fill_messages,
    select_messages,
    update_messages,
)
from operators.schemas import ExtractOutput, stage_answers
from operators.symbolic import prompt_key, symbolic_compare, symbolic_update


class SymbolicBackend:
    """An oracle behind the backend interface: it knows the gold answer of registered prompts.

    Not a model: it answers only prompts it was given answers for, and raises on any other,
    so a test that uses it cannot silently score a prompt it never saw.
    """

    def __init__(self) -> None:
        self._answers: dict[str, str] = {}

    def merge(self, other: SymbolicBackend) -> None:
        self._answers.update(other._answers)

    def remember(self, messages: Messages, answer: str) -> None:
        self._answers[prompt_key(messages)] = answer

    def remember_extraction(self, note: Note, catalog: Catalog, gold: ExtractOutput) -> None:
        """Register the two-stage prompts of a note: the gold pairs, then each pair's claim."""
        selection, fills = stage_answers(note, catalog, gold.claims)
        self.remember(select_messages(note, catalog), selection.model_dump_json())
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

    def complete(self, requests: Sequence[Request]) -> list[Completion]:
        out = []
        for r in requests:
            began = time.perf_counter()
            text = self._answers.get(prompt_key(r.messages))
            if text is None:
                raise BackendError(f"symbolic backend: no answer registered for this {r.adapter} prompt")
            out.append(Completion(text, time.perf_counter() - began, 0))
        return out
