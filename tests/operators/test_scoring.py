"""Selection by scoring: every catalog pair scored by the probability that the stage-1 answer is
that pair alone (a probe of options of many tokens), divided by the adapter's prior after blank
notes, and the prior's weight placed on validation notes only."""

from __future__ import annotations

import json
import math
import random
import re
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from memops.core.models import model_config
from memops.core.records import Catalog, CatalogEntry, Note
from memops.data.trajectory import load_trajectory
from memops.eval.calibration import (
    MIX_WEIGHTS,
    PRIOR_WEIGHTS,
    READINGS,
    calibrate,
    reading_name,
    reciprocal_rank,
    selection_f1,
    validation_notes,
)
from memops.eval.scored import RecordsError
from memops.operators.backends import BackendError, Probe, parting
from memops.operators.backends.hf import HFBackend, prompt_text
from memops.operators.backends.prefixes import PACK_TOKENS, packs, read_continuations, shared_prefixes
from memops.operators.backends.symbolic import SymbolicBackend
from memops.operators.examples import stage_examples
from memops.operators.learned import (
    LearnedOperators,
    likeliest,
    mixed_scores,
    mixed_selection,
    overlap_scores,
    overlap_selection,
    pair_scores,
    standardised,
    word_overlap,
)
from memops.operators.prompts import (
    BLANKS,
    blank_notes,
    catalog_entries,
    catalog_pairs,
    extract_messages,
    prompt_note,
    select_messages,
    selection_answers,
)
from memops.operators.registry import STAGES_ADAPTER
from memops.operators.schemas import MAX_PAIRS
from tests.conftest import shipped

FOLD = "patch-guardrails"


@pytest.fixture(scope="module")
def episode(export_dir: Path):
    return load_trajectory(FOLD, shipped(export_dir))


@pytest.fixture(scope="module")
def bare(tiny_model: Path) -> HFBackend:
    return HFBackend.load(replace(model_config("tiny"), path=str(tiny_model)), {})


def test_the_scoring_selection_on_the_oracle_returns_the_gold_pairs(episode) -> None:
    ops = LearnedOperators(SymbolicBackend.for_episode(episode))
    notes = [(s.note(), episode.catalog) for s in episode.sessions]
    for session, picked in zip(episode.sessions, ops.score_pairs(notes), strict=True):
        gold = list(dict.fromkeys(c.pair for c in session.claims))[:MAX_PAIRS]
        assert sorted(picked.selected) == sorted(gold)
        assert set(picked.scores) == set(episode.catalog.pairs())
        [call] = picked.calls  # one read of the stage-1 prompt, answered with the selection
        assert call.messages == select_messages(session.note(), episode.catalog)
        assert json.loads(call.raw) == {"pairs": picked.selected}
    assert ops.calls["score"] == len(notes)


def test_the_overlap_selection_takes_the_pair_whose_words_the_note_uses() -> None:
    """Names split at ``_`` and descriptions count; the note's title and files count as the
    prompt shows them; a tie goes to the first pair in catalog order."""
    catalog = Catalog(
        name="t",
        entries=(
            CatalogEntry(
                entity="webhook_dispatch", slot="retry", description="whether failed deliveries retry"
            ),
            CatalogEntry(entity="webhook_dispatch", slot="signing", description="how payloads are signed"),
        ),
    )
    note = Note(id="n", at="2026-01-01T00:00:00+00:00", title="Sign webhook payloads", text="Now HMAC.")
    scores = overlap_scores(note, catalog)
    assert scores["webhook_dispatch.signing"] == pytest.approx(2 / 7)  # webhook, payloads
    assert scores["webhook_dispatch.retry"] == pytest.approx(1 / 6)  # webhook
    picked = overlap_selection(note, catalog)
    assert picked.selected == ["webhook_dispatch.signing"] and picked.scores == scores
    [call] = picked.calls
    assert call.messages == select_messages(note, catalog)
    assert json.loads(call.raw) == {"pairs": ["webhook_dispatch.signing"]}
    blank = note.model_copy(update={"title": "Misc", "text": "Nothing here."})
    assert overlap_selection(blank, catalog).selected == ["webhook_dispatch.retry"]


