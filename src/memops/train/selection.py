"""Checkpoint selection by a decision adapter's validation answers (``select=decisions``).

A decision adapter's synthetic validation loss keeps falling while its answers collapse onto one
label (docs/log/transfer.md); the answers show it. With ``select=decisions`` the answers are read
at every evaluation and the Trainer keeps the checkpoint whose answers match the gold most often,
through its own ``load_best_model_at_end`` and ``metric_for_best_model`` (``recipe.sft_config``),
which also keep that checkpoint through rotation and across a resume (``trainer_state.json``).
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from memops.train.config import TrainConfig
from memops.train.recipe import validation_answers


def pooled_accuracy(decisions: dict[str, Any]) -> float:
    """Exact match over every row ``check_decisions`` read, the split's and the suite's alike."""
    sets = [decisions[name] for name in ("split", "contract")]
    return sum(s["accuracy"] * s["n"] for s in sets) / max(1, sum(s["n"] for s in sets))


class ReadAnswers(TrainerCallback):
    """At every evaluation, the adapter's validation answers (``recipe.validation_answers``: logged,
    and warned about where they collapse) and their pooled exact match, logged and added to the
    evaluation's metrics as ``eval_decisions``, which the Trainer ranks checkpoints by once the
    callbacks have seen the metrics. ``reads`` keeps each step's answers for the manifest."""

    def __init__(self, cfg: TrainConfig, trainer: Any, tokenizer: Any, rows: list[dict[str, Any]]) -> None:
        self.cfg, self.trainer, self.tokenizer, self.rows = cfg, trainer, tokenizer, rows
        self.reads: dict[int, dict[str, Any]] = {}

    def on_evaluate(
        self, args: Any, state: Any, control: Any, metrics: dict[str, float] | None = None, **_: Any
    ):
        if metrics is not None:  # on every rank: each ranks checkpoints by it, and reads run in step
            decisions = validation_answers(self.cfg, self.trainer, self.tokenizer, self.rows)
            self.reads[state.global_step] = decisions
            metrics["eval_decisions"] = pooled_accuracy(decisions)
            self.trainer.log({"eval_decisions": metrics["eval_decisions"]})  # kept across a resume
        return control


def answers_curve(log_history: list[dict[str, Any]]) -> dict[int, float]:
    """Each evaluated step's pooled exact match, as the run logged it (a resumed run included)."""
    return {e["step"]: round(e["eval_decisions"], 4) for e in log_history if "eval_decisions" in e}
