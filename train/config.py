"""Typed training config. Hydra validates every override against it and rejects unknown keys."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from core.models import ModelConfig
from data.build import ALL, TRAINING_FOLDS
from data.names import known_names, safe_name
from data.sources import SourcesConfig


@dataclass
class OpConfig:
    name: str = MISSING
    max_length: int = 4096
    epochs: float = 2.0
    learning_rate: float = 2e-4
    per_device_batch: int = 1
    grad_accum: int = 8


RECIPE_SFT: dict[str, Any] = {
    "lr_scheduler_type": "cosine",
    "warmup_steps": 0.05,  # below 1: a share of the total steps
    "packing": True,
    "packing_strategy": "bfd",
    "padding_free": True,
    "completion_only_loss": True,
}
"""The recipe's trainer choices (DESIGN §6): loss on completions only, bfd packing without
padding, cosine schedule with 5% warmup."""


@dataclass
class TrainConfig(SourcesConfig):
    op: OpConfig = field(default_factory=OpConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    fold: str = ALL
    """The LOO fold whose training split this adapter learns: a trajectory's name (that one held
    out), ``synthetic`` (synthetic scenarios alone) or ``all`` (every source)."""
    holdout: str | None = None
    """The old name of ``fold``; refused with a message that names the new one."""
    datasets_dir: str = "outputs/datasets"
    adapters_dir: str = "outputs/adapters"
    seed: int = 0
    max_steps: int = -1
    max_eval_samples: int | None = None
    """Evaluate on a seeded sample of this many validation examples (all when unset)."""
    balance_labels: bool = False
    """Train on as many examples of each label as the rarest label has, drawn with ``seed``. A
    decision operator's real contradictions otherwise outnumber its sampled relations, and a
    short budget learns the majority relation first."""
    eval_steps: int = 50
    save_steps: int = 50
    save_total_limit: int | None = 2
    """Checkpoints kept for resuming; unset keeps every one (e.g. for a learning curve)."""
    logging_steps: int = 5
    report_to: str = "none"
    resume: bool = False
    overwrite: bool = False
    prepare: bool = True
    """Build missing prerequisites first: the datasets (all folds) and a model the project builds."""
    sft: dict[str, Any] = field(default_factory=lambda: dict(RECIPE_SFT))
    """``trl.SFTConfig`` fields under TRL's own names, passed through as they are: any trainer
    option is one override away (``sft.lr_scheduler_type=constant``; ``+sft.<field>=...`` for
    one not listed here). Fields this config already names (``max_steps``, ``seed``, the
    ``*_steps``, ``op.*``) are set there; naming them here too is refused."""

    def __post_init__(self) -> None:
        if self.model.name != MISSING:  # a config built in code fills the model in later
            safe_name("model.name", self.model.name)
        if self.holdout is not None:
            raise ValueError(f"holdout= is now fold=: pass fold={self.holdout}")
        known_names("fold", [self.fold], [*self.sources().names(), *TRAINING_FOLDS])


ConfigStore.instance().store(name="train_schema", node=TrainConfig)
