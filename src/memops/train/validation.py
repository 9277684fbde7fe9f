"""A decision adapter's own answers on validation data, read right after training: its exact
match and its answers' label mix beside the gold's, and the collapse guard.

A decision adapter can lower its validation loss while answering one label for nearly every
input (docs/log/transfer.md: the demo's recipe at seeds 1 and 2). The loss does not show it; the
answers do. Each validation prompt's allowed answers (``Operator.answers``) are read by the
adapter's likelihood, teacher-forced (``backends.prefixes.read_continuations``), on the model in
memory: no decoding, no second load. The rows are the validation split the trainer evaluated,
the contract suite's validation part, whose names and values no training source uses, and where
the data holds them, the real trajectories of the validation split (``real_validation``).
The same reads fit the offsets that ``decisions=calibrated`` applies (``operators.offsets``).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from memops.operators.offsets import cross_fitted, fit
from memops.operators.registry import OPERATORS

COLLAPSE_SHARE = 0.5
"""An answer given this often or more ..."""
COLLAPSE_RATIO = 2.0
"""... and this many times as often as the gold holds it, flags the adapter as collapsed."""


def collapsed(answers: Counter[str], gold: Counter[str]) -> str | None:
    """The label the answers pile on (``COLLAPSE_SHARE``, ``COLLAPSE_RATIO``), or None."""
    if not answers:
        return None
    n = sum(answers.values())
    label, count = answers.most_common(1)[0]
    share, gold_share = count / n, gold[label] / n
    return label if share >= COLLAPSE_SHARE and share >= COLLAPSE_RATIO * gold_share else None


DROP_SHARE = 0.1
"""A label the gold holds this often or more ..."""
DROP_RATIO = 0.25
"""... and the answers give less than this fraction as often is one the adapter has dropped: it
decides every such input wrongly (the full CPU recipe's update adapter at seed 1 never answered
``supersede``, a quarter of the gold, and no answer piled up enough to be a collapse)."""


def dropped(answers: Counter[str], gold: Counter[str]) -> list[str]:
    """The labels the gold holds often that the answers (almost) never give."""
    n = sum(gold.values())
    return sorted(k for k, c in gold.items() if c >= DROP_SHARE * n and answers[k] < DROP_RATIO * c)


def read_logprobs(
    model: Any, tokenizer: Any, op: str, prompts: Sequence[list[dict[str, str]]]
) -> list[list[float]]:
    """Each prompt's allowed answers (``Operator.answers``), their log-likelihoods in order."""
    from memops.operators.backends import parting
    from memops.operators.backends.hf import prompt_text
    from memops.operators.backends.prefixes import read_continuations

    options = [a.model_dump_json() for a in OPERATORS[op].answers]
    rows, starts = [], []
    for messages in prompts:
        text = prompt_text(tokenizer, messages)
        begun = [tokenizer(text + o, add_special_tokens=False)["input_ids"] for o in options]
        part = parting(begun, options)
        rows += begun
        starts += [part] * len(begun)
    logprobs = read_continuations(model, rows, starts)
    return [list(logprobs[k * len(options) : (k + 1) * len(options)]) for k in range(len(prompts))]


def labels(op: str) -> list[str]:
    return [a.label for a in OPERATORS[op].answers]