def test_the_overlap_mode_fills_its_one_pair_per_note_on_the_stage_adapter(episode) -> None:
    """Where the overlap picks a stated pair, the oracle's fill for it is the gold claim (it has
    none for a pair the note does not state)."""
    ops = LearnedOperators(SymbolicBackend.for_episode(episode))
    hits = [
        (s.note(), episode.catalog, s.claims)
        for s in episode.sessions
        if overlap_selection(s.note(), episode.catalog).selected[0] in {c.pair for c in s.claims}
    ]
    assert hits
    got = ops.extract([(n, c) for n, c, _ in hits], "two-stage-overlap")
    for (_, _, gold), extraction in zip(hits, got, strict=True):
        assert [c.step for c in extraction.calls] == ["overlap", "fill"]
        [claim] = extraction.claims
        assert claim.pair == extraction.selected[0]
        assert claim.model_dump() in [g.model_dump() for g in gold]
    assert ops.calls["fill"] == len(hits) and ops.calls["select"] == 0


def test_the_options_are_the_stage_1_answers_the_adapter_was_trained_on(episode) -> None:
    """A scored pair is read as the answer the stage examples write for a note stating it alone:
    the probe's options are those completions, byte for byte."""
    session = next(s for s in episode.sessions if len({c.pair for c in s.claims}) == 1)
    [select] = [
        ex for ex in stage_examples(episode) if ex["id"].endswith("/select") and session.id in ex["sessions"]
    ]
    assert select["completion"][0]["content"] in selection_answers(episode.catalog.pairs())
    assert selection_answers([]) == ('{"pairs":[]}',)


def test_the_catalog_is_read_back_from_a_prompt(episode) -> None:
    """A dataset's prompt gives back the catalog and the note it was written from: the overlap
    calibration reads off a validation row is the one inference reads off the note."""
    for session in episode.sessions:
        note, catalog = session.note(), episode.catalog
        prompt = extract_messages(note, catalog)
        assert catalog_pairs(prompt) == catalog.pairs()
        assert catalog_entries(prompt) == {e.pair: e.description for e in catalog.entries}
        assert word_overlap(prompt_note(prompt), catalog_entries(prompt)) == overlap_scores(note, catalog)


def test_a_mixed_score_leans_on_the_adapter_by_its_weight() -> None:
    """Both scores are standardised over the catalog, so neither wins by its scale: weight 1 keeps
    the adapter's best pair, 0 the rule's, and between them a pair both rate well beats one
    either rates best alone. One pair per note, the first on a tie, the empty answer out of play."""
    assert standardised([1.0, 2.0, 3.0]) == pytest.approx([-math.sqrt(1.5), 0.0, math.sqrt(1.5)])
    assert standardised([-4.0, -4.0]) == [0.0, 0.0]  # no spread, no say
    assert mixed_selection([], [0.0], {}, 0.5) == ([], [])  # an empty catalog has none to give
    pairs = ["a", "b", "c"]
    learned = [math.log(0.6), math.log(0.3), math.log(0.1), math.log(0.99)]  # then the empty answer
    overlap = {"a": 0.0, "b": 0.4, "c": 0.5}
    assert mixed_selection(pairs, learned, overlap, 1.0)[0] == ["a"]
    assert mixed_selection(pairs, learned, overlap, 0.0)[0] == ["c"]
    selected, mix = mixed_selection(pairs, learned, overlap, 0.5)
    assert selected == ["b"]
    assert mix == pytest.approx(mixed_scores(learned[:-1], [0.0, 0.4, 0.5], 0.5))
    assert mixed_selection(pairs, [0.0] * 4, {"a": 0.2, "b": 0.2, "c": 0.1}, 0.5)[0] == ["a"]
    assert mixed_scores([1.0, 1.0], [0.0, 1.0], 0.9) == pytest.approx([-0.1, 0.1])  # the adapter has no say


