"""The contract suite scored: each decision's accuracy per region of the engine's decision space
(``operators.contract``), for the learned adapters, the prompted base and the rules.

Its records sit in ``contract.jsonl`` beside a run's ``records.jsonl``, one per case and variant
with the case's region, and a restarted run skips what is recorded. They never join the fold
figures: the suite is not a trajectory, and its names and values are no training source's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memops.eval.harness import BATCH, decision_records, variant_ops
from memops.eval.metrics import bootstrap_ci
from memops.eval.scored import Record, Records, read_records
from memops.operators.contract import regions, suite
from memops.operators.learned import LearnedOperators
from memops.operators.registry import DECISIONS, OPERATORS

CONTRACT_RECORDS = "contract.jsonl"
FOLD = "contract"
VARIANTS = ("learned", "prompted", "symbolic")
"""What a run may score on the suite (``LooConfig.contract``)."""


def score_contract(
    ops: LearnedOperators,
    records: Records,
    part: str = "test",
    variants: Sequence[str] = VARIANTS,
    batch: int = BATCH,
    progress: bool = True,
) -> None:
    """Score every case of the suite's ``part`` that ``records`` does not hold yet, as a fold's
    decision examples are scored (``harness.decision_records``), each record with its region."""
    on = variant_ops(ops)
    for op in DECISIONS:
        cases = suite(op, part)
        for variant in variants:
            todo = [c for c in cases if not records.done(FOLD, op, variant, c["id"])]
            for start in tqdm(
                range(0, len(todo), batch), desc=f"contract {op} {variant}", disable=not progress, leave=False
            ):
                chunk = todo[start : start + batch]
                scored = decision_records(FOLD, op, variant, chunk, on(variant))
                records.add({**r, "region": c["region"]} for r, c in zip(scored, chunk, strict=True))


def answer_label(op: str, answer: dict[str, Any] | None) -> str:
    """A parsed answer's label as the operator's output names it (``CompareOutput.label``)."""
    return "(no answer)" if answer is None else OPERATORS[op].output.model_validate(answer).label


def summarize_contract(records: Sequence[Record]) -> dict[str, Any]:
    """op -> variant -> {"regions": region -> mean and 95% CI, "all": ..., "answers": label mix,
    "gold": the gold's label mix}."""
    out: dict[str, Any] = {}
    for op in DECISIONS:
        mine = [r for r in records if r["op"] == op]
        for variant in dict.fromkeys(r["variant"] for r in mine):
            rows = [r for r in mine if r["variant"] == variant]
            out.setdefault(op, {})[variant] = {
                "regions": {
                    name: bootstrap_ci([r["score"] for r in rows if r["region"] == name])
                    for name in regions(op)
                    if any(r["region"] == name for r in rows)
                },
                "all": bootstrap_ci([r["score"] for r in rows]),
                "answers": dict(Counter(answer_label(op, r["parsed"]) for r in rows).most_common()),
                "gold": dict(Counter(answer_label(op, r["gold"]) for r in rows).most_common()),
            }
    return out


def _cell(stat: dict[str, Any]) -> str:
    if stat["mean"] is None:
        return "n/a"
    lo, hi = stat["ci"]
    return f"{stat['mean']:.2f} [{lo:.2f}, {hi:.2f}]"


def contract_markdown(summary: dict[str, Any]) -> list[str]:
    """The report's section: per decision, each region's accuracy per variant (95% CI)."""
    if not summary:
        return []
    lines = [
        "",
        "## Contract suite (held out: names and values no training source uses)",
        "",
        "Each decision per region of the engine's decision space (`operators/contract.py`): the rule "
        "that decides the case. Exact match, mean [95% bootstrap CI], over the suite's test part.",
    ]
    for op, by_variant in summary.items():
        variants = list(by_variant)
        lines += [
            "",
            f"| {op} region | n | " + " | ".join(variants) + " |",
            "| --- | ---: |" + " ---: |" * len(variants),
        ]
        first = by_variant[variants[0]]
        for name, stat in first["regions"].items():
            cells = [_cell(by_variant[v]["regions"].get(name, {"mean": None})) for v in variants]
            lines.append(f"| {name} | {stat['n']} | " + " | ".join(cells) + " |")
        lines.append(
            f"| **all** | {first['all']['n']} | "
            + " | ".join(_cell(by_variant[v]["all"]) for v in variants)
            + " |"
        )
        if "learned" in by_variant:
            mix = ", ".join(f"{k} {v}" for k, v in by_variant["learned"]["answers"].items())
            gold = ", ".join(f"{k} {v}" for k, v in by_variant["learned"]["gold"].items())
            lines += ["", f"Learned {op} answers: {mix} (gold: {gold})."]
    return lines


def read_contract(run_dir: Path) -> dict[str, Any]:
    """The summary of a run's contract records; empty when it scored none."""
    path = run_dir / CONTRACT_RECORDS
    return summarize_contract(read_records(path)) if path.exists() else {}
