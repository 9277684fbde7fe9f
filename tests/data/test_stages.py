"""Stage examples: the two-stage extractor's own calls, built from the gold claims with the
prompts inference sends, mixed into ``extract-stages`` without touching any other dataset."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from pydantic import ValidationError

from memops.core.sessions import Episode, Session
from memops.data.build import LeakageError, Pool, build_folds, build_pool, mix_stages
from memops.data.scenarios.generate import scenarios
from memops.data.trajectory import load_trajectory
from memops.memory import norm
from memops.operators.backends import Completion, Odds, Probe, Request
from memops.operators.examples import extract_examples, stage_examples
from memops.operators.learned import LearnedOperators
from memops.operators.prompts import right_answers
from memops.operators.registry import STAGES_ADAPTER
from tests.conftest import shipped
from tests.data.test_build import small


@pytest.fixture(scope="module")
def episodes(export_dir: Path) -> list[Episode]:
    return [load_trajectory("patch-guardrails", shipped(export_dir)), *scenarios(0, 1, 1, 2)]


class Recorder:
    """Test double for a model: it answers a prompt only if a stage example holds that exact
    prompt (with the example's completion) and records every request it is sent. A probe of a
    stage-1 prompt reads that example's selection: the one-pair answer of each pair it lists is
    certain (the empty answer when it lists none), every other option has probability 0."""

    def __init__(self, examples: list[dict]) -> None:
        self.answers = {json.dumps(e["prompt"]): e["completion"][0]["content"] for e in examples}
        self.requests: list[Request] = []
        self.probes: list[Probe] = []

    def complete(self, requests: list[Request]) -> list[Completion]:
        self.requests += requests
        return [Completion(self.answers[json.dumps(r.messages)], 0.0, 0) for r in requests]

    def probe(self, probes: list[Probe]) -> list[Odds]:
        self.probes += probes
        out = []
        for p in probes:
            certain = right_answers(json.loads(self.answers[json.dumps(p.messages)])["pairs"])
            out.append(Odds(tuple(float(o in certain) for o in p.options), 0.0))
        return out


def _stage(example: dict) -> str:
    return json.loads(example["inputs"])["stage"]


@pytest.mark.parametrize("mode", ["two-stage-trained", "two-stage-scored"])
def test_stage_examples_are_the_prompts_inference_sends(episodes: list[Episode], mode: str) -> None:
    for episode in episodes:
        examples = stage_examples(episode)
        recorder = Recorder(examples)
        notes = [(s.note(), episode.catalog) for s in episode.sessions]
        extractions = LearnedOperators(recorder).extract(notes, mode)
        generated = sorted(json.dumps(r.messages) for r in recorder.requests)
        probed = sorted(json.dumps(p.messages) for p in recorder.probes)
        # string equality: every example's prompt of the mode's stages was sent, and nothing else
        selects = {json.dumps(e["prompt"]) for e in examples if _stage(e) == "select"}
        fills = {json.dumps(e["prompt"]) for e in examples if _stage(e) == "fill"}
        if mode == "two-stage-trained":
            assert generated == sorted(selects | fills) and not probed
        else:  # stage 1 is read, once per note, from the prompt its examples hold
            assert probed == sorted(selects) and len(probed) == len(notes)
            assert generated == sorted(fills)
        assert {r.adapter for r in [*recorder.requests, *recorder.probes]} == {STAGES_ADAPTER}
        for session, extraction in zip(episode.sessions, extractions, strict=True):
            assert extraction.error is None
            got = [c.model_dump() for c in extraction.claims]
            want = [c.model_dump() for c in session.grounded_claims()]  # no pair claimed twice
            # a scoring selection ranks by probability: certain pairs tie and keep catalog order
            assert (
                sorted(got, key=str) == sorted(want, key=str) if mode == "two-stage-scored" else got == want
            )


def test_direct_trained_sends_the_direct_examples_prompts_to_the_stages_adapter(
    episodes: list[Episode],
) -> None:
    # The extract-stages data hold the direct examples (mix_stages), so the adapter has been
    # trained on exactly the prompt direct-trained sends it.
    for episode in episodes:
        direct = extract_examples(episode)
        recorder = Recorder(direct)
        notes = [(s.note(), episode.catalog) for s in episode.sessions]
        extractions = LearnedOperators(recorder).extract(notes, "direct-trained")
        sent = [json.dumps(r.messages) for r in recorder.requests]
        assert sent == [json.dumps(e["prompt"]) for e in direct]
        assert {r.adapter for r in recorder.requests} == {STAGES_ADAPTER} and not recorder.probes
        for session, extraction in zip(episode.sessions, extractions, strict=True):
            assert [c.model_dump() for c in extraction.claims] == [c.model_dump() for c in session.claims]


def test_the_stage2_completion_is_the_gold_claim_of_its_pair_as_the_note_words_it(
    episodes: list[Episode],
) -> None:
    for episode in episodes:
        sessions = {s.id: s for s in episode.sessions}
        fills = 0
        for example in stage_examples(episode):
            inputs = json.loads(example["inputs"])
            gold = sessions[inputs["session"]].grounded_claims()
            answer = json.loads(example["completion"][0]["content"])
            if inputs["stage"] == "select":
                assert answer == {"pairs": list(dict.fromkeys(f"{c.entity}.{c.slot}" for c in gold))}
                continue
            fills += 1
            (claim,) = [c for c in gold if f"{c.entity}.{c.slot}" == inputs["pair"]]
            assert answer == claim.model_dump(mode="json")
        assert fills == sum(len(s.claims) for s in episode.sessions)


def test_a_synthetic_fill_copies_its_value_from_the_note_where_the_engine_keeps_the_canonical_one(
    episodes: list[Episode],
) -> None:
    """Synthetic notes mostly paraphrase a catalog value; the fill is trained on the note's own
    words, as a trajectory's gold value is, and the gold claims the engine replays keep the
    catalog's value. A wording per claim, or none."""
    synthetic = [e for e in episodes if e.source == "synthetic"]
    paraphrased = 0
    for episode in synthetic:
        for session in episode.sessions:
            text = norm(session.text)
            for claim, grounded in zip(session.claims, session.grounded_claims(), strict=True):
                assert norm(grounded.value) in text
                assert grounded.model_dump(exclude={"value"}) == claim.model_dump(exclude={"value"})
                paraphrased += norm(claim.value) not in text
    assert paraphrased > 0
    session = next(s for s in synthetic[0].sessions if s.claims)
    with pytest.raises(ValidationError, match="stated: 2 wordings for 1 claims"):
        Session.model_validate({**session.model_dump(), "claims": session.claims[:1], "stated": ("a", "b")})


def test_the_mixing_ratio_keeps_that_many_stage_examples_per_direct_one(episodes: list[Episode]) -> None:
    episode = episodes[0]
    direct, stages = extract_examples(episode), stage_examples(episode)
    assert mix_stages(direct, stages, None, random.Random(0)) == direct + stages
    half = mix_stages(direct, stages, 0.5, random.Random(0))
    assert half[: len(direct)] == direct and len(half) == len(direct) + round(0.5 * len(direct))
    kept = half[len(direct) :]
    assert [stages.index(ex) for ex in kept] == sorted(stages.index(ex) for ex in kept)  # order kept
    assert mix_stages(direct, stages, 0.5, random.Random(0)) == half
    assert mix_stages(direct, stages, 0.0, random.Random(0)) == direct


def test_the_leakage_check_covers_stage_examples(episodes: list[Episode], tmp_path: Path) -> None:
    """A held-out note reaching training only through a stage prompt is caught."""
    held_out, synthetic = episodes[0], episodes[1:]
    pool: Pool = build_pool([*synthetic, held_out], seed=0, compare_per_label=1, progress=False, stages=True)
    leaked = next(ex for ex in stage_examples(held_out) if "/fill-" in ex["id"])
    # stripped of the ids that name its source, so that only the note's text can give it away
    disguised = {**leaked, "group": synthetic[0].id, "sessions": [], "commits": []}
    pool.by_episode[synthetic[0].id][STAGES_ADAPTER].append(disguised)
    with pytest.raises(LeakageError, match="quotes a held-out commit or note"):
        build_folds(synthetic, [held_out], pool, tmp_path, [held_out.id], 0.01, progress=False)


def test_stages_off_leaves_every_dataset_byte_identical(tmp_path: Path, export_dir: Path) -> None:
    from memops.data.pipeline import build

    off, on = tmp_path / "off", tmp_path / "on"
    build(small(off, export_dir))
    build(small(on, export_dir, extract_stages=True))
    files = sorted(p.relative_to(off) for p in off.rglob("*.jsonl"))
    assert files and all((off / f).read_bytes() == (on / f).read_bytes() for f in files)
    staged = sorted(p.relative_to(on) for p in on.rglob("*.jsonl") if p.relative_to(on) not in files)
    assert staged and all(f.parts[1] == STAGES_ADAPTER and f.name != "test.jsonl" for f in staged)
    card = json.loads((on / "card.json").read_text())
    assert "extract-stages" not in json.loads((off / "card.json").read_text())["ops"]
    stage = card["ops"][STAGES_ADAPTER]["stage"]
    assert stage["direct"] == stage["select"] == card["ops"]["extract"]["examples"]
    train = (on / "all" / STAGES_ADAPTER / "train.jsonl").read_text().splitlines()
    validation = (on / "all" / STAGES_ADAPTER / "validation.jsonl").read_text().splitlines()
    rows = [json.loads(json.loads(r)["inputs"]) for r in train + validation]  # ``all``: every source
    assert sum(r.get("stage") == "fill" for r in rows) == stage["fill"]
    assert sum(r.get("stage") == "select" for r in rows) == stage["select"]
    assert set(stage) == {"direct", "select", "fill"}  # stage 1 by scoring reads the select prompt


def test_a_request_asked_again_is_answered_without_the_model(episodes: list[Episode]) -> None:
    """The engine replay re-reads the notes its scoring already extracted; greedy decoding
    makes the first answer the answer, so the model is not asked twice."""
    episode = episodes[0]
    recorder = Recorder(stage_examples(episode))
    ops = LearnedOperators(recorder)
    notes = [(s.note(), episode.catalog) for s in episode.sessions]
    first = ops.extract(notes, "two-stage-trained")
    sent = len(recorder.requests)
    again = ops.extract(notes, "two-stage-trained")
    assert len(recorder.requests) == sent
    assert [e.claims for e in again] == [e.claims for e in first]
    assert ops.calls["select"] == 2 * len(notes)