def test_the_mixed_mode_reads_as_the_scored_one_and_fills_its_one_pair(episode) -> None:
    """On the oracle (certain of each stated pair), weight 1 keeps a stated pair of every note;
    weight 0 keeps the overlap rule's pair; both fill it on the stage adapter. The notes are those
    whose overlap pair is stated: the oracle has no fill for any other."""
    hits = [
        s
        for s in episode.sessions
        if overlap_selection(s.note(), episode.catalog).selected[0] in {c.pair for c in s.claims}
    ]
    assert hits
    notes = [(s.note(), episode.catalog) for s in hits]
    for weight in (1.0, 0.0):
        ops = LearnedOperators(SymbolicBackend.for_episode(episode), mix_weight=weight)
        got = ops.extract(notes, "two-stage-mixed")
        for session, extraction in zip(hits, got, strict=True):
            note = session.note()
            [pair] = extraction.selected
            assert [c.step for c in extraction.calls][:1] == ["mix"]
            assert json.loads(extraction.calls[0].raw) == {"pairs": [pair]}
            assert set(extraction.scores) == set(episode.catalog.pairs())
            if weight:
                assert pair in {c.pair for c in session.claims}
                assert [c.pair for c in extraction.claims] == [pair]
            else:
                assert [pair] == overlap_selection(note, episode.catalog).selected
        assert ops.calls["score"] == len(notes) and ops.calls["select"] == 0


def float32(tiny_model: Path) -> HFBackend:
    """The same base in float32: NF4 matmuls of other shapes can round an activation the other
    way (one option in 18 moved by 4e-3 when packed), which says nothing of the packing."""
    return HFBackend.load(replace(model_config("tiny"), path=str(tiny_model), load_in_4bit=False), {})


@pytest.fixture(scope="module")
def unquantized(tiny_model: Path) -> HFBackend:
    return float32(tiny_model)


def test_a_shared_prefix_reads_what_a_full_forward_pass_reads(unquantized: HFBackend, episode) -> None:
    """Each note's option rows run its prefix once; every option's log-probability, over all its
    tokens, is that of running its row whole, whether the groups run whole side by side or
    from their prefixes' caches, and each note's rows form one group. The options
    are the stage-1 answers of one pair each: many tokens, parting inside the shared JSON."""
    import torch

    notes = [s.note() for s in episode.sessions[:2]]
    pairs = episode.catalog.pairs()
    options = selection_answers(pairs)[:-1]
    rows: list[list[int]] = []
    starts: list[int] = []
    for note in notes:
        text = prompt_text(unquantized.tokenizer, select_messages(note, episode.catalog))
        begun = [unquantized.tokenizer(text + o, add_special_tokens=False)["input_ids"] for o in options]
        rows += begun
        starts += [parting(begun, options)] * len(begun)
    assert min(len(row) - start for row, start in zip(rows, starts, strict=True)) > 1
    groups = shared_prefixes(rows, starts)
    assert sorted(sorted(members) for _, members in groups) == [
        list(range(len(pairs))),
        list(range(len(pairs), 2 * len(pairs))),
    ]
    # Both groups whole, a batch row each, in one pass; then each prefix run into a cache and
    # a small budget for the remainders: two or three a pass, so a group takes several passes.
    assert all(shared + sum(len(rows[i]) - shared for i in m) <= PACK_TOKENS for shared, m in groups)
    whole = read_continuations(unquantized.model, rows, starts)
    cached = read_continuations(unquantized.model, rows, starts, tokens=24, whole=0)
    with torch.inference_mode():
        for row, start, *got in zip(rows, starts, whole, cached, strict=True):
            logprobs = unquantized.model(input_ids=torch.tensor([row])).logits[0].float().log_softmax(-1)
            want = sum(logprobs[t - 1, row[t]].item() for t in range(start, len(row)))
            assert got == pytest.approx([want, want], abs=1e-4)
    odds = unquantized.probe([Probe("base", select_messages(n, episode.catalog), options) for n in notes])
    assert all(sum(o.probs) == pytest.approx(1.0) for o in odds)


def test_a_probe_runs_on_from_the_stem_stage_1_kept(tiny_model: Path, episode) -> None:
    """A scoring selection probes the stage-1 prompt that a generated selection of the same note
    already ran: the probe runs on from the stem that call kept (catalog and note), adds none
    of its own, and reads what a probe with no stem kept reads."""
    notes = [(s.note(), episode.catalog) for s in episode.sessions[:2]]
    kept, plain = float32(tiny_model), float32(tiny_model)
    plain.stems = None
    LearnedOperators(kept, adapters=False).select(notes)
    stems = len(kept.stems)
    options = selection_answers(episode.catalog.pairs())
    probes = [Probe("base", select_messages(n, c), options) for n, c in notes]
    for got, want in zip(kept.probe(probes), plain.probe(probes), strict=True):
        assert got.probs == pytest.approx(want.probs, abs=1e-5)
    assert len(kept.stems) == stems > 0


