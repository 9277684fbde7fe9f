"""The report's paired tests, on records built by hand so that the expected counts are known."""

from __future__ import annotations

from memops.eval.summary import pair_auc, summarize
from memops.eval.tables import markdown


def record(fold: str, op: str, variant: str, i: int, score: float, error: str | None = None) -> dict:
    return {"fold": fold, "op": op, "variant": variant, "id": f"{op}-{i}", "score": score, "error": error}


def test_learned_vs_prompted_pairs_the_same_examples_across_folds() -> None:
    """compare: learned right on all 10 of each fold, prompted on the first 3; update: both right."""
    records = []
    for fold in ("a", "b"):
        for i in range(10):
            records.append(record(fold, "compare", "learned", i, 1.0))
            records.append(record(fold, "compare", "prompted", i, float(i < 3)))
            records.append(record(fold, "update", "learned", i, 1.0))
            records.append(record(fold, "update", "prompted", i, 1.0))
        records.append(record(fold, "compare", "prompted", 99, 0.0))  # no learned twin: not paired
    summary = summarize(records)
    compare = summary["tests"]["learned_vs_prompted"]["compare"]
    m = compare["mcnemar_exact_match"]
    assert (m["n"], m["only_first"], m["only_second"]) == (20, 0, 14)
    assert m["p"] < 0.001
    assert abs(compare["paired_bootstrap"]["mean_diff"] - 0.7) < 1e-9  # learned − prompted
    update = summary["tests"]["learned_vs_prompted"]["update"]["mcnemar_exact_match"]
    assert (update["only_first"], update["only_second"], update["p"]) == (0, 0, 1.0)
    assert summary["mean"]["prompted"]["compare"]["n"] == 22
    text = markdown(summary, {"name": "t", "model": "m", "backend": "hf", "folds": ["a", "b"]})
    assert "| compare | 0 | 14 |" in text


def test_the_parse_failure_rate_is_shown_per_operator_and_variant() -> None:
    """A prompted compare that never parses scores 0.00; the report must say why."""
    records = []
    for i in range(4):
        records.append(record("a", "compare", "learned", i, 1.0))
        records.append(record("a", "compare", "prompted", i, 0.0, error="not JSON: 'The first claim'"))
        records.append(record("a", "update", "prompted", i, 1.0, error=None if i else "schema: action"))
    summary = summarize(records)
    failures = summary["parse_failures"]
    assert failures["compare"]["prompted"] == {"failed": 4, "n": 4}
    assert failures["compare"]["two-stage"] == {"failed": 0, "n": 4}
    assert failures["update"]["prompted"] == {"failed": 1, "n": 4}
    text = markdown(summary, {"name": "t", "model": "m", "backend": "hf", "folds": ["a"]})
    assert "| compare | 0% (0/4) | 0% (0/4) | 100% (4/4) |" in text
    assert "| update | – | – | 25% (1/4) |\n" in text


def claim(slot: str, value: str = "v", env: str = "production") -> dict:
    return {
        "entity": "db",
        "slot": slot,
        "value": value,
        "branch": "main",
        "env": env,
        "evidence_type": "code-change",
    }


def extract(fold: str, variant: str, i: int, gold: list, parsed: list, score: float) -> dict:
    return {
        **record(fold, "extract", variant, i, score),
        "gold": gold,
        "parsed": parsed,
        "value_score": score,
    }


