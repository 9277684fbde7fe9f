"""Typed configs of the evaluation entry points; Hydra rejects unknown keys against them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from memops.core.config import RunConfig
from memops.core.folds import Fold
from memops.core.layout import SYNTHETIC
from memops.core.names import known_names, safe_path
from memops.data.config import DataConfig, data_config
from memops.eval.calibration import CALIBRATION_NOTES
from memops.eval.contract import VARIANTS as CONTRACT_VARIANTS
from memops.eval.harness import BATCH
from memops.operators.backends.factory import BackendConfig
from memops.operators.engine import MODES
from memops.operators.learned import (
    DECODINGS,
    EXTRACT_MODES,
    OPT_IN_MODES,
    STAGED_MODES,
    decision_adapters,
    mode_adapter,
)
from memops.operators.registry import adapters
from memops.train.config import TrainingRun


@dataclass
class ReplayConfig(RunConfig):
    trajectory: str = "patch-guardrails"
    engine: str = "symbolic"
    """Which operators drive the engine: symbolic | learned | hybrid (``operators.engine.MODES``)."""
    operators: str | None = None
    """The old name of ``engine``; refused with a message that names the new one."""
    extract: str = "direct"
    """direct | two-stage | two-stage-trained | two-stage-scored | two-stage-overlap |
    two-stage-mixed | direct-trained | two-stage-read | two-stage-proposed (the last seven need an
    ``extract-stages`` adapter)."""
    prior_weight: float = 0.0
    """two-stage-scored and two-stage-mixed: how much of the adapter's prior the selection divides out
    (``operators.learned.pair_scores``); a LOO run places it on validation data
    (``eval.calibration``) and writes it to its ``calibration/``."""
    select_none: bool = True
    """two-stage-scored: the empty answer may win, and a note select no pair; placed with
    ``prior_weight``."""
    mix_weight: float = 0.5
    """two-stage-mixed: the adapter's share of each pair's score, the rest the overlap rule's
    (``operators.learned.mixed_scores``); a LOO run places it with ``prior_weight``."""
    backend: BackendConfig = field(default_factory=BackendConfig)
    adapters: str | None = None
    """A directory holding extract/, compare/ and update/; default: the trajectory's LOO fold."""
    budget: int = 1700

    def __post_init__(self) -> None:
        self.check_folds("trajectory", [self.trajectory])
        if self.operators is not None:
            raise ValueError(f"operators= is now engine=: pass engine={self.operators}")
        if self.engine not in MODES:
            raise ValueError(f"engine={self.engine!r}; expected one of {', '.join(MODES)}")
        if self.extract not in EXTRACT_MODES:
            raise ValueError(f"extract={self.extract!r}; expected one of {', '.join(EXTRACT_MODES)}")


