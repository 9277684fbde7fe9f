"""Typed config of the data build; Hydra rejects unknown keys and ill-typed values against it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memops.core.config import RunConfig, shared
from memops.core.layout import TRAINING_FOLDS
from memops.operators.contract import DIFFICULTY


@dataclass
class DataConfig(RunConfig):
    """Writes ``datasets_dir``; the model's tokenizer (``model.path``) counts the card's tokens."""

    scenarios_per_family: int = 40
    noisy_per_family: int = 10
    noise: int = 3
    """Extra noise sessions per long-noise scenario, and how much chatter pads each note."""
    compare_per_label: int = 2
    """Sampled compare pairs per label and episode, on top of the contradictions met in replay."""
    contract_per_episode: int = 12
    """Contract cases per synthetic episode and decision: cells of the decision space the engine
    defines, each region in proportion to its difficulty, written in the episode's own names and
    values (``operators.contract``), so that no region of the contract is missing from training."""
    contract_weights: dict[str, int] = field(default_factory=lambda: dict(DIFFICULTY))
    """Each region's weight in that draw, by default its difficulty (``operators.contract``); one
    given on the command line replaces its default, ``contract_weights={evidence decides: 12}``:
    the region balance of the training data, a lever of the decision recipe (docs/log/transfer.md)."""
    near_misses: float = 0.0
    """The share of the contract compare cases whose values differ that set a value against a
    near miss of itself, its first number changed (``14 shards`` against ``28 shards``), rather than
    another of the slot's values: the counterpart of the restated value, so that telling one value
    from another is learned from the values and not from the claims' standing. With
    ``value_twins``, also the share of twins of pairs whose values are one that write a near miss
    of the first value, a list's item dropped or added too, and half the restating twins change
    the value's case (``operators.contract.value_twin``; docs/log/transfer.md)."""
    value_twins: bool = False
    """Follow each synthetic compare pair at one key with its twin: the same claims, standings
    and times, the second value moved to the other side of "one value or two" (restated where
    the two differ, another of the slot's values where they are one), so that whether two values
    are one is learned from the values and not from the claims' standing or time
    (``operators.contract.value_twin``; docs/log/transfer.md)."""
    real_twins: bool = False
    """With ``value_twins``, twin the compare pairs of the trajectories a train split takes as
    well (a real list restated, a real one-value pair against another value or a near miss); the
    validation and test splits keep a trajectory's pairs as written (``data.build.trained_only``)."""
    near_twins: bool = False
    """With ``value_twins``, a second twin of each twinned pair on its own side of "one value or
    two": where the values differ, the first value less or more one item (or its number moved),
    as real requirement lists change; where they are one, the first restated in another case. A
    long list against itself less an item then comes beside its restatement
    (``operators.contract.near_twin``; docs/log/transfer.md)."""
    validation_fraction: float = 0.2
    extract_stages: bool = False
    """Also write ``extract-stages``: the extract examples plus the two-stage extractor's own
    (select the pairs, fill one pair), built from the same gold claims with the inference prompts."""
    extract_stage_ratio: float | None = None
    """Stage examples per direct example in ``extract-stages``, drawn per episode; unset keeps
    them all (about 1.9 per direct example)."""
    real_trajectories: int | None = None
    """How many of the other trajectories a trajectory fold trains on, in annotation order; unset:
    all of them (the paper's protocol). 0 trains it on synthetic scenarios alone. Folds ``all`` and
    ``synthetic`` are not affected. For the data-scaling table (benchmarks/data_scaling.py)."""
    real_repeat: int = 1
    """How many times a train split holds each trajectory example it takes. The four other
    trajectories give about 3% of a fold's extract-stages rows, so a 100-step adapter sees a
    handful; above 1 weights them against the synthetic rows (the paper's protocol on
    extraction, docs/log/extraction.md)."""
    synthetic_plus: list[str] = field(default_factory=list)
    """Trajectories the ``synthetic`` fold's train split takes beside the scenarios (a
    data-scaling point: the mined training repositories, ``mined-train`` in one word,
    ``benchmarks/mined_scaling.py``). Its adapters list them in their manifests, and no run scores
    them with those adapters. Here, in ``real_validation`` and in ``folds`` the words ``shipped``,
    ``mined-train`` and ``mined-held-out`` stand for their trajectories (``core.sources.GROUPS``)."""
    real_validation: list[str] = field(default_factory=list)
    """Trajectories every fold's validation split holds beside the scenarios' and no train split
    takes: real decisions that ``select=decisions`` chooses checkpoints by (the mined training
    repositories). Adapters list them in their manifests, so no run scores them with those
    adapters, and no fold is built for one."""
    folds: list[str] | None = None
    """Unset: every trajectory the annotations hold but those of ``real_validation``, then ``all``
    and ``synthetic``."""
    validate: bool = False
    progress: bool = True

    def __post_init__(self) -> None:
        self.synthetic_plus = self.named_folds("synthetic_plus", self.synthetic_plus)
        self.real_validation = self.named_folds("real_validation", self.real_validation)
        if self.folds is None:
            names = self.sources().names()
            self.folds = [*(n for n in names if n not in self.real_validation), *TRAINING_FOLDS]
        self.folds = self.named_folds("folds", self.folds, TRAINING_FOLDS)
        if both := sorted(set(self.folds) & set(self.real_validation)):
            raise ValueError(f"folds: {both} are in real_validation: every fold validates on them")
        if both := sorted(set(self.synthetic_plus) & set(self.real_validation)):
            raise ValueError(
                f"real_validation: {both} are in synthetic_plus: validate on trajectories not trained on"
            )
        # Sets, kept in the sources' order (the build's): the same set in another order is the
        # same build, and a run comparing it with the manifest must see it so.
        self.synthetic_plus = [n for n in self.sources().names() if n in self.synthetic_plus]
        self.real_validation = [n for n in self.sources().names() if n in self.real_validation]
        if self.extract_stage_ratio is not None and self.extract_stage_ratio < 0:
            raise ValueError(f"extract_stage_ratio={self.extract_stage_ratio}: must be 0 or more")
        unknown = sorted(set(self.contract_weights) - set(DIFFICULTY))
        if unknown:
            raise ValueError(f"contract_weights: no region {unknown}; the regions: {', '.join(DIFFICULTY)}")
        if low := {r: w for r, w in self.contract_weights.items() if w < 1}:
            raise ValueError(f"contract_weights: {low}: weights are 1 or more (no region left out)")
        if not 0 <= self.near_misses <= 1:
            raise ValueError(f"near_misses={self.near_misses}: a share, between 0 and 1")
        if self.real_twins and not self.value_twins:
            raise ValueError(
                "real_twins=true twins the trajectories' pairs beside the scenarios': set value_twins=true"
            )
        if self.near_twins and not self.value_twins:
            raise ValueError("near_twins=true adds a second twin to each value twin: set value_twins=true")
        if self.contract_per_episode < 0:
            raise ValueError(f"contract_per_episode={self.contract_per_episode}: must be 0 or more")
        if self.real_repeat < 1:
            raise ValueError(f"real_repeat={self.real_repeat}: must be 1 or more")
        if self.real_trajectories is not None and self.real_trajectories < 0:
            raise ValueError(f"real_trajectories={self.real_trajectories}: must be 0 or more")
        if not 0 < self.validation_fraction < 1:
            raise ValueError(f"validation_fraction={self.validation_fraction}: must lie between 0 and 1")


def data_config(run: RunConfig, **settings: Any) -> DataConfig:
    """The data build of a run (all folds, its sources, seed and model), ``settings`` on top."""
    return DataConfig(**shared(run, RunConfig), **settings)
