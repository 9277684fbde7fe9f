"""Held-out score against training steps: every checkpoint of one compare or update adapter,
scored on the pooled test examples of the held-out trajectories with the hf backend, and with
``contract=true`` on the contract suite's test part, per region.

Step 0 is the base model without an adapter (the prompted baseline). Exact match is the LOO
harness's own score (``eval/harness.py``), with bootstrap CIs, and per gold label (which
relations a short budget has not learned yet). With ``validation=N`` each step is also scored on
N examples of the validation split of the fold the adapter trained on: in distribution, so a low
score there says the budget has not fitted its own data, which the validation loss hides (a
decision's completion is mostly tokens any step predicts), and a high one beside a low held-out
score says the gap is from the training data to the real trajectories. The op and the model, as
trained, come from the adapter's ``resolved_config.json``; the curve goes to
``learning_curve.json`` and ``learning_curve.png`` beside it.

Read within the contract (``decisions=contract``), a compare adapter answers as
``decisions=judged`` reads it: the rules decide what the keys, evidence and times decide, and the
curve shows where the adapter starts to judge whether two values are one.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import MISSING, OmegaConf

from memops.core.layout import DATASETS, dataset_dir
from memops.core.models import ModelConfig
from memops.core.sources import SourcesConfig
from memops.eval.contract import FOLD, summarize_contract
from memops.eval.harness import BATCH, decision_records, load_test
from memops.eval.metrics import bootstrap_ci
from memops.operators.contract import suite
from memops.operators.learned import LearnedOperators
from memops.operators.registry import DECISIONS, OPERATORS
from memops.train.tracking import log_scalars

CURVE = "learning_curve.json"
TARGET = 0.9
READINGS = ("decode", "read", "contract")
"""The readings a curve may take: ``calibrated`` needs the offsets of the final adapter, and
``judged`` is ``contract`` for compare and reads update's judgment from the compare adapter."""


@dataclass
class CurveConfig(SourcesConfig):
    adapter: str = MISSING
    """An adapter directory train.py wrote; train it with ``save_total_limit=null`` to keep every
    checkpoint."""
    folds: list[str] | None = None
    """The held-out trajectories pooled (group words too: ``shipped``, ``mined-held-out``);
    unset: every one the annotations hold."""
    steps: list[int] | None = None
    """Rescore only these steps (0: the base) and replace them in the curve on disk."""
    datasets_dir: str = DATASETS
    validation: int = 0
    """Also score a seeded sample of this many validation examples of the adapter's training fold
    (from ``datasets_dir``); 0: the held-out trajectories only."""
    seed: int = 0
    """Draws the validation sample."""
    decisions: str = "decode"
    """How each decision is answered (``LearnedOperators.decisions``): decode, read or contract."""
    contract: bool = False
    """Also score the contract suite's test part (``operators.contract.suite``), per region."""
    dtype: str | None = None
    """What the base computes in while scoring (e.g. ``bfloat16``); unset: the model's own."""

    def __post_init__(self) -> None:
        if self.decisions not in READINGS:
            raise ValueError(f"decisions={self.decisions}: a curve reads {', '.join(READINGS)}")
        if self.folds is None:
            self.folds = self.sources().names()
        self.folds = self.named_folds("folds", self.folds)


def checkpoints(adapter: Path) -> dict[int, Path | None]:
    """Step -> adapter directory; step 0 is the bare base."""
    found = {int(p.name.rsplit("-", 1)[1]): p for p in (adapter / "checkpoints").glob("checkpoint-*")}
    manifest = adapter / "manifest.json"
    if manifest.exists():
        found.setdefault(json.loads(manifest.read_text())["global_step"], adapter)
    return {0: None, **dict(sorted(found.items()))}


def trained_as(adapter: Path) -> tuple[str, str, ModelConfig]:
    """The operator, the fold and the base model the adapter was trained with."""
    resolved = adapter / "resolved_config.json"
    if not resolved.exists():
        raise FileNotFoundError(f"no {resolved}: not an adapter directory train.py wrote")
    trained = json.loads(resolved.read_text())
    op = trained["op"]["name"]
    if op not in DECISIONS:
        raise ValueError(f"{adapter} is a {op} adapter; the curve scores a decision: {', '.join(DECISIONS)}")
    model = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ModelConfig), trained["model"]))
    return op, trained["fold"], model


