"""Scores and statistics of docs/design.md §7: claim F1 at two levels, exact match, bootstrap CIs,
exact McNemar and a paired bootstrap. Pure Python plus numpy; no model needed."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from memops.memory.claims import norm

BOOTSTRAP_RESAMPLES = 10_000
SEED = 0
VALUE_F1_THRESHOLD = 0.5


def _schema_key(claim: dict[str, Any]) -> tuple[str, ...]:
    return tuple(norm(str(claim.get(k, ""))) for k in ("entity", "slot", "branch", "env"))


def token_f1(a: str, b: str) -> float:
    ta, tb = norm(a).split(), norm(b).split()
    if not ta and not tb:
        return 1.0
    common = sum((Counter(ta) & Counter(tb)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(ta), common / len(tb)
    return 2 * precision * recall / (precision + recall)


def value_match(pred: str | None, gold: str | None) -> bool:
    """The value-level match of docs/design.md §7: token F1 of the two values at least 0.5. Gold values
    are mostly an annotator's paraphrase of the note, so extraction is scored this way, and so
    is an engine key's final value when learned extraction wrote it (beside exact equality)."""
    return pred is not None and gold is not None and token_f1(pred, gold) >= VALUE_F1_THRESHOLD


def claim_f1(gold: Sequence[dict[str, Any]], pred: Sequence[dict[str, Any]], level: str = "schema") -> float:
    """Per-example claim F1; 1.0 when both are empty.

    ``schema`` matches on (entity, slot, branch, env) after normalization; ``value`` also needs
    value token-F1 >= 0.5. Matching is one-to-one, so a repeated prediction counts once.
    """
    if not gold and not pred:
        return 1.0
    if not gold or not pred:
        return 0.0
    unmatched = list(gold)
    hits = 0
    for p in pred:
        for g in unmatched:
            if _schema_key(p) == _schema_key(g) and (
                level == "schema" or value_match(str(p.get("value", "")), str(g["value"]))
            ):
                unmatched.remove(g)
                hits += 1
                break
    return 2 * hits / (len(gold) + len(pred))


def verbatim(value: str, note: str) -> bool:
    """Whether a value is written in its note as it stands (after ``norm``): such a value can be
    copied, any other must be paraphrased or inferred."""
    return norm(value) in norm(note)


def by_wording(
    gold: Sequence[dict[str, Any]], pred: Sequence[dict[str, Any]], copied: Sequence[bool]
) -> dict[str, float]:
    """Value claim F1 of one note apart for gold values ``copied`` verbatim from it and for the
    others: each side's gold claims against the predictions of their (entity, slot, branch, env);
    a prediction no gold claim scopes belongs to neither side. Only sides with gold appear."""
    out = {}
    for side, keep in (("verbatim", True), ("paraphrased", False)):
        part = [g for g, c in zip(gold, copied, strict=True) if c == keep]
        keys = {_schema_key(g) for g in part}
        if part:
            out[side] = claim_f1(part, [p for p in pred if _schema_key(p) in keys], "value")
    return out


def bootstrap_ci(values: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED) -> dict:
    """Mean with a percentile bootstrap 95% CI."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return {"mean": None, "ci": [None, None], "n": 0}
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"mean": float(x.mean()), "ci": [float(lo), float(hi)], "n": len(x)}


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> dict:
    """Exact two-sided McNemar test on paired binary outcomes (binomial on the discordant pairs)."""
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = only_a + only_b
    tail = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2**n if n else 1.0
    return {"only_first": only_a, "only_second": only_b, "p": min(1.0, 2 * tail), "n": len(a)}


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED
) -> dict:
    """Mean of ``b - a`` with a 95% CI and a two-sided bootstrap p-value for a zero difference."""
    import numpy as np

    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if len(d) == 0:
        return {"mean_diff": None, "ci": [None, None], "p": None, "n": 0}
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    p = min(1.0, 2 * min((means <= 0).mean(), (means >= 0).mean()))
    return {"mean_diff": float(d.mean()), "ci": [float(lo), float(hi)], "p": float(p), "n": len(d)}


ERROR_CLASSES = ("correct", "missing_pair", "wrong_pair", "wrong_scope", "wrong_value", "extra", "spurious")
"""Where one note's extraction goes wrong, one count per claim (``extraction_errors``)."""


def extraction_errors(gold: Sequence[dict[str, Any]], pred: Sequence[dict[str, Any]]) -> Counter[str]:
    """Classify every gold claim and every left-over prediction of one note.

    Each gold claim is matched to the closest unused prediction of its ``entity.slot`` pair and
    counts as ``correct``, ``wrong_scope`` (right pair, wrong branch, env or evidence type; this
    wins over a wrong value), ``wrong_value`` (right pair and scope, value token-F1 below 0.5)
    or ``missing_pair`` when no prediction names its pair. Predictions left over count as
    ``wrong_pair`` (a pair the gold does not name), ``extra`` (a second claim for a gold pair) or
    ``spurious`` (the gold is empty). Missing and wrong pairs are the selection errors.
    """

    def pair(c: dict[str, Any]) -> tuple[str, str]:
        return norm(str(c.get("entity", ""))), norm(str(c.get("slot", "")))

    def scope(c: dict[str, Any]) -> tuple[str, str, str]:
        return norm(str(c.get("branch", ""))), norm(str(c.get("env", ""))), str(c.get("evidence_type", ""))

    def fit(p: dict[str, Any], g: dict[str, Any]) -> tuple[bool, bool]:
        return scope(p) == scope(g), value_match(str(p.get("value", "")), str(g["value"]))

    left, out = list(pred), Counter[str]()
    for g in gold:
        same = [p for p in left if pair(p) == pair(g)]
        if not same:
            out["missing_pair"] += 1
            continue
        best = max(same, key=lambda p: fit(p, g))
        left.remove(best)
        scope_ok, value_ok = fit(best, g)
        out["correct" if scope_ok and value_ok else "wrong_value" if scope_ok else "wrong_scope"] += 1
    named = {pair(g) for g in gold}
    for p in left:
        out["spurious" if not gold else "extra" if pair(p) in named else "wrong_pair"] += 1
    return out