def test_three_extraction_variants_their_paired_tests_and_where_they_fail() -> None:
    """Four notes per fold with one gold claim each: direct always names the wrong slot, two-stage
    selects nothing, two-stage-trained gets three right and the fourth's env wrong."""
    records = []
    for fold in ("a", "b"):
        for i in range(4):
            gold = [claim("engine")]
            trained = [claim("engine", env="dev" if i == 3 else "production")]
            records += [
                extract(fold, "direct", i, gold, [claim("orm")], 0.0),
                extract(fold, "two-stage", i, gold, [], 0.0),
                extract(fold, "two-stage-trained", i, gold, trained, float(i < 3)),
                extract(fold, "symbolic", i, gold, gold, 1.0),
            ]
        records.append(extract(fold, "two-stage-trained", 9, [], [claim("engine")], 0.0))
        records.append(record(fold, "compare", "learned", 0, 1.0))
    summary = summarize(records)
    assert summary["variants"] == ["direct", "two-stage", "two-stage-trained", "symbolic"]
    assert summary["mean"]["two-stage-trained"]["compare"]["mean"] == 1.0  # learned counts for it
    vs_direct = summary["tests"]["two_stage_trained"]["vs direct"]["extract"]
    assert (vs_direct["mcnemar_exact_match"]["only_second"], vs_direct["mcnemar_exact_match"]["n"]) == (6, 8)
    assert abs(vs_direct["paired_bootstrap"]["mean_diff"] - 0.75) < 1e-9  # trained − direct
    errors = summary["extraction_errors"]["a"]
    assert (
        errors["direct"]["correct"],
        errors["direct"]["missing_pair"],
        errors["direct"]["wrong_pair"],
    ) == (0, 4, 4)
    assert (errors["two-stage"]["missing_pair"], errors["two-stage"]["wrong_pair"]) == (4, 0)
    trained = errors["two-stage-trained"]
    assert (trained["correct"], trained["wrong_scope"], trained["spurious"]) == (3, 1, 1)
    assert (trained["notes"], trained["empty_gold_notes"]) == (5, 1)
    assert "symbolic" not in errors
    text = markdown(summary, {"name": "t", "model": "m", "backend": "hf"})
    assert "| two-stage-trained | 0.60 [" in text  # 6 of its 10 notes, the empty-gold ones included
    assert "| vs direct, schema | 0 | 6 |" in text
    assert "| **all folds** | two-stage-trained | 10 (2) | **6** |" in text
    # the notes shown are those the variants disagree on: trained right, the other two wrong
    assert text.count("| two-stage-trained | `db.engine` [main/production, code-change] = v | 1.00 |") == 3
    assert text.count("| direct | `db.orm` [main/production, code-change] = v | 0.00 |") == 3


def test_a_run_of_one_opt_in_mode_is_tested_against_no_variant_it_did_not_extract_with() -> None:
    """The decisions' records name every learned variant, but only ``two-stage-proposed``
    extracted: no paired row against ``direct`` or ``two-stage``, no direct-vs-two-stage section."""
    records = [
        extract("a", "two-stage-proposed", i, [claim("engine")], [claim("engine")], 1.0) for i in range(3)
    ]
    records.append(record("a", "compare", "learned", 0, 1.0))
    summary = summarize(records)
    assert "direct" in summary["variants"] and summary["tests"]["two_stage_proposed"] == {}
    text = markdown(summary, {"name": "t", "model": "m", "backend": "hf"})
    assert "| two-stage-proposed | 1.00 [" in text
    assert "vs direct" not in text and "Direct vs two-stage" not in text
    assert "| direct | – | – | – | – |" not in text  # no row for a variant that only decided


def test_pair_auc_ranks_a_notes_pairs_against_each_other_only() -> None:
    """Two notes whose scores are on scales a tenth apart, each ranking its stated pair first:
    a perfect ranking (pooled across the notes, the second note's stated pair would lose to the
    first's other pair)."""
    records = [
        {
            **extract("a", "two-stage-overlap", i, [claim("engine", "postgres")], [], 0.0),
            "selected": ["db.engine"],
            "pair_scores": {"db.engine": 0.9 * scale, "db.orm": 0.8 * scale},
        }
        for i, scale in enumerate((1.0, 0.1))
    ]
    assert summarize(records)["selection"]["a"]["two-stage-overlap"]["pair_auc"] == 1.0
    assert pair_auc([([0.5], [0.5, 0.1]), ([], [0.3])]) == 0.75 and pair_auc([([0.2], [])]) is None


