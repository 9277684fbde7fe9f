"""Typed training config. Hydra validates every override against it and rejects unknown keys.

``TrainingRun`` is what a run trains with, whichever entry point starts it: the recipe's
settings, the operator overrides and the trainer's fields. ``TrainConfig`` (train.py, one
adapter) and ``LooConfig`` (memops loo and the Slurm submitter, many) both extend it, and
:func:`train_config` turns a run into one adapter's ``TrainConfig``: a typed copy, never a
list of override strings, so every ``model.*`` and ``op.*`` field given to any entry point
reaches the adapter.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any, ClassVar, get_type_hints

from omegaconf import MISSING

from memops.core.config import AUTO, RunConfig, shared
from memops.core.layout import ALL, TRAINING_FOLDS
from memops.core.models import TRAINS
from memops.core.names import known_names, safe_name
from memops.operators.registry import ADAPTERS


@dataclass
class OpConfig:
    """One adapter's settings. A field left unset takes the adapter's default from the registry
    (``operators.registry.ADAPTERS``); a recipe (``configs/recipe/``) or the command line sets it."""

    name: str | None = None
    """The adapter (and its dataset): ``train.py op=<name>``. A LOO run or a submission trains
    every adapter, so there it stays unset and the other fields apply to all of them."""
    max_length: int | None = field(default=None, metadata=TRAINS)
    epochs: float | None = field(default=None, metadata=TRAINS)
    learning_rate: float | None = field(default=None, metadata=TRAINS)
    per_device_batch: int | None = field(default=None, metadata=TRAINS)
    grad_accum: int | None = field(default=None, metadata=TRAINS)


RECIPE_SFT: dict[str, Any] = {
    "lr_scheduler_type": "cosine",
    "warmup_steps": 0.05,  # below 1: a share of the total steps
    "packing": True,
    "packing_strategy": "bfd",
    "padding_free": True,
    "completion_only_loss": True,
}
"""The recipe's trainer choices (docs/design.md §6): loss on completions only, bfd packing without
padding, cosine schedule with 5% warmup."""


LM_HEADS = ("labelled", "all")
SELECTS = ("last", "decisions")
PACKED_ATTENTION = ("mask", "segments", "shared_prefix", "varlen")


@dataclass
class TrainingRun(RunConfig):
    recipe: str = AUTO
    """The recipe these settings came from (``configs/recipe/<name>.yaml``: gpu, cpu,
    smollm2-cpu); ``auto`` picks the model's CPU recipe on a machine without CUDA, else gpu."""
    op: OpConfig = field(default_factory=OpConfig)
    max_steps: int | None = field(default=None, metadata=TRAINS)
    """Unset: the recipe's budget for the adapter (``steps``), else ``op.epochs`` of its data."""
    steps: dict[str, int] = field(default_factory=dict)
    """The recipe's step budget per adapter; a ``max_steps`` given overrides it for all."""
    layers: dict[str, list[int]] = field(default_factory=dict)
    """The recipe's adapted decoder layers per adapter (peft's ``layers_to_transform``); a
    ``model.lora.layers_to_transform`` given applies to every adapter instead, and an adapter
    not named here adapts every layer. Adapters on the top layers skip the backward pass below
    them, which a decision adapter can afford and extraction cannot (docs/log/speed.md)."""
    max_eval_samples: int | None = None
    """Evaluate on a seeded sample of this many validation examples (all when unset)."""
    balance_labels: bool = field(default=False, metadata=TRAINS)
    """Train each decision adapter (compare, update) on as many examples of each label as the
    rarest label has, drawn with ``seed``. Otherwise a short budget learns the majority label
    first: update's ``add`` (half its examples), compare's conflicts. Extraction's labels are
    claim counts and stage names, not classes to balance, so its adapters train on every row."""
    balance_standing: bool = field(default=False, metadata=TRAINS)
    """With ``balance_labels``, each label's rows also split evenly between claims of one evidence
    score and of two (``standing``), where the label has both, so that whether two values are one
    cannot be read from the claims' standing. In the scenarios it can: 86% of the equivalent compare
    pairs at one key have two scores, 62% of the conflicting ones."""
    contract_per_region: int = field(default=6, metadata=TRAINS)
    """Cases of each region of the contract suite's validation part that a decision adapter's
    answers are read on after training (and at each evaluation with ``select=decisions``), every
    region weighing alike: fewer read faster and judge a collapse on less."""
    eval_steps: int = 50
    save_steps: int = 50
    save_total_limit: int | None = 2
    """Checkpoints kept for resuming; unset keeps every one (e.g. for a learning curve)."""
    select: str = field(default="last", metadata=TRAINS)
    """Which checkpoint a decision adapter (compare, update) keeps: ``last``, the final step, or
    ``decisions``, the evaluated one whose validation answers (``train/validation.py``: the
    split and the contract suite's validation part, pooled) match the gold most often, ties
    going to the one that gives the gold answers the most probability, kept by the Trainer's own
    ``load_best_model_at_end``. The answers are then read at every evaluation, so ``save_steps``
    must be a multiple of ``eval_steps``, and ``eval_steps`` then decides what the adapter is.
    Synthetic validation loss does not see a collapse; the answers do (docs/log/transfer.md).
    Extraction adapters keep their last step either way."""
    logging_steps: int = 5
    report_to: str = "tensorboard"
    """The Trainer's tracker (``train/tracking.py``): TensorBoard events under the adapter's
    ``checkpoints/runs/``, and a LOO run's held-out scores under ``<run>/tensorboard/``; ``none``
    turns both off, any tracker transformers integrates is accepted when installed."""
    lm_head: str = "labelled"
    """Where the LM head scores: ``labelled``, only the positions the loss reads (TRL does this on
    CUDA; ``train/cpu.py`` makes a CPU do it too), or ``all``, every position (TRL's default off
    Triton devices, and the first CPU recipes). The loss is the same either way."""
    cpu_bf16: bool = field(default=False, metadata=TRAINS)
    """On a CPU with native bf16 matmuls (AVX-512-BF16 or AMX), autocast to bf16; elsewhere, or
    off, fp32. The manifest records what ran. A GPU run takes bf16 from ``model.compute_dtype``."""
    packed_attention: str = "mask"
    """How the examples of a packed row attend: ``mask``, transformers' sdpa over the whole row
    with a block-diagonal mask, ``segments``, sdpa on each example alone (``train/attention.py``:
    the same outputs for a fraction of the work), or ``shared_prefix``, per example too, with the
    prompt start a row's examples share run once for the row (the same loss and gradient on
    fewer tokens), or ``varlen`` (CUDA), the row in one call of torch's flash-attention varlen
    kernel. A flash-attention model attends per example already and takes ``mask``."""
    sft: dict[str, Any] = field(default_factory=lambda: dict(RECIPE_SFT), metadata=TRAINS)
    """``trl.SFTConfig`` fields under TRL's own names, passed through as they are: any trainer
    option is one override away (``sft.lr_scheduler_type=constant``; ``+sft.<field>=...`` for
    one not listed here). Fields this config already names (``max_steps``, ``seed``, the
    ``*_steps``, ``op.*``) are set there; naming them here too is refused."""

    allow_cpu: bool = False
    """Train (and, in a LOO run, serve) a model that has no CPU recipe on a machine without
    CUDA, which is otherwise refused before any work (``core.config.check_device``)."""

    runs_here: ClassVar[bool] = True
    """Training runs on this machine, so ``recipe=auto`` reads this machine's devices."""

    def __post_init__(self) -> None:
        known_names("steps", list(self.steps), list(ADAPTERS))
        known_names("layers", list(self.layers), list(ADAPTERS))
        known_names("lm_head", [self.lm_head], list(LM_HEADS))
        known_names("packed_attention", [self.packed_attention], list(PACKED_ATTENTION))
        known_names("select", [self.select], list(SELECTS))
        if self.contract_per_region < 1:
            raise ValueError(
                f"contract_per_region={self.contract_per_region}: a decision adapter's answers are read "
                "on at least 1 contract case of each region"
            )
        if self.select == "decisions" and self.save_steps % self.eval_steps:
            raise ValueError(
                f"select=decisions keeps an evaluated checkpoint: save_steps ({self.save_steps}) must "
                f"be a multiple of eval_steps ({self.eval_steps})"
            )


