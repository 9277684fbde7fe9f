"""Synthetic scenarios: determinism, coverage of families and query types, readable notes."""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter

import pytest

from memops.core.sessions import QUERY_TYPES, Episode
from memops.data.scenarios.catalog import SLOTS, SYNTHETIC_CATALOG
from memops.data.scenarios.generate import FAMILIES, scenario, scenarios
from memops.data.scenarios.phrasing import TAILS, TEMPLATES, paraphrase
from memops.memory import EVIDENCE_TYPES, Claim, StateMemory, norm
from memops.memory.reader import answer


def test_catalog_has_enough_pairs_with_values() -> None:
    assert len(SYNTHETIC_CATALOG.entries) >= 30
    assert len(set(SYNTHETIC_CATALOG.pairs())) == len(SYNTHETIC_CATALOG.entries)
    assert all(len(s.values) >= 3 for s in SLOTS)


def test_each_scenario_lists_its_own_catalog_of_a_trajectorys_size() -> None:
    """A scenario's catalog holds every pair its notes claim, their entities' other slots as near
    misses, and a few unrelated pairs: 9 to 11 in all, drawn and ordered per scenario, so no
    adapter can learn one list by heart."""
    episodes = scenarios(seed=0, per_family=10, noisy_per_family=2, noise=2)
    for e in episodes:
        pairs = e.catalog.pairs()
        assert 9 <= len(pairs) <= 11 and len(set(pairs)) == len(pairs)
        claimed = {f"{c.entity}.{c.slot}" for s in e.sessions for c in s.claims}
        assert claimed <= set(pairs)
        entities = {p.split(".")[0] for p in claimed}
        assert sum(p.split(".")[0] not in entities for p in pairs) >= 2
        assert set(pairs) - claimed  # something to tell the claimed pairs from
    assert len({tuple(e.catalog.pairs()) for e in episodes}) == len(episodes)
    assert len({p for e in episodes for p in e.catalog.pairs()}) == len(SYNTHETIC_CATALOG.entries)


def test_at_least_eight_templates_per_evidence_type() -> None:
    assert set(TEMPLATES) == set(EVIDENCE_TYPES)
    assert all(len(set(t)) >= 8 for t in TEMPLATES.values())


def test_same_seed_same_scenarios_and_other_seed_differs() -> None:
    a = scenarios(seed=7, per_family=3, noisy_per_family=1, noise=2)
    b = scenarios(seed=7, per_family=3, noisy_per_family=1, noise=2)
    c = scenarios(seed=8, per_family=3, noisy_per_family=1, noise=2)
    assert [e.model_dump_json() for e in a] == [e.model_dump_json() for e in b]
    assert [e.model_dump_json() for e in a] != [e.model_dump_json() for e in c]


def test_a_scenario_does_not_depend_on_its_neighbours() -> None:
    alone = scenario("incident-timeline", 5, seed=3)
    among = scenarios(seed=3, per_family=6, noisy_per_family=0, noise=0)
    assert alone in among


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("noise", [0, 3])
def test_every_scenario_answers_all_five_query_types(family: str, noise: int) -> None:
    for index in range(8):
        episode = scenario(family, index, seed=0, noise=noise)
        assert {q.type for q in episode.queries} == set(QUERY_TYPES)
        mem = episode.replay()
        for q in episode.queries:
            got = answer(mem, q.target.key, q.target.ask, q.target.at)
            assert q.accepts(got), (q.id, got, q.required, q.forbidden)


def test_notes_state_their_gold_values_mostly_in_other_words_and_keep_their_cues() -> None:
    """The gold value keeps the catalog's wording; a note quotes it or paraphrases it, changing
    a few tokens and keeping most, as real commit notes do."""
    verbatim, overlap = 0, []
    for episode in scenarios(seed=1, per_family=4, noisy_per_family=2, noise=3):
        for session in episode.sessions:
            text = set(re.findall(r"\w+", norm(session.text)))
            for claim in session.claims:
                words = re.findall(r"\w+", norm(claim.value))
                verbatim += claim.value in session.text
                overlap.append(sum(w in text for w in words) / len(words))
                assert overlap[-1] >= 0.3, (claim.value, session.text)
                if claim.evidence_type in ("code-change", "incident-hotfix"):
                    assert session.commit and session.commit in session.text
                if claim.branch != "main":
                    assert claim.branch in session.text
    assert 0.05 < verbatim / len(overlap) < 0.4
    assert 0.7 < sum(overlap) / len(overlap) < 0.95


