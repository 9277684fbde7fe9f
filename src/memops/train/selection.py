"""Checkpoint selection by a decision adapter's validation answers (``select=decisions``).

A decision adapter's synthetic validation loss keeps falling while its answers collapse onto one
label (docs/log/transfer.md); the answers show it. With ``select=decisions`` the answers are read
at every evaluation and the Trainer keeps the checkpoint whose answers match the gold most often
(ties to the one nearest the gold) through its own ``load_best_model_at_end`` and
``metric_for_best_model`` (``recipe.sft_config``), which also keep that checkpoint through
rotation and across a resume (``trainer_state.json``).
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from memops.train.config import TrainConfig
from memops.train.recipe import validation_answers
from memops.train.validation import read_sets


def pooled(decisions: dict[str, Any], key: str = "accuracy") -> float:
    """A per-row mean over every row ``check_decisions`` read, the split's, the suite's and the
    real trajectories' alike."""
    sets = [decisions[name] for name in read_sets(decisions)]
    return sum(s[key] * s["n"] for s in sets) / max(1, sum(s["n"] for s in sets))


def rank(decisions: dict[str, Any]) -> float:
    """What checkpoints are ranked by: the pooled exact match, ties broken by the gold answers'
    mean probability. That term is below 1 / (n + 1), under one row's worth of exact match, so
    it orders only checkpoints that answer alike often; without it a tie keeps the earlier step
    (the Trainer's comparison is strict), often one still on the label-mix plateau."""
    n = sum(decisions[name]["n"] for name in read_sets(decisions))
    return pooled(decisions) + pooled(decisions, "gold_probability") / (n + 1)


class ReadAnswers(TrainerCallback):
    """At every evaluation, the adapter's validation answers (``recipe.validation_answers``: logged,
    and warned about where they collapse), their pooled exact match, logged as ``eval_decisions``,
    and their ``rank``, added to the evaluation's metrics as ``eval_decisions_rank``, which the
    Trainer ranks checkpoints by once the callbacks have seen the metrics. ``reads`` keeps each
    step's answers for the manifest."""

    def __init__(
        self,
        cfg: TrainConfig,
        trainer: Any,
        tokenizer: Any,
        rows: list[dict[str, Any]],
        real: list[dict[str, Any]] | None = None,
    ) -> None:
        self.cfg, self.trainer, self.tokenizer, self.rows, self.real = cfg, trainer, tokenizer, rows, real
        self.reads: dict[int, dict[str, Any]] = {}

    def on_evaluate(
        self, args: Any, state: Any, control: Any, metrics: dict[str, float] | None = None, **_: Any
    ):
        if metrics is not None:  # on every rank: each ranks checkpoints by it, and reads run in step
            decisions = validation_answers(self.cfg, self.trainer, self.tokenizer, self.rows, self.real)
            self.reads[state.global_step] = decisions
            read = {"eval_decisions": pooled(decisions), "eval_decisions_rank": rank(decisions)}
            metrics.update(read)
            self.trainer.log(read)  # in the log history, so a resumed run keeps the early steps
        return control


def answers_curve(log_history: list[dict[str, Any]]) -> dict[int, float]:
    """Each evaluated step's pooled exact match, as the run logged it (a resumed run included)."""
    return {e["step"]: round(e["eval_decisions"], 4) for e in log_history if "eval_decisions" in e}