@dataclass
class LooConfig(TrainingRun):
    """A LOO run: what it evaluates, and (from ``TrainingRun``) how it trains missing adapters."""

    run: str = "tiny-hf"
    """Run name: records and report go to ``<runs_dir>/<run>/``; rerunning it resumes."""
    folds: list[str] | None = None
    """Unset: every trajectory the annotations hold but those of ``synthetic_plus`` and
    ``real_validation``. Here and in those two lists the words ``shipped``, ``mined-train`` and
    ``mined-held-out`` stand for their trajectories (``core.sources.GROUPS``)."""
    backend: BackendConfig = field(default_factory=BackendConfig)
    adapters: str | None = None
    """A root holding ``<fold>/{extract,compare,update}``; unset: ``<adapters_dir>/<model>``,
    where missing adapters are trained first."""
    adapters_fold: str | None = None
    """Evaluate every fold with this training fold's adapters instead of each fold's own:
    ``synthetic`` holds no trajectory in training, so its 3 adapters are held-out for all five."""
    own_adapters: list[str] = field(default_factory=list)
    """Adapters that each fold trains on its own training split even though ``adapters_fold``
    serves the others: ``[extract-stages]`` with ``real_repeat=30`` scores extraction under the
    paper's protocol (the four other trajectories in training) beside synthetic-only decisions
    (docs/log/extraction.md)."""
    extract_stages: bool = False
    """Also build the ``extract-stages`` data, train its adapter and score two-stage-trained,
    two-stage-scored and two-stage-overlap extraction beside direct and grammar-only two-stage."""
    real_trajectories: int | None = None
    """How many of the other trajectories each fold's own adapters train on (``DataConfig``'s
    field, passed to the build); give the run its own ``datasets_dir`` and ``adapters_dir``."""
    real_repeat: int = 1
    """How many times a fold's train split holds each trajectory example it takes (``DataConfig``'s
    field, passed to the build)."""
    synthetic_plus: list[str] = field(default_factory=list)
    """Trajectories the ``synthetic`` fold trains on beside the scenarios (``DataConfig``'s field,
    passed to the build); a run scoring with that fold's adapters holds them out of ``folds``.
    Give the run its own ``datasets_dir`` and ``adapters_dir``."""
    real_validation: list[str] = field(default_factory=list)
    """Trajectories every fold's validation split holds and no fold trains on or scores: real
    decisions for ``select=decisions`` to choose checkpoints by (``DataConfig``'s field, passed
    to the build); the run holds them out of ``folds``. Give the run its own ``datasets_dir``
    and ``adapters_dir``."""
    near_misses: float = 0.0
    """The share of contract compare cases whose values differ that set a value against a near
    miss of itself, and with ``value_twins`` the share of one-value pairs' twins that do
    (``DataConfig``'s field, passed to the build). Give the run its own
    ``datasets_dir`` and ``adapters_dir``."""
    value_twins: bool = False
    """Follow each synthetic compare pair at one key with its value twin (``DataConfig``'s field,
    passed to the build). Give the run its own ``datasets_dir`` and ``adapters_dir``."""
    real_twins: bool = False
    """With ``value_twins``, the trained trajectories' compare pairs' twins too (``DataConfig``'s
    field, passed to the build). Give the run its own ``datasets_dir`` and ``adapters_dir``."""
    near_twins: bool = False
    """With ``value_twins``, each twinned pair's near twin too (``DataConfig``'s field, passed to
    the build). Give the run its own ``datasets_dir`` and ``adapters_dir``."""
    extract_modes: list[str] | None = None
    """The learned extraction variants scored and replayed; unset: every one the adapters allow
    (the ``STAGED_MODES`` with ``extract_stages``) but the ``OPT_IN_MODES``. A parity pass can
    keep ``[direct]``; ``[]`` is a decisions-only run, which neither trains nor serves an extract
    adapter."""
    favour_note: float = 0.0
    """Stage 2 of the two-stage variants adds this to the logits of the note's own tokens (a
    study of values copied from the note; ``LearnedOperators.favour_note``). 0: off."""
    typed_selection: bool = False
    """The two-stage modes keep no selected pair whose slot's type the note holds no value of
    (``LearnedOperators.typed_selection``); false scores the selection as the adapter made it."""
    calibration_notes: int = CALIBRATION_NOTES
    """two-stage-scored and two-stage-mixed: validation notes read for each half of the selections'
    reading: scenario notes that place the prior weight, and notes that decide whether the empty
    answer may win and the mix weight (``eval.calibration``)."""
    contract: list[str] = field(default_factory=lambda: list(CONTRACT_VARIANTS))
    """The variants scored on the contract suite's test part (``eval/contract.py``), with the
    first set of adapters the run loads; [] scores none."""
    decisions: str = "decode"
    """How the learned compare and update answer: ``decode`` (greedy under the schema's grammar)
    , ``read`` (the allowed answer the adapter finds most likely), ``calibrated`` (read, after
    the per-answer offsets the adapter's validation answers fitted) or ``contract`` (read among
    the answers the rules leave open once the claims' keys, evidence and times have spoken: the
    adapter judges whether two values are one value) or ``judged`` (contract, with update's judgment
    of values asked of the compare adapter; ``LearnedOperators.decisions``)."""
    replay: bool = True
    """Replay every held-out trajectory through the engine after scoring (the report's engine
    rows); a parity pass compares operator outputs and can leave it out."""
    prompted: bool = True
    """Score the prompted base (the model without adapters, same prompts and grammar) beside the
    adapters; a study of the adapters alone can leave it out, and then has no learned-vs-prompted
    test. Its extraction takes longer than the adapters' on a CPU."""
    wait_for_training_s: float = 0.0
    """0: the run trains the adapters it lacks, then scores. Above 0: other jobs are training
    them (``benchmarks/bench_heldout.py`` starts the hf pass beside the last training): the run
    trains none and waits up to this long for each. ``hf`` scores meanwhile what the finished
    adapters serve and loads each other one once it is finished; ``vllm`` waits for them all,
    since its server loads its adapters when it starts."""
    batch: int = BATCH
    """Samples per operator call; records are flushed after each batch."""
    progress: bool = True
    dry_run: bool = False
    """Print the plan (what is built, trained, scored and replayed, with estimated times,
    ``eval/dry_run.py``; memops submit: the sbatch argument lists) and write nothing."""

    def learned_modes(self) -> tuple[str, ...]:
        if self.extract_modes is not None:
            return tuple(self.extract_modes)
        allowed = (m for m in EXTRACT_MODES if self.extract_stages or m not in STAGED_MODES)
        return tuple(m for m in allowed if m not in OPT_IN_MODES)

    def data(self, **settings: Any) -> DataConfig:
        """The data build the run reads: its sources and seed, and the staged data and
        real-trajectory count and weight it names (``settings`` on top)."""
        return data_config(
            self,
            extract_stages=self.extract_stages,
            real_trajectories=self.real_trajectories,
            real_repeat=self.real_repeat,
            synthetic_plus=self.synthetic_plus,
            real_validation=self.real_validation,
            near_misses=self.near_misses,
            value_twins=self.value_twins,
            real_twins=self.real_twins,
            near_twins=self.near_twins,
            **settings,
        )

    def served_adapters(self) -> tuple[str, ...]:
        """The adapters the run trains and serves: those its reading of the decisions asks
        (``decision_adapters``) and those its learned extraction modes run on."""
        used = {*decision_adapters(self.decisions), *(mode_adapter(m) for m in self.learned_modes())}
        return tuple(a for a in adapters(self.extract_stages) if a in used)

    def trained_on(self, fold: str, adapter: str) -> str:
        """The fold whose training split the adapter that evaluates ``fold`` trains on."""
        if self.adapters_fold and adapter not in self.own_adapters:
            return self.adapters_fold
        return fold

    def synthetic_fold(self) -> Fold:
        """The ``synthetic`` fold the run's data build makes."""
        return Fold.of(SYNTHETIC, self.synthetic_plus, real_validation=self.real_validation)

    def shares_adapters(self) -> bool:
        """One set of adapters evaluates every fold: one backend, one vLLM server, for the run."""
        return bool(self.adapters_fold) and not self.own_adapters

    def __post_init__(self) -> None:
        super().__post_init__()
        safe_path("run", self.run)
        if self.op.name is not None:
            raise ValueError(f"op.name={self.op.name!r}: a run trains every adapter; op.* applies to all")
        if self.calibration_notes < 1:
            raise ValueError(f"calibration_notes={self.calibration_notes}: must be 1 or more")
        if self.decisions not in DECODINGS:
            raise ValueError(f"decisions={self.decisions!r}: one of {', '.join(DECODINGS)}")
        unknown = sorted(set(self.contract) - set(CONTRACT_VARIANTS))
        if unknown:
            raise ValueError(f"contract={unknown}: the variants are {', '.join(CONTRACT_VARIANTS)}")
        if self.batch < 1:
            raise ValueError(f"batch={self.batch}: samples per operator call must be 1 or more")
        if self.wait_for_training_s < 0:
            raise ValueError(f"wait_for_training_s={self.wait_for_training_s}: must be 0 (off) or more")
        known_names("extract_modes", self.extract_modes or [], list(EXTRACT_MODES))
        for mode in set(STAGED_MODES) & set(self.extract_modes or []):
            if not self.extract_stages:
                raise ValueError(f"extract_modes: {mode} needs extract_stages=true (its adapter)")
        self.synthetic_plus = self.named_folds("synthetic_plus", self.synthetic_plus)
        self.real_validation = self.named_folds("real_validation", self.real_validation)
        synthetic = self.synthetic_fold()
        if self.folds is None:
            self.folds = [n for n in self.sources().names() if not synthetic.saw(n)]
        self.folds = self.named_folds("folds", self.folds)
        known_names("own_adapters", self.own_adapters, adapters(self.extract_stages))
        if self.own_adapters and not self.adapters_fold:
            raise ValueError(
                f"own_adapters={list(self.own_adapters)} with adapters_fold=null: every fold "
                "already trains its own adapters; own_adapters names those adapters_fold does not serve"
            )
        named = [f"real_trajectories={self.real_trajectories}"] if self.real_trajectories is not None else []
        repeats = self.real_repeat != 1 and not self.synthetic_plus  # synthetic_plus takes real_repeat
        named += [f"real_repeat={self.real_repeat}"] if repeats else []
        if named and self.adapters_fold == SYNTHETIC and not self.own_adapters:
            raise ValueError(
                f"{', '.join(named)} with adapters_fold={SYNTHETIC}: the synthetic fold trains on "
                "no trajectory; set adapters_fold=null to train each fold's own, or name the "
                "adapters each fold trains in own_adapters"
            )
        if validated := sorted(set(self.folds) & set(self.real_validation)):
            raise ValueError(
                f"folds: {validated} are in real_validation: every fold's checkpoints were chosen "
                "on them; score the trajectories no fold validates on"
            )
        scored = [f for f in self.folds if synthetic.saw(f)]
        if scored and self.adapters_fold == SYNTHETIC:
            raise ValueError(
                f"folds: {scored} are in synthetic_plus, so the synthetic fold's adapters trained on "
                "them; score the trajectories it holds out"
            )
        if self.adapters_fold not in (None, SYNTHETIC):
            raise ValueError(
                f"adapters_fold={self.adapters_fold!r}: only {SYNTHETIC!r} holds every trajectory out"
            )


@dataclass
class ReportConfig:
    run: str = MISSING
    """A LOO run's directory (``<runs_dir>/<run>``); its records are read, nothing is scored."""
    merge: list[str] | None = None
    """First gather the records Slurm eval jobs wrote under ``<run>/folds/<fold>/``."""


@dataclass
class ParityConfig:
    first: str = MISSING
    """A LOO run's directory; ``second`` is another run over the same samples."""
    second: str = MISSING