def test_selection_precision_recall_and_value_f1_by_wording_per_variant() -> None:
    """Two notes, two gold pairs each (one value verbatim in its note, one paraphrased): the
    scoring selection picks one gold pair and one wrong pair per note, and gets the verbatim
    value right and the paraphrased one wrong."""
    records = []
    for i in range(2):
        gold = [claim("engine", "postgres"), claim("pool", "as many as cores")]
        parsed = [claim("engine", "postgres"), claim("pool", "sixteen")]
        records.append(
            {
                **extract("a", "two-stage-scored", i, gold, parsed, 0.5),
                "selected": ["db.engine", "db.orm"],
                "pair_scores": {"db.engine": 0.9, "db.orm": 0.8, "db.pool": 0.1},
                "gold_verbatim": [True, False],
            }
        )
    summary = summarize(records)
    chosen = summary["selection"]["a"]["two-stage-scored"]
    assert (chosen["precision"], chosen["recall"], chosen["selected"], chosen["gold"]) == (0.5, 0.5, 4, 4)
    assert chosen["pair_auc"] == 0.5  # engine above orm, pool below it
    assert summary["selection"]["all folds"]["two-stage-scored"] == chosen
    wording = summary["value_by_wording"]["two-stage-scored"]
    assert (wording["verbatim"]["mean"], wording["verbatim"]["n"]) == (1.0, 2)
    assert (wording["paraphrased"]["mean"], wording["paraphrased"]["n"]) == (0.0, 2)
    text = markdown(summary, {"name": "t", "model": "m", "backend": "hf"})
    assert "| **all folds** | two-stage-scored | 0.50 | 0.50 | 4 | 4 | 0.50 |" in text
    assert "| two-stage-scored | 1.00 [1.00, 1.00] (n = 2) | 0.00 [0.00, 0.00] (n = 2) |" in text


def test_engine_keys_are_scored_exactly_and_at_the_value_match_of_extraction() -> None:
    """A learned extraction writes paraphrases: a key whose final value shares most of the gold
    value's tokens is wrong exactly and right at value level; a far value and no value are wrong
    both ways."""
    finals = [
        ("the approval flow of the sandbox", "approval flow of the sandbox", 0.0),  # F1 0.91
        ("approval flow of the sandbox", "approval flow of the sandbox", 1.0),
        ("a different thing", "approval flow of the sandbox", 0.0),
        (None, "approval flow of the sandbox", 0.0),
    ]
    records = [
        {**record("a", "engine_state", "two-stage-trained", i, score), "parsed": got, "gold": want}
        for i, (got, want, score) in enumerate(finals)
    ]
    summary = summarize(records)
    keys = summary["mean"]["two-stage-trained"]
    assert (keys["engine_state"]["mean"], keys["engine_state_value"]["mean"]) == (0.25, 0.5)
    text = markdown(summary, {"name": "t", "model": "m", "backend": "hf", "folds": ["a"]})
    assert "| two-stage-trained | – | 0.25 [0.00, 0.75] | 0.50" in text


def test_the_report_lists_the_slots_the_learned_decisions_missed_most_first() -> None:
    """Records that name their slot: the misses are counted per operator, variant and slot, the
    slots without any left out, and the report lists the learned ones, most missed first."""
    records = []
    for i in range(12):
        r = record("a", "update", "learned", i, float(i >= 9 or i % 2))
        records.append({**r, "slot": "dependencies.minimums" if i < 9 else "ci.platforms"})
    records.append({**record("a", "update", "learned", 20, 0.0), "slot": "project.license"})
    records.append({**record("a", "compare", "learned", 0, 1.0), "slot": "project.license"})
    records.append({**record("a", "update", "symbolic", 0, 0.0), "slot": "ci.platforms"})
    summary = summarize(records)
    misses = summary["decision_misses"]
    assert misses["update"]["learned"] == {
        "dependencies.minimums": {"wrong": 5, "n": 9},
        "project.license": {"wrong": 1, "n": 1},
    }
    assert misses["compare"]["learned"] == {} and "symbolic" not in misses["update"]
    report = markdown(summary, {})
    assert "## Learned decisions missed, by slot" in report
    assert report.index("`dependencies.minimums` | 5 / 9") < report.index("`project.license` | 1 / 1")