def per_region(cases: Sequence[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The first ``n`` cases of each region: every region weighs alike."""
    taken: Counter[str] = Counter()
    out = []
    for case in cases:
        if taken[case["region"]] < n:
            taken[case["region"]] += 1
            out.append(case)
    return out


SETS = ("split", "contract", "real")
"""The validation sets a decision adapter's answers are read on: the dataset's validation rows
(of the scenarios), the contract suite's validation part, and the real trajectories' rows where
the validation split holds any."""


def read_sets(decisions: dict[str, Any]) -> list[str]:
    """The sets a read of ``check_decisions`` holds, in ``SETS`` order."""
    return [name for name in SETS if name in decisions]


def check_decisions(
    model: Any,
    tokenizer: Any,
    op: str,
    validation: Sequence[dict[str, Any]],
    real: Sequence[dict[str, Any]],
    contract_per_region: int,
) -> dict[str, Any]:
    """Exact match and label mix per validation set (``SETS``: ``split``, the dataset's validation
    rows; ``contract``, ``contract_per_region`` cases of each region of the suite's validation
    part; ``real``, the real trajectories' rows, where given), and over all of them the collapse
    flag and the labels dropped."""
    from memops.operators.contract import suite

    spec = OPERATORS[op]

    def gold(rows: Sequence[dict[str, Any]]) -> list[tuple[Any, str, tuple[Any, ...] | None]]:
        return [
            (
                row["prompt"],
                label_of(op, row["completion"][0]["content"]),
                spec.arguments(json.loads(row["inputs"])) if "inputs" in row else None,
            )
            for row in rows
        ]

    cases = per_region(suite(op, "validation"), contract_per_region)
    sets = {
        "split": gold(validation),
        "contract": [(case["prompt"], case["label"], case["arguments"]) for case in cases],
        **({"real": gold(real)} if real else {}),
    }
    was_training = model.training
    model.eval()
    read = {
        name: read_logprobs(model, tokenizer, op, [row[0] for row in rows]) for name, rows in sets.items()
    }
    if was_training:
        model.train()
    return summarize(
        op,
        read,
        {name: [row[1] for row in rows] for name, rows in sets.items()},
        {name: [row[2] for row in rows] for name, rows in sets.items()},
    )


def summarize(
    op: str,
    read: dict[str, list[list[float]]],
    gold: dict[str, list[str]],
    arguments: dict[str, list[tuple[Any, ...] | None]],
) -> dict[str, Any]:
    """Per set, the exact match, the gold answers' mean probability among the allowed answers, and
    the label mix of the adapter's own answers, of its answers under offsets fitted on the
    other half of the rows (``offsets.cross_fitted``) and of its answers read within the contract
    (``learned.within_contract``, on each row's call ``arguments``); over all sets, the collapse
    flag and the labels dropped, read free and (``within_contract``) read within the contract, and
    the offsets fitted on every row, which ``decisions=calibrated`` applies."""
    from memops.operators.learned import within_contract

    names = labels(op)
    out: dict[str, Any] = {}
    answers_all: Counter[str] = Counter()
    judged_all: Counter[str] = Counter()
    gold_all: Counter[str] = Counter()
    every = [(lp, g) for name in read for lp, g in zip(read[name], gold[name], strict=True)]
    calibrated = iter(cross_fitted(names, [lp for lp, _ in every], [g for _, g in every]))
    for name, rows in read.items():
        answers = [names[max(range(len(names)), key=lp.__getitem__)] for lp in rows]
        shifted = [next(calibrated) for _ in rows]
        # A row without its call's arguments (a dataset written without ``inputs``) is read free.
        judged = [
            answer if args is None else names[within_contract(OPERATORS[op], args, probabilities(lp))]
            for lp, args, answer in zip(rows, arguments[name], answers, strict=True)
        ]
        out[name] = {
            "n": len(rows),
            "accuracy": exact(answers, gold[name]),
            "gold_probability": sum(map(gold_probability, rows, [names.index(g) for g in gold[name]]))
            / max(1, len(rows)),
            "answers": dict(Counter(answers).most_common()),
            "gold": dict(Counter(gold[name]).most_common()),
            "calibrated_accuracy": exact(shifted, gold[name]),
            "calibrated_answers": dict(Counter(shifted).most_common()),
            "within_contract_accuracy": exact(judged, gold[name]),
            "within_contract_answers": dict(Counter(judged).most_common()),
        }
        answers_all.update(answers)
        judged_all.update(judged)
        gold_all.update(gold[name])
    out["collapsed"] = collapsed(answers_all, gold_all)
    out["dropped"] = dropped(answers_all, gold_all)
    out["within_contract"] = {
        "collapsed": collapsed(judged_all, gold_all),
        "dropped": dropped(judged_all, gold_all),
    }
    out["offsets"] = fit(names, [lp for lp, _ in every], [g for _, g in every]).to_json()
    return out


def probabilities(logprobs: Sequence[float]) -> list[float]:
    """The allowed answers' probabilities, renormalized over them (what ``Odds.probs`` holds)."""
    top = max(logprobs)
    weights = [math.exp(lp - top) for lp in logprobs]
    return [w / sum(weights) for w in weights]


def gold_probability(logprobs: Sequence[float], gold: int) -> float:
    """The gold answer's probability among the allowed answers: how near a miss came."""
    return probabilities(logprobs)[gold]


def exact(answers: Sequence[str], gold: Sequence[str]) -> float:
    return sum(a == g for a, g in zip(answers, gold, strict=True)) / max(1, len(gold))


def label_of(op: str, completion: str) -> str:
    return OPERATORS[op].output.model_validate_json(completion).label
