"""Metric definitions of docs/design.md §7 on hand-checked cases."""

from __future__ import annotations

import pytest

from memops.eval.metrics import (
    bootstrap_ci,
    by_wording,
    claim_f1,
    extraction_errors,
    mcnemar_exact,
    paired_bootstrap,
    token_f1,
    verbatim,
)


def c(entity="db", slot="engine", value="postgres 16", branch="main", env="production") -> dict:
    return {"entity": entity, "slot": slot, "value": value, "branch": branch, "env": env}


def test_claim_f1_levels() -> None:
    assert claim_f1([], []) == 1.0
    assert claim_f1([c()], []) == 0.0 and claim_f1([], [c()]) == 0.0
    assert claim_f1([c()], [c(value="MySQL")], "schema") == 1.0
    assert claim_f1([c()], [c(value="MySQL")], "value") == 0.0
    assert claim_f1([c()], [c(value="Postgres 16.")], "value") == 1.0  # normalised tokens
    assert claim_f1([c(), c(slot="orm")], [c(), c(env="staging")]) == pytest.approx(0.5)
    assert claim_f1([c()], [c(), c()]) == pytest.approx(2 / 3)  # a repeat matches once


def test_token_f1() -> None:
    assert token_f1("postgres 16", "postgres") == pytest.approx(2 / 3)
    assert token_f1("a b", "c d") == 0.0


def test_mcnemar_exact_matches_the_binomial() -> None:
    a = [True] * 6 + [False] * 1 + [True] * 3
    b = [False] * 6 + [True] * 1 + [True] * 3
    r = mcnemar_exact(a, b)
    assert (r["only_first"], r["only_second"]) == (6, 1)
    assert r["p"] == pytest.approx(2 * (1 + 7) / 2**7)  # 0.125
    assert mcnemar_exact([True, False], [True, False])["p"] == 1.0


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = [0.0, 1.0] * 20
    one, two = bootstrap_ci(values), bootstrap_ci(values)
    assert one == two and one["n"] == 40 and one["mean"] == 0.5
    assert one["ci"][0] < 0.5 < one["ci"][1]
    assert bootstrap_ci([])["mean"] is None


def test_paired_bootstrap_sees_a_consistent_gain() -> None:
    r = paired_bootstrap([0.2] * 30, [0.7] * 30)
    assert r["mean_diff"] == pytest.approx(0.5) and r["ci"] == pytest.approx([0.5, 0.5]) and r["p"] == 0.0


def e(evidence_type: str = "code-change", **fields) -> dict:
    return {**c(**fields), "evidence_type": evidence_type}


@pytest.mark.parametrize(
    ("gold", "pred", "want"),
    [
        ([e()], [e(value="Postgres 16.")], {"correct": 1}),
        ([e()], [], {"missing_pair": 1}),
        ([e()], [e(slot="orm")], {"missing_pair": 1, "wrong_pair": 1}),
        ([e()], [e(branch="exp/pg")], {"wrong_scope": 1}),
        ([e()], [e(env="staging")], {"wrong_scope": 1}),
        ([e()], [e("runtime-observation")], {"wrong_scope": 1}),
        ([e()], [e(value="MySQL 8")], {"wrong_value": 1}),
        ([e()], [e(env="dev", value="MySQL")], {"wrong_scope": 1}),  # scope is named first
        ([e()], [e(), e(value="MySQL")], {"correct": 1, "extra": 1}),
        ([], [e(), e(slot="orm")], {"spurious": 2}),
        ([], [], {}),
        # the closest prediction of the pair is matched, whatever the order of predictions
        ([e()], [e(env="dev"), e()], {"correct": 1, "extra": 1}),
        (
            [e(), e(slot="orm", value="prisma")],
            [e(slot="orm", value="drizzle"), e()],
            {"correct": 1, "wrong_value": 1},
        ),
    ],
)
def test_extraction_errors_classify_hand_made_notes(gold, pred, want) -> None:
    assert dict(extraction_errors(gold, pred)) == want


def test_a_value_is_verbatim_when_its_note_spells_it_after_normalization() -> None:
    assert verbatim("Postgres 16", "We moved to postgres 16 today.")
    assert not verbatim("Postgres 16", "We moved to the newest Postgres.")


def test_value_f1_by_wording_keeps_each_side_to_its_own_scopes() -> None:
    gold = [c(slot="engine"), c(slot="pool", value="as many as the cores")]
    pred = [c(slot="engine"), c(slot="pool", value="sixteen"), c(slot="orm", value="none")]
    assert by_wording(gold, pred, [True, False]) == {"verbatim": 1.0, "paraphrased": 0.0}
    # a side without gold is absent, not zero; the stray orm claim belongs to neither
    assert by_wording(gold[:1], pred, [True]) == {"verbatim": 1.0}
