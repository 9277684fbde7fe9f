"""The report's paired tests, on records built by hand so that the expected counts are known."""

from __future__ import annotations

from eval.report import markdown, summarize


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
    assert "| compare | 0% (0/4) | 0% (0/4) | 100% (4/4) | – |" in text
    assert "| update | – | – | 25% (1/4) | – |" in text
