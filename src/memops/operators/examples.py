"""Supervised examples of each operator, from episodes: every label is what the symbolic
engine says. Extraction is labelled by the gold annotation; a decision operator's builder
only chooses its cases, and the operator's own rule answers them (``decision_examples``).
``operators.registry`` says which builder is whose.

An example is one chat (``prompt`` messages and a ``completion`` message, TRL's
conversational prompt-completion format) plus the ids needed to trace and to check it for
leakage: the sessions and commits it was built from.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from memops.core.sessions import Episode
from memops.memory import ENVS, Claim, Evidence
from memops.memory.evidence import EVIDENCE_TYPES, evidence_score
from memops.operators.prompts import Messages, completion, extract_messages, fill_messages, select_messages
from memops.operators.schemas import ExtractOutput, stage_answers

Example = dict[str, Any]
COMPARE_LABELS: tuple[str, ...] = (
    "unrelated/none",
    "different_scope/none",
    "equivalent/none",
    "conflicting/first",
    "conflicting/second",
    "conflicting/none",
)


def example_id(op: str, episode_id: str, n: int) -> str:
    """The id of an episode's ``n``-th example of one operator."""
    return f"{op}/{episode_id}/{n:04d}"


def _example(
    op: str,
    episode: Episode,
    n: int,
    label: str,
    prompt: list,
    answer: list,
    sessions: list[str],
    inputs: dict[str, Any],
) -> Example:
    """``inputs`` is the structured input behind the prompt (JSON text), so the symbolic
    operators can be run on held-out examples instead of having their labels copied."""
    commits = sorted({episode.commit_of[s] for s in set(sessions) if s in episode.commit_of})
    return {
        "id": example_id(op, episode.id, n),
        "op": op,
        "source": episode.source,
        "group": episode.id,
        "family": episode.family,
        "label": label,
        "prompt": prompt,
        "completion": answer,
        "sessions": sorted(set(sessions)),
        "commits": commits,
        "inputs": json.dumps(inputs, sort_keys=True, ensure_ascii=False),
    }


def extract_examples(episode: Episode) -> list[Example]:
    out = []
    for n, session in enumerate(episode.sessions):
        gold = ExtractOutput(claims=list(session.claims))
        label = f"{len(session.claims)} claims"
        prompt = extract_messages(session.note(), episode.catalog)
        inputs = {"session": session.id}
        out.append(_example("extract", episode, n, label, prompt, completion(gold), [session.id], inputs))
    return out


def stage_examples(episode: Episode) -> list[Example]:
    """The two-stage extractor's own calls, answered from the note's gold claims: per note, a
    stage-1 example (select the pairs; a scoring selection reads the same prompt) and a stage-2
    example per selected pair (fill its claim), with the prompts inference sends
    (``stage_answers`` says what a right answer is). A fill's value is the note's wording of it
    (``Session.grounded_claims``): copying from the note is the skill that transfers to a
    trajectory, whose gold values are a few of its note's words, where restoring a synthetic
    catalog's canonical phrasing does not."""
    out = []
    for n, session in enumerate(episode.sessions):
        note, catalog, ids = session.note(), episode.catalog, [session.id]
        selection, fills = stage_answers(note, catalog, session.grounded_claims())
        inputs = {"session": session.id, "stage": "select"}
        label = f"select {len(selection.pairs)}"
        select = _example(
            "extract", episode, n, label, select_messages(note, catalog), completion(selection), ids, inputs
        )
        out.append({**select, "id": f"{select['id']}/select"})
        for k, (pair, claim) in enumerate(zip(selection.pairs, fills, strict=True)):
            inputs = {"session": session.id, "stage": "fill", "pair": pair}
            prompt = fill_messages(note, catalog, pair)
            fill = _example("extract", episode, n, "fill", prompt, completion(claim), ids, inputs)
            out.append({**fill, "id": f"{fill['id']}/fill-{k}"})
    return out


@dataclass(frozen=True)
class Case:
    """One decision to label: the call's arguments, the JSON ``inputs`` they are rebuilt from,
    and the sessions they come from."""

    arguments: tuple[Any, ...]
    inputs: dict[str, Any]
    sessions: list[str]


def decision_examples(
    op: str,
    episode: Episode,
    cases: Sequence[Case],
    messages: Callable[..., Messages],
    rule: Callable[..., BaseModel],
) -> list[Example]:
    """A decision operator's examples: its prompt on each case, answered by its symbolic rule."""
    out = []
    for n, case in enumerate(cases):
        answer = rule(*case.arguments)
        prompt = messages(*case.arguments)
        out.append(
            _example(op, episode, n, answer.label, prompt, completion(answer), case.sessions, case.inputs)
        )
    return out