def test_packs_are_runs_within_the_budget() -> None:
    assert packs([5, 5, 5, 30, 1, 1], 10) == [range(0, 2), range(2, 3), range(3, 4), range(4, 6)]
    assert packs([], 10) == []


def test_options_a_probe_cannot_tell_apart_are_refused(bare: HFBackend, episode) -> None:
    messages = select_messages(episode.sessions[0].note(), episode.catalog)
    for alike in (("yes", "yes"), ("yes", "yes!")):
        with pytest.raises(BackendError, match="has no token of its own"):
            bare.probe([Probe("base", messages, alike)])


def test_a_probe_past_the_models_positions_fails_alone(bare: HFBackend, episode) -> None:
    at = episode.sessions[0].at
    long = Note(id="long", at=at, title="A very long note", text="word " * 5_000)
    answers = selection_answers(episode.catalog.pairs())
    probes = [
        Probe("base", select_messages(n, episode.catalog), answers)
        for n in (long, episode.sessions[0].note())
    ]
    too_long, fine = bare.probe(probes)
    assert too_long.refused and "exceed the model's 4096 positions" in too_long.refused
    assert fine.refused is None and len(fine.probs) == len(answers)


def test_a_score_divides_the_prior_out_by_its_weight() -> None:
    """A pair the adapter favours after any note loses to one this note raises from a low prior;
    weight 0 reads the probabilities as they are, and a probability of 0 stays finite."""
    probs, prior = (0.5, 0.3, 0.2), (0.6, 0.05, 0.35)  # two pairs, then the empty answer
    assert likeliest(["a", "b"], pair_scores(probs, prior, 0.0)) == ["a"]
    assert likeliest(["a", "b"], pair_scores(probs, prior, 1.0)) == ["b"]  # 0.3 / 0.05 beats 0.5 / 0.6
    assert pair_scores(probs, None, 0.7) == pytest.approx([math.log(p) for p in probs])
    assert all(math.isfinite(x) for x in pair_scores((0.0, 1.0, 0.0), (1.0, 0.0, 0.5), 1.0))


def test_the_likeliest_answer_keeps_ties_and_may_be_empty() -> None:
    assert likeliest(["a", "b", "c"], [0.0, -1.0, 0.0, -5.0]) == ["a", "c"]  # certain of two pairs
    assert likeliest(["a", "b"], [-3.0, -2.0, -1.0]) == []  # the empty answer weighs most
    assert likeliest(["a", "b"], [-1.0, -2.0, -1.0]) == ["a"]  # a pair tied with the empty answer stays
    assert likeliest([f"p{i}" for i in range(9)], [0.0] * 9 + [-1.0]) == [f"p{i}" for i in range(MAX_PAIRS)]
    assert likeliest(["a", "b"], [-3.0, -2.0, -1.0], none=False) == ["b"]  # a pair always
    assert likeliest([], [0.0], none=False) == []  # an empty catalog has none to give


def test_selection_f1_is_pooled_over_notes() -> None:
    precision, recall, f1 = selection_f1([["a"], [], ["b", "c"]], [{"a"}, {"d"}, {"b"}])
    assert (precision, recall) == (pytest.approx(2 / 3), pytest.approx(2 / 3)) and f1 == pytest.approx(2 / 3)
    assert selection_f1([[]], [set()]) == (0.0, 0.0, 0.0)


def test_a_blank_note_keeps_the_catalog_and_the_task(episode) -> None:
    """The prior's prompts differ from the note's only in the note, and are the same for every
    note of a catalog: the prior is read once per catalog."""
    first, second = (select_messages(s.note(), episode.catalog) for s in episode.sessions[:2])
    blanks = blank_notes(first)
    assert len(blanks) == len(BLANKS) and blanks == blank_notes(second)
    for blank, said in zip(blanks, BLANKS, strict=True):
        user = blank[-1]["content"]
        assert catalog_pairs(blank) == episode.catalog.pairs() and blank[:-1] == first[:-1]
        assert user.endswith(first[-1]["content"].rsplit("\n\n", 1)[1])
        assert f"Title: {said}\n" in user and "Commit: none" in user and episode.sessions[0].text not in user