@dataclass
class TrainConfig(TrainingRun):
    fold: str = ALL
    """The LOO fold whose training split this adapter learns: a trajectory's name (that one held
    out), ``synthetic`` (synthetic scenarios alone) or ``all`` (every source)."""
    holdout: str | None = None
    """The old name of ``fold``; refused with a message that names the new one."""
    resume: bool = False
    overwrite: bool = False
    prepare: bool = True
    """Build missing prerequisites first: the datasets (all folds) and a model the project builds."""
    dry_run: bool = False
    """Print the resolved config, the data's token statistics, the steps and their estimated
    time (``train/dry_run.py``); build, train and write nothing."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.model.name != MISSING:  # a config built in code fills the model in later
            safe_name("model.name", self.model.name)
        if self.holdout is not None:
            raise ValueError(f"holdout= is now fold=: pass fold={self.holdout}")
        self.check_folds("fold", [self.fold], TRAINING_FOLDS)
        if self.op.name is None:
            raise ValueError(f"op: which adapter to train? op=<{'|'.join(ADAPTERS)}>")
        known_names("op", [self.op.name], list(ADAPTERS))
        # The adapter's defaults under what the recipe and the command line set.
        defaults = asdict(ADAPTERS[self.op.name].training)
        self.op = replace(self.op, **{k: v for k, v in defaults.items() if getattr(self.op, k) is None})
        if self.max_steps is None:
            self.max_steps = self.steps.get(self.op.name, -1)
        if self.model.lora.layers_to_transform is None and self.op.name in self.layers:
            lora = replace(self.model.lora, layers_to_transform=list(self.layers[self.op.name]))
            self.model = replace(self.model, lora=lora)


def marked(cls: type, prefix: str = "") -> tuple[str, ...]:
    """The dotted names of the fields of ``cls`` marked ``TRAINS``, into the configs it nests."""
    hints = get_type_hints(cls)
    names: list[str] = []
    for f in fields(cls):
        if f.metadata.get("trains"):
            names.append(prefix + f.name)
        elif is_dataclass(hints[f.name]):
            names += marked(hints[f.name], f"{prefix}{f.name}.")
    return tuple(names)


TRAINED_WITH = marked(TrainConfig)
"""The fields that decide what an adapter learns (``TRAINS``)."""

SELECTED_WITH = ("eval_steps",)
"""The fields that decide which checkpoint ``select=decisions`` can keep: one it evaluated."""


def trained_otherwise(recorded: dict[str, Any], wanted: TrainConfig) -> dict[str, tuple[Any, Any]]:
    """Field -> (trained with, ``wanted``'s) for each of ``TRAINED_WITH`` (and under
    ``select=decisions`` of ``SELECTED_WITH``) where an adapter's manifest config (``recorded``)
    differs from the config this run would train it with. A field the manifest predates is read
    as its default: what the adapter was trained with then."""
    defaults = asdict(TrainConfig(op=OpConfig(name=wanted.op.name)))
    now = asdict(wanted)
    keys = TRAINED_WITH + (SELECTED_WITH if wanted.select == "decisions" else ())
    differ = {}
    for key in keys:
        old = _at(recorded, key, _at(defaults, key, None))
        if old != (new := _at(now, key, None)):
            differ[key] = (old, new)
    return differ


def _at(tree: dict[str, Any], key: str, otherwise: Any) -> Any:
    """The value at a dotted ``key`` of nested dicts, or ``otherwise`` when a part is missing."""
    for part in key.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return otherwise
        tree = tree[part]
    return tree


def train_config(run: TrainingRun, fold: str, adapter: str, **settings: Any) -> TrainConfig:
    """One adapter's training config from a run's: every field the run shares with train.py,
    copied as typed values, the adapter and fold set, and ``settings`` on top (e.g. ``prepare``)."""
    given = shared(run, TrainingRun)
    given["op"] = replace(given["op"], name=adapter)
    return TrainConfig(**given, fold=fold, resume=True, **settings)