def update_cases(episode: Episode) -> list[Case]:
    """One case per engine decision, with the entry as it was just before it: its snapshot (the
    live items), so an example's size does not grow with the key's history."""
    out = []
    for session, claim, before, _ in episode.trace():
        entry = before.snapshot_dict() if before is not None else None
        inputs = {"entry": entry, "claim": claim.model_dump(mode="json")}
        out.append(Case((before, claim), inputs, [session.id]))
    return out


def _variant(claim: Claim, **changes: Any) -> Claim:
    data = claim.model_dump()
    data.update(changes)
    return Claim.model_validate(data)


def _evidence_with(rng: random.Random, relation: str, score: int) -> tuple[str, str | None]:
    """An evidence type and commit whose score is below, equal to or above ``score``."""
    options = [
        (t, c)
        for t in EVIDENCE_TYPES
        for c in (None, "0000000")
        if (relation == "<" and evidence_score(t, c) < score)
        or (relation == "=" and evidence_score(t, c) == score)
        or (relation == ">" and evidence_score(t, c) > score)
    ]
    return rng.choice(options) if options else ("", None)


def _pair(label: str, claims: list[Claim], rng: random.Random) -> tuple[Claim, Claim] | None:
    """A (first, second) pair whose symbolic comparison is ``label``; variants fill gaps."""
    first = rng.choice(claims)
    others = [
        c
        for c in claims
        if (c.entity, c.slot) == (first.entity, first.slot) and c.norm_value != first.norm_value
    ]
    other_value = (
        rng.choice(others).value
        if others
        else rng.choice([c.value for c in claims if c.norm_value != first.norm_value] or ["unset"])
    )
    if label == "unrelated/none":
        candidates = [c for c in claims if (c.entity, c.slot) != (first.entity, first.slot)]
        return (first, rng.choice(candidates)) if candidates else None
    if label == "different_scope/none":
        envs = [e for e in ENVS if e != first.env]
        if rng.random() < 0.5:
            return first, _variant(first, env=rng.choice(envs), value=rng.choice([first.value, other_value]))
        branch = "main" if first.branch != "main" else f"exp/{first.slot}-{rng.randrange(10)}"
        return first, _variant(first, branch=branch, value=other_value)
    if label == "equivalent/none":
        value = rng.choice(
            [
                first.value.lower(),
                first.value.upper(),
                f"{first.value}.",
                f'"{first.value}"',
                f" {first.value} ",
            ]
        )
        kind = rng.choice(EVIDENCE_TYPES)
        return first, _variant(
            first, value=value, evidence=Evidence(type=kind, source=f"{first.evidence.source}~eq")
        )
    relation = {"conflicting/first": "<", "conflicting/second": ">", "conflicting/none": "="}[label]
    kind, commit = _evidence_with(rng, relation, first.score)
    if not kind:  # no weaker/stronger evidence exists: decide by time at equal score instead
        kind, commit = first.evidence.type, first.evidence.commit
        delta = -1 if label == "conflicting/first" else 1
        at = first.at + timedelta(hours=delta * rng.randrange(1, 72))
    else:
        at = first.at if relation == "=" else first.at + timedelta(hours=rng.randrange(-72, 73))
    evidence = Evidence(
        type=kind, commit=commit and f"{rng.getrandbits(28):07x}", source=f"{first.evidence.source}~cf"
    )
    return first, _variant(first, value=other_value, evidence=evidence, at=at)


def compare_cases(episode: Episode, rng: random.Random, per_label: int) -> list[Case]:
    """Real contradictions met during replay, then sampled pairs so every label is well covered."""
    steps = list(episode.trace())
    pairs = [(s.decision.previous, s.claim) for s in steps if s.decision.previous is not None]
    claims = [s.claim for s in steps]
    for label in COMPARE_LABELS:
        for _ in range(per_label):
            pair = _pair(label, claims, rng)
            if pair is not None:
                pairs.append(pair)
    out = []
    for first, second in pairs:
        sources = [s for s in (first.evidence.source, second.evidence.source) if s]
        inputs = {"first": first.model_dump(mode="json"), "second": second.model_dump(mode="json")}
        out.append(Case((first, second), inputs, [s.split("~")[0] for s in sources]))
    return out