def test_the_prior_is_read_once_per_catalog(unquantized: HFBackend, episode) -> None:
    """A weighted scoring selection reads each note and the catalog's blank notes, whatever the
    number of notes; its scores are the weighted log-probabilities, and the selection their
    likeliest answer."""
    notes = [(s.note(), episode.catalog) for s in episode.sessions[:3]]
    ops = LearnedOperators(unquantized, adapters=False, prior_weight=0.75)
    picked = ops.score_pairs(notes)
    assert len(ops.readings) == len(notes) + len(BLANKS) and ops.calls["prior"] == len(notes) * len(BLANKS)
    options = selection_answers(episode.catalog.pairs())
    blanks = unquantized.probe([Probe("base", m, options) for m in blank_notes(select_messages(*notes[0]))])
    prior = [sum(ps) / len(blanks) for ps in zip(*(o.probs for o in blanks), strict=True)]
    for (note, catalog), got in zip(notes, picked, strict=True):
        [odds] = unquantized.probe([Probe("base", select_messages(note, catalog), options)])
        want = pair_scores(odds.probs, prior, 0.75)
        assert list(got.scores.values()) == pytest.approx(want[:-1], abs=1e-4)
        assert got.selected == likeliest(catalog.pairs(), want)


def test_the_prior_weight_is_placed_on_validation_notes_without_touching_the_held_out_fold(
    tiny_model: Path, trained_adapters: Path, small_datasets: Path, tmp_path: Path
) -> None:
    """Calibrating the held-out fold's adapters reads its training fold's validation split: no
    note of the held-out trajectory is among those used, and a held-out test split replaced by
    garbage changes nothing (reading it would fail). The weight kept ranks the stated pairs
    highest, the smallest on a tie; the empty answer is in play where its F1 at that weight is
    at least the other's."""
    datasets = tmp_path / "datasets"
    shutil.copytree(small_datasets, datasets)
    backend = HFBackend.load(
        replace(model_config("tiny"), path=str(tiny_model)),
        {STAGES_ADAPTER: trained_adapters / STAGES_ADAPTER},
    )
    ops = LearnedOperators(backend)
    before = calibrate(ops, datasets, FOLD, seed=0, n=3)
    assert before.notes == 3 and len(before.ranked) == 3 and before.stated > 0
    assert set(before.f1) == {reading_name(*r) for r in READINGS}
    assert set(before.ranking) == {str(w) for w in PRIOR_WEIGHTS}
    assert all(0 < r <= 1 for r in before.ranking.values())
    top = max(before.ranking.values())
    assert before.prior_weight == next(w for w in PRIOR_WEIGHTS if before.ranking[str(w)] == top)
    with_none, without = (before.f1[reading_name(before.prior_weight, none)] for none in (True, False))
    assert before.select_none == (with_none >= without)
    assert set(before.mixing) == {str(w) for w in MIX_WEIGHTS} and max(MIX_WEIGHTS) == 1.0
    best = max(before.mixing.values())
    assert before.mix_weight == next(w for w in MIX_WEIGHTS if before.mixing[str(w)] == best)
    assert all(FOLD not in example for example in [*before.examples, *before.ranked])
    assert before.source == str(datasets / FOLD / "extract" / "validation.jsonl")
    for test_split in (datasets / FOLD).glob("*/test.jsonl"):
        test_split.write_text("not a record\n")
    assert calibrate(LearnedOperators(backend), datasets, FOLD, seed=0, n=3) == before