def validation_sample(datasets_dir: Path, fold: str, op: str, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` validation examples of a training fold, drawn with ``seed``, in dataset order."""
    from datasets import load_from_disk

    path = dataset_dir(datasets_dir, fold, op)
    if not (path / "dataset_dict.json").exists():
        raise FileNotFoundError(f"no dataset at {path}: validation={n} reads the adapter's fold ({fold})")
    rows = load_from_disk(str(path))["validation"]
    keep = sorted(random.Random(seed).sample(range(len(rows)), min(n, len(rows))))
    return [rows[i] for i in keep]


def step_ops(op: str, model: ModelConfig, path: Path | None, decisions: str) -> LearnedOperators:
    """The operators of one step: its checkpoint on the base (none at step 0), read as asked."""
    from memops.operators.backends.hf import HFBackend

    backend = HFBackend.load(model, {op: path} if path else {})
    return LearnedOperators(backend, adapters=path is not None, decisions=decisions)


def batched(fold: str, op: str, examples: Sequence[dict[str, Any]], ops: LearnedOperators) -> list[dict]:
    """The examples' records, read in a run's batches (``harness.BATCH``), so a point gives the
    figures a run gives."""
    return [
        r
        for start in range(0, len(examples), BATCH)
        for r in decision_records(fold, op, "learned", examples[start : start + BATCH], ops)
    ]


def score_step(op: str, ops: LearnedOperators, tests: dict[str, list]) -> dict[str, Any]:
    """One point: exact match over the pooled tests with its CI, and right/total per gold label."""
    records = [r for fold, examples in tests.items() for r in batched(fold, op, examples, ops)]
    by_label: dict[str, list[int]] = {}
    for r in records:
        right_n = by_label.setdefault(OPERATORS[op].output(**r["gold"]).label, [0, 0])
        right_n[0] += int(r["score"])
        right_n[1] += 1
    return {**bootstrap_ci([r["score"] for r in records]), "by_label": dict(sorted(by_label.items()))}


def score_suite(op: str, ops: LearnedOperators) -> dict[str, Any]:
    """The contract suite's test part as a run summarizes it (``summarize_contract``): exact match
    with its CI, each region's, and the answers' label mix."""
    cases = suite(op)
    records = batched(FOLD, op, cases, ops)
    scored = [{**r, "region": case["region"]} for r, case in zip(records, cases, strict=True)]
    summary = summarize_contract(scored)[op]["learned"]
    return {**summary["all"], "regions": summary["regions"], "answers": summary["answers"]}


def learning_curve(cfg: CurveConfig) -> list[dict[str, Any]]:
    """Score the chosen steps, merge them into the curve on disk, write its JSON and figure."""
    adapter = Path(cfg.adapter)
    op, trained_on, model = trained_as(adapter)
    if cfg.dtype:
        model = replace(model, compute_dtype=cfg.dtype)
    tests = {fold: load_test(Path(cfg.datasets_dir), fold, op) for fold in cfg.folds}
    own = {}
    if cfg.validation:
        sample = validation_sample(Path(cfg.datasets_dir), trained_on, op, cfg.validation, cfg.seed)
        own = {trained_on: sample}
    curve = []
    for step, path in checkpoints(adapter).items():
        if cfg.steps and step not in cfg.steps:
            continue
        ops = step_ops(op, model, path, cfg.decisions)
        point = {"step": step, "adapter": str(path) if path else None, **score_step(op, ops, tests)}
        show(step, f"{op} exact match", point)
        if own:
            point["validation"] = {"fold": trained_on, **score_step(op, ops, own)}
            show(step, f"{trained_on} validation", point["validation"])
        if cfg.contract:
            point["contract"] = score_suite(op, ops)
            show_suite(step, point["contract"])
        curve.append(point)
    out = adapter / CURVE
    if cfg.steps and out.exists():  # a partial rescore replaces its steps in the curve on disk
        kept = [p for p in json.loads(out.read_text()) if p["step"] not in cfg.steps]
        curve = sorted([*kept, *curve], key=lambda p: p["step"])
    out.write_text(json.dumps(curve, indent=2) + "\n")
    plot(curve, op, adapter / "learning_curve.png")
    # Beside the Trainer's own events (checkpoints/runs/), so TensorBoard shows loss and score together.
    scores = {p["step"]: {f"heldout/{op}": p["mean"]} for p in curve}
    for p in curve:
        for part in ("validation", "contract"):
            if part in p:
                scores[p["step"]][f"{part}/{op}"] = p[part]["mean"]
    log_scalars(adapter / "checkpoints" / "runs" / "learning-curve", scores)
    return curve


def show(step: int, what: str, point: dict[str, Any]) -> None:
    lo, hi = point["ci"]
    print(f"step {step:>5}: {what} {point['mean']:.3f} [{lo:.3f}, {hi:.3f}] (n={point['n']})")
    print("             " + ", ".join(f"{k} {right}/{n}" for k, (right, n) in point["by_label"].items()))


def show_suite(step: int, point: dict[str, Any]) -> None:
    lo, hi = point["ci"]
    print(f"step {step:>5}: contract suite {point['mean']:.3f} [{lo:.3f}, {hi:.3f}] (n={point['n']})")
    print("             " + ", ".join(f"{k} {v['mean']:.2f}" for k, v in point["regions"].items()))


def plot(curve: list[dict], op: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [p["step"] for p in curve]
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.fill_between(steps, [p["ci"][0] for p in curve], [p["ci"][1] for p in curve], alpha=0.2)
    ax.plot(steps, [p["mean"] for p in curve], marker="o", label="held out")
    own = [p for p in curve if "validation" in p]
    if own:
        label = f"{own[0]['validation']['fold']} validation"
        ax.plot([p["step"] for p in own], [p["validation"]["mean"] for p in own], marker="s", label=label)
    suite_points = [p for p in curve if "contract" in p]
    if suite_points:
        suite_scores = [p["contract"]["mean"] for p in suite_points]
        ax.plot([p["step"] for p in suite_points], suite_scores, marker="^", label="contract suite")
    ax.axhline(TARGET, color="grey", linestyle="--", linewidth=1, label=f"target {TARGET:.2f}")
    ax.set(xlabel="training step", ylabel=f"{op} exact match", ylim=(0, 1.02))
    ax.set_title(f"{op}: exact match, held-out trajectories pooled (95% CI)", fontsize=9)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
