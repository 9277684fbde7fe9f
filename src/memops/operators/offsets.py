"""Per-answer offsets on a decision adapter's reads, fitted on its validation answers.

A small adapter that reads the allowed answers (``decisions=read``) often ranks them by a prior
of its own rather than by the input: at the demo's budget the compare adapter answers one label
for nearly everything (docs/log/transfer.md). Where its likelihoods still order the inputs
within that prior, an affine map of each answer's log-probability, ``scale * logp + offset``,
undoes the prior: the argmax of the mapped scores is the decision (``decisions=calibrated``).

The map is fitted by minimising the cross-entropy of the mapped scores against the gold answers
of the validation rows the training run reads anyway (``train.validation``), never on held-out
data; the problem is convex in (scale, offsets), so plain gradient descent finds its optimum.
Pure Python: a memory on the base install applies offsets without numpy or torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

FLOOR = 1e-300
"""The smallest probability whose logarithm is taken: a backend's renormalised odds can
underflow to 0 for an answer the adapter all but rules out."""
RIDGE = 0.01
"""The offsets' L2 penalty: an answer the validation gold never holds is pushed down, not to
minus infinity."""
STEPS = 500
"""Gradient steps at most; the fit stops sooner once the gradient is below ``TOLERANCE``."""
TOLERANCE = 1e-5


@dataclass(frozen=True)
class Offsets:
    """``scale * log p(answer) + offset[answer]``, argmax over the allowed answers."""

    scale: float
    offsets: dict[str, float]
    """Per answer label (``Operator.answers``' labels)."""

    def choose(self, labels: Sequence[str], probs: Sequence[float]) -> int:
        """The index of the answer whose mapped score is highest."""
        return max(range(len(labels)), key=lambda k: self.score(labels[k], probs[k]))

    def score(self, label: str, prob: float) -> float:
        return self.scale * math.log(max(prob, FLOOR)) + self.offsets.get(label, 0.0)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Offsets:
        return cls(float(data["scale"]), {str(k): float(v) for k, v in data["offsets"].items()})


def _normalised(logprobs: Sequence[float]) -> list[float]:
    """Log-probabilities over the options alone (minus their log-sum-exp), as a backend's odds are."""
    top = max(logprobs)
    total = top + math.log(sum(math.exp(x - top) for x in logprobs))
    return [x - total for x in logprobs]


def _softmax(z: list[float]) -> list[float]:
    top = max(z)
    e = [math.exp(x - top) for x in z]
    s = sum(e)
    return [x / s for x in e]


def _loss(
    rows: list[list[float]], targets: list[int], scale: float, bias: list[float]
) -> tuple[float, float, list[float]]:
    """The objective and its gradient in (scale, offsets)."""
    n = len(rows)
    loss = RIDGE * sum(b * b for b in bias)
    d_scale, d_bias = 0.0, [2 * RIDGE * b for b in bias]
    for row, y in zip(rows, targets, strict=True):
        z = [scale * x + b for x, b in zip(row, bias, strict=True)]
        p = _softmax(z)
        loss -= math.log(max(p[y], FLOOR)) / n
        p[y] -= 1.0
        d_scale += sum(pk * x for pk, x in zip(p, row, strict=True)) / n
        for k, pk in enumerate(p):
            d_bias[k] += pk / n
    return loss, d_scale, d_bias


def fit(labels: Sequence[str], logprobs: Sequence[Sequence[float]], gold: Sequence[str]) -> Offsets:
    """The map that minimises the mean cross-entropy of ``softmax(scale * logp + offsets)``
    against ``gold`` (each a label of ``labels``), plus ``RIDGE`` on the offsets: gradient
    descent whose step grows while the objective falls and halves when it would rise."""
    if len(logprobs) != len(gold) or not gold:
        raise ValueError(
            f"fitting offsets needs one gold label per read row ({len(logprobs)} rows, {len(gold)} labels)"
        )
    index = {label: k for k, label in enumerate(labels)}
    if unknown := sorted(set(gold) - set(index)):
        raise ValueError(f"gold labels {unknown} are none of the answers {list(labels)}")
    rows = [_normalised(list(r)) for r in logprobs]
    targets = [index[g] for g in gold]
    scale, bias, rate = 1.0, [0.0] * len(labels), 0.1
    loss, d_scale, d_bias = _loss(rows, targets, scale, bias)
    for _ in range(STEPS):
        if math.sqrt(d_scale**2 + sum(d * d for d in d_bias)) < TOLERANCE:
            break
        trial_scale = max(0.0, scale - rate * d_scale)
        trial_bias = [b - rate * d for b, d in zip(bias, d_bias, strict=True)]
        trial = _loss(rows, targets, trial_scale, trial_bias)
        if trial[0] <= loss:
            scale, bias, (loss, d_scale, d_bias), rate = trial_scale, trial_bias, trial, rate * 1.5
        else:
            rate /= 2
    mean = sum(bias) / len(bias)  # only differences matter: centred, for a readable manifest
    return Offsets(
        round(scale, 6), {label: round(b - mean, 6) for label, b in zip(labels, bias, strict=True)}
    )


def cross_fitted(
    labels: Sequence[str], logprobs: Sequence[Sequence[float]], gold: Sequence[str], folds: int = 2
) -> list[str]:
    """Each row's answer under offsets fitted on the other folds' rows (row ``i`` in fold
    ``i % folds``): what the offsets do on rows they were not fitted on."""
    out = [""] * len(gold)
    for f in range(folds):
        train = [i for i in range(len(gold)) if i % folds != f]
        if not train:
            continue
        offsets = fit(labels, [logprobs[i] for i in train], [gold[i] for i in train])
        for i in range(f, len(gold), folds):
            probs = [math.exp(x) for x in _normalised(list(logprobs[i]))]
            out[i] = labels[offsets.choose(labels, probs)]
    return out