def test_a_reading_stopped_midway_resumes_from_its_reads_and_places_the_same(
    tiny_model: Path, trained_adapters: Path, small_datasets: Path, tmp_path: Path
) -> None:
    """The notes are read a batch at a time, each batch appended to the reads file; a run cut
    off after the first batch (its next line torn mid-write) reads only the notes left and places
    the reading an uninterrupted one places."""
    backend = HFBackend.load(
        replace(model_config("tiny"), path=str(tiny_model)),
        {STAGES_ADAPTER: trained_adapters / STAGES_ADAPTER},
    )
    whole = calibrate(LearnedOperators(backend), small_datasets, FOLD, seed=0, n=3)
    reads = tmp_path / "calibration" / "synthetic.reads.jsonl"
    ops = LearnedOperators(backend)
    assert calibrate(ops, small_datasets, FOLD, seed=0, n=3, reads=reads, batch=2) == whole
    lines = reads.read_text().splitlines(keepends=True)
    notes = ops.calls["calibrate"]
    assert len(lines) == notes > 2 and {json.loads(line)["id"] for line in lines} >= set(whole.examples)
    reads.write_text("".join(lines[:2]) + lines[2][:20])  # the second batch's first line, torn
    again = LearnedOperators(backend)
    assert calibrate(again, small_datasets, FOLD, seed=0, n=3, reads=reads, batch=2) == whole
    assert again.calls["calibrate"] == notes - 2
    ids = [json.loads(line)["id"] for line in reads.read_text().splitlines()]
    assert ids == [json.loads(line)["id"] for line in lines]  # the torn line gone, read anew
    with reads.open("a") as f:
        f.write('{"id": "extract/x/0001"}\n')
    with pytest.raises(
        RecordsError, match=rf"{re.escape(str(reads))}:{len(ids) + 1}: a note.s read lacks prior, probs"
    ):
        calibrate(again, small_datasets, FOLD, seed=0, n=3, reads=reads)