def test_about_half_the_claim_sentences_go_on_past_their_value() -> None:
    """A tail follows the value's own words (and the scope's), so the value ends before the
    sentence does; a tail names no slot, so it states nothing."""
    nouns = {norm(s.noun) for s in SLOTS}
    tailed = claims = 0
    for episode in scenarios(seed=1, per_family=4, noisy_per_family=2, noise=3):
        for session in episode.sessions:
            for wording in session.stated:
                claims += 1
                after = session.text[session.text.index(wording) + len(wording) :]
                tailed += any(after.split(".")[0].endswith(f", {t}") for t in TAILS)
    assert all(not any(n in norm(t) for n in nouns) for t in TAILS)
    assert 0.4 < tailed / claims < 0.6


def test_paraphrase_rewrites_tokens_in_place_and_is_seeded() -> None:
    value = "up to 5 retries per delivery"
    said = {paraphrase(random.Random(i), value) for i in range(20)}
    assert value not in said and len(said) > 3
    assert paraphrase(random.Random(3), value) == paraphrase(random.Random(3), value)


def test_notes_are_dated_in_mixed_offsets_and_recency_is_the_instant() -> None:
    """Sessions follow each other in time while their offsets change, so the later note's
    timestamp string can sort first; the engine must (and does) order by the instant."""
    episodes = scenarios(seed=0, per_family=6, noisy_per_family=0, noise=0)
    inverted = 0
    for episode in episodes:
        times = [s.at for s in episode.sessions]
        assert len({t.utcoffset() for t in times}) >= 2 or len(times) < 4
        assert all(a < b for a, b in itertools.pairwise(times)), episode.id
        inverted += sum(a.isoformat() > b.isoformat() for a, b in itertools.pairwise(times))
    assert inverted > 0
    earlier = Claim(
        entity="a", slot="b", value="x", at="2025-03-01T10:00:00+01:00", evidence={"type": "human-note"}
    )
    later = Claim(
        entity="a", slot="b", value="y", at="2025-03-01T02:30:00-08:00", evidence={"type": "human-note"}
    )
    assert later.at.isoformat() < earlier.at.isoformat() and later.at > earlier.at
    mem = StateMemory()
    mem.apply(earlier)
    assert mem.apply(later).action == "supersede"


def test_unrelated_pairs_are_mostly_near_misses() -> None:
    """A scenario's slots come from two or three entities, so two keys that differ often share
    their entity or a word of their slot name (``retry`` and ``retry_backoff``), and the first
    token does not tell them apart. (In the five trajectories: 27% to 100% of key pairs.)"""
    near = total = 0
    for episode in scenarios(seed=0, per_family=10, noisy_per_family=0, noise=0):
        keys = {(c.entity, c.slot) for s in episode.sessions for c in s.claims}
        for a in keys:
            for b in keys:
                if a < b:
                    total += 1
                    near += a[0] == b[0] or bool(set(a[1].split("_")) & set(b[1].split("_")))
    assert near / total > 0.4


def test_families_shape_the_history() -> None:
    def actions(e: Episode) -> Counter[str]:
        mem = StateMemory()
        return Counter(mem.apply(c).action for s in e.sessions for c in s.memory_claims())

    incident = actions(scenario("incident-timeline", 0, seed=0))
    assert incident["supersede"] >= 3  # upgrade, rollback, restore
    scoped = scenario("scope-divergence", 0, seed=0)
    envs = {c.env for s in scoped.sessions for c in s.claims}
    assert {"production", "staging", "preview"} <= envs
    noisy = scenario("authority-overwrite", 0, seed=0, noise=3)
    plain = scenario("authority-overwrite", 0, seed=0)
    assert len(noisy.sessions) > len(plain.sessions)
    assert sum(len(s.text) for s in noisy.sessions) > 1.5 * sum(len(s.text) for s in plain.sessions)


def test_some_notes_are_chatter_with_empty_gold() -> None:
    episodes = scenarios(seed=0, per_family=10, noisy_per_family=3, noise=3)
    empty = [s for e in episodes for s in e.sessions if not s.claims]
    assert empty
    catalog_values = {norm(v) for slot in SLOTS for v in slot.values}
    assert all(not any(v in norm(s.text) for v in catalog_values if len(v) > 4) for s in empty)


def test_episode_json_round_trip() -> None:
    episode = scenario("scope-divergence", 2, seed=0, noise=1)
    assert Episode.model_validate_json(episode.model_dump_json()) == episode