def test_a_reciprocal_rank_is_that_of_the_best_stated_pair() -> None:
    """The empty answer's score does not rank, a tie counts in the stated pair's favour, and a
    note whose pairs the catalog lacks ranks nothing."""
    pairs = ["a.x", "b.x", "c.x"]
    assert reciprocal_rank(pairs, [0.5, 0.9, 0.1, 5.0], {"a.x"}) == 0.5
    assert reciprocal_rank(pairs, [0.5, 0.9, 0.1, 5.0], {"a.x", "b.x"}) == 1.0
    assert reciprocal_rank(pairs, [0.9, 0.9, 0.1, 0.0], {"b.x"}) == 1.0
    assert reciprocal_rank(pairs, [0.5, 0.9, 0.1, 0.0], {"c.x"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(pairs, [0.5, 0.9, 0.1, 0.0], {"d.x"}) == 0.0


def test_the_weight_is_placed_on_scenarios_and_the_empty_answer_on_real_notes(tmp_path: Path) -> None:
    """With ``real_validation`` the split holds real commit notes beside the scenarios': the
    weight is placed on scenario notes that state a pair (chatter ranks nothing), the empty
    answer on the real notes, as the notes it will be scored on are real; without them, both on
    the scenarios' (the empty answer on chatter too); without scenarios, both on the real ones."""
    split = tmp_path / "synthetic" / "extract" / "validation.jsonl"
    split.parent.mkdir(parents=True)

    def row(source: str, i: int) -> dict:
        claims = [] if source == "synthetic" and i % 3 == 0 else [{"entity": "e", "slot": f"s{i}"}]
        return {
            "id": f"{source}-{i}",
            "source": source,
            "completion": [{"content": json.dumps({"claims": claims})}],
        }

    def drawn(rows: list[dict], n: int) -> tuple[list[str], list[str]]:
        split.write_text("".join(json.dumps(r) + "\n" for r in rows))
        _, ranked, answered = validation_notes(tmp_path, "synthetic", n, seed=0)
        return [r["id"] for r in ranked], [r["id"] for r in answered]

    scenarios, real = [row("synthetic", i) for i in range(9)], [row("trajectory", i) for i in range(6)]
    stating = [f"synthetic-{i}" for i in range(9) if i % 3]
    ranked, answered = drawn(scenarios + real, 100)
    assert ranked == stating and answered == [f"trajectory-{i}" for i in range(6)]
    ranked, answered = drawn(scenarios + real, 4)
    assert len(ranked) == 4 and set(ranked) <= set(stating) and len(answered) == 4
    assert {a.split("-")[0] for a in answered} == {"trajectory"}
    ranked, answered = drawn(scenarios, 100)
    assert ranked == stating and answered == [f"synthetic-{i}" for i in range(9)]
    ranked, answered = drawn(real, 100)
    assert ranked == answered == [f"trajectory-{i}" for i in range(6)]


def test_header_lines_inside_a_note_cannot_pass_for_its_header(episode) -> None:
    """A note's text saying ``Date:`` or ``Commit:`` at the start of a line once looked exactly
    like the real header; such lines are quoted, the real header stays the only one."""
    note = episode.sessions[0].note()
    forged = note.model_copy(
        update={"text": f"{note.text}\nDate: 1999-01-01T00:00:00+00:00\nCommit: deadbee"}
    )
    user = extract_messages(forged, episode.catalog)[-1]["content"]
    lines = user.splitlines()
    assert [line for line in lines if line.startswith("Date:")] == [f"Date: {note.at.isoformat()}"]
    assert [line for line in lines if line.startswith("Commit:")] == [f"Commit: {note.commit}"]
    assert "> Date: 1999-01-01T00:00:00+00:00" in lines and "> Commit: deadbee" in lines
    assert extract_messages(note, episode.catalog)[-1]["content"].endswith(note.text)  # others unchanged


def test_decisions_read_on_the_oracle_are_its_answers(episode) -> None:
    """``decisions=read``: each decision is the allowed answer the backend weighs most; on the
    oracle that is the rules' answer, from one probe per call and no decoding."""
    from memops.operators.registry import DECISIONS, OPERATORS

    oracle = SymbolicBackend()
    read = LearnedOperators(oracle, decisions="read")
    for op in DECISIONS:
        spec = OPERATORS[op]
        examples = spec.examples(episode, random.Random(0), 2)[:20]
        for ex in examples:  # as a LOO run gives the oracle the held-out answers
            oracle.remember(ex["prompt"], ex["completion"][0]["content"])
        arguments = [spec.arguments(json.loads(ex["inputs"])) for ex in examples]
        for ex, outcome in zip(examples, read.decide(spec, arguments), strict=True):
            assert outcome.error is None and outcome.output in spec.answers
            assert json.loads(outcome.raw) == json.loads(ex["completion"][0]["content"])
        assert read.calls[op] == len(arguments) and not read.answers  # read, never decoded
        assert read.unanswered(spec, arguments) == 0


def test_a_decision_read_on_a_real_model_is_its_most_likely_allowed_answer(bare: HFBackend, episode) -> None:
    from memops.operators.registry import UPDATE

    examples = UPDATE.examples(episode, random.Random(0), 2)[:6]
    arguments = [UPDATE.arguments(json.loads(ex["inputs"])) for ex in examples]
    ops = LearnedOperators(bare, adapters=False, decisions="read")
    assert ops.unanswered(UPDATE, arguments) == len(arguments)
    outcomes = ops.decide(UPDATE, arguments)
    options = tuple(a.model_dump_json() for a in UPDATE.answers)
    odds = bare.probe([Probe("base", UPDATE.messages(*a), options) for a in arguments])
    for outcome, o in zip(outcomes, odds, strict=True):
        assert outcome.raw == options[max(range(len(options)), key=o.probs.__getitem__)]
    assert ops.unanswered(UPDATE, arguments) == 0


def test_a_contract_read_is_the_open_answer_whose_judgment_weighs_most(bare: HFBackend) -> None:
    """``decisions=contract`` on a real model: the same probe as ``read``, each answer the
    claims' fields leave open weighed by every answer that judges the values alike (all of
    ``conflicting/*`` for two values), so where the keys decide the answer is the rules'
    whatever the model weighs most."""
    from memops.operators.contract import suite
    from memops.operators.registry import COMPARE

    cases = suite("compare", "test")[::8]
    arguments = [c["arguments"] for c in cases]
    ops = LearnedOperators(bare, adapters=False, decisions="contract")
    options = tuple(a.model_dump_json() for a in COMPARE.answers)
    odds = bare.probe([Probe("base", COMPARE.messages(*a), options) for a in arguments])
    free = 0
    for case, outcome, o in zip(cases, ops.decide(COMPARE, arguments), odds, strict=True):
        left = [i for i, a in enumerate(COMPARE.answers) if a in COMPARE.open(*case["arguments"])]
        relation = {a.relation: 0.0 for a in COMPARE.answers}
        for a, p in zip(COMPARE.answers, o.probs, strict=True):
            relation[a.relation] += p
        assert outcome.raw == options[max(left, key=lambda i: relation[COMPARE.answers[i].relation])]
        free += max(range(len(options)), key=o.probs.__getitem__) not in left
        if case["region"] in ("unrelated", "other scope"):
            assert outcome.output.label == case["label"]
    assert free > 0  # the bare base's own likeliest answer breaks the contract somewhere


def test_calibrated_decisions_apply_the_adapters_offsets_and_the_bare_base_reads_without(episode) -> None:
    """``decisions=calibrated``: the argmax of ``scale * log p + offset``; a scale of 0 leaves the
    offsets alone to decide, so every update becomes the label they favour; the prompted base
    (no adapters) has no offsets and reads as ``decisions=read`` does."""
    from memops.operators.offsets import Offsets
    from memops.operators.registry import UPDATE

    oracle = SymbolicBackend()
    examples = UPDATE.examples(episode, random.Random(0), 2)[:12]
    for ex in examples:
        oracle.remember(ex["prompt"], ex["completion"][0]["content"])
    arguments = [UPDATE.arguments(json.loads(ex["inputs"])) for ex in examples]
    gold = [json.loads(ex["completion"][0]["content"])["action"] for ex in examples]
    assert len(set(gold)) > 1
    favour = Offsets(0.0, {"add": 0.0, "merge": 0.0, "supersede": 1.0, "contested": 0.0})
    ops = LearnedOperators(oracle, decisions="calibrated", calibrations={"update": favour})
    assert [o.output.action for o in ops.decide(UPDATE, arguments)] == ["supersede"] * len(gold)
    scaled = {"update": Offsets(1.0, favour.offsets)}
    kept = LearnedOperators(oracle, decisions="calibrated", calibrations=scaled)
    assert [o.output.action for o in kept.decide(UPDATE, arguments)] == gold  # certainty outweighs 1 nat
    bare = replace(ops, adapters=False, calls=Counter())
    assert [o.output.action for o in bare.decide(UPDATE, arguments)] == gold


def test_a_judged_update_is_the_rule_with_compares_reading_of_each_live_value(bare: HFBackend) -> None:
    """``decisions=judged``: update asks the compare adapter whether the claim's value is each
    live item's (the item as one claim, read within compare's contract) and the update rule does
    the rest, so every answer is one the rules leave open and a value the model reads as another
    changes the action the rule gives."""
    from memops.memory.state import rule
    from memops.operators.contract import suite
    from memops.operators.registry import COMPARE, UPDATE

    cases = [c for c in suite("update", "test") if c["region"] != "new key"][::6]
    arguments = [c["arguments"] for c in cases]
    ops = LearnedOperators(bare, adapters=False, decisions="judged")
    asked = [(item, (item.as_claim(), claim)) for entry, claim in arguments for item in entry.live.values()]
    assert ops.unanswered(UPDATE, arguments) == len(asked)
    options = tuple(a.model_dump_json() for a in COMPARE.answers)
    odds = bare.probe([Probe("base", COMPARE.messages(*pair), options) for _, pair in asked])
    one: dict[int, bool] = {}
    for (item, _), o in zip(asked, odds, strict=True):
        relation = {a.relation: 0.0 for a in COMPARE.answers}
        for a, p in zip(COMPARE.answers, o.probs, strict=True):
            relation[a.relation] += p
        one[id(item)] = relation["equivalent"] > relation["conflicting"]
    outcomes = ops.decide(UPDATE, arguments)
    moved = 0
    for (entry, claim), outcome in zip(arguments, outcomes, strict=True):
        assert outcome.output.action == rule(entry, claim, same=lambda item, _: one[id(item)])[0]
        assert outcome.output in UPDATE.open(entry, claim)
        moved += outcome.output != UPDATE.rule(entry, claim)
    assert moved > 0  # the bare base misreads some values, and the action follows its reading
    assert ops.unanswered(UPDATE, arguments) == 0
