"""Typed configs of the evaluation entry points; Hydra rejects unknown keys against them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore

from core.models import ModelConfig
from data.build import SYNTHETIC, datasets_of
from data.names import known_names, safe_path
from data.sources import SourcesConfig
from operators.backends.factory import BackendConfig
from operators.engine import MODES
from operators.learned import EXTRACT_MODES


@dataclass
class ReplayConfig(SourcesConfig):
    trajectory: str = "patch-guardrails"
    engine: str = "symbolic"
    """Which operators drive the engine: symbolic | learned | hybrid (``operators.engine.MODES``)."""
    operators: str | None = None
    """The old name of ``engine``; refused with a message that names the new one."""
    extract: str = "direct"
    """direct | two-stage | two-stage-trained (needs an ``extract-stages`` adapter)."""
    backend: BackendConfig = field(default_factory=BackendConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    adapters: str | None = None
    """A directory holding extract/, compare/ and update/; default: the trajectory's LOO fold."""
    adapters_dir: str = "outputs/adapters"
    budget: int = 1700

    def __post_init__(self) -> None:
        known_names("trajectory", [self.trajectory], self.sources().names())
        if self.operators is not None:
            raise ValueError(f"operators= is now engine=: pass engine={self.operators}")
        if self.engine not in MODES:
            raise ValueError(f"engine={self.engine!r}; expected one of {', '.join(MODES)}")
        if self.extract not in EXTRACT_MODES:
            raise ValueError(f"extract={self.extract!r}; expected one of {', '.join(EXTRACT_MODES)}")


@dataclass
class LooConfig(SourcesConfig):
    run: str = "tiny-hf"
    """Run name: records and report go to ``<out_dir>/<run>/``; rerunning it resumes."""
    folds: list[str] | None = None
    """Unset: every trajectory the annotations hold."""
    model: ModelConfig = field(default_factory=ModelConfig)
    backend: BackendConfig = field(default_factory=BackendConfig)
    adapters: str | None = None
    """A root holding ``<fold>/{extract,compare,update}``; unset: ``<adapters_dir>/<model>``,
    where missing adapters are trained first."""
    adapters_fold: str | None = None
    """Evaluate every fold with this training fold's adapters instead of each fold's own:
    ``synthetic`` holds no trajectory in training, so its 3 adapters are held-out for all five."""
    adapters_dir: str = "outputs/adapters"
    datasets_dir: str = "outputs/datasets"
    out_dir: str = "outputs/loo"
    seed: int = 0
    train_overrides: list[str] = field(default_factory=list)
    """train.py overrides used when an adapter has to be trained (e.g. max_steps=30)."""
    op_train_overrides: dict[str, list[str]] = field(default_factory=dict)
    """Per-operator train.py overrides, applied after ``train_overrides`` (e.g. a step budget
    per operator: compare learns slowest); ``extract-stages`` names the staged extract adapter."""
    extract_stages: bool = False
    """Also build the ``extract-stages`` data, train its adapter and score two-stage-trained
    extraction beside direct and grammar-only two-stage."""
    extract_modes: list[str] | None = None
    """The learned extraction variants scored and replayed; unset: every one the adapters allow
    (``two-stage-trained`` with ``extract_stages``). A parity pass can keep ``[direct]``."""
    replay: bool = True
    """Replay every held-out trajectory through the engine after scoring (the report's engine
    rows); a parity pass compares operator outputs and can leave it out."""
    batch: int = 32
    """Samples per operator call; records are flushed after each batch."""
    progress: bool = True

    def learned_modes(self) -> tuple[str, ...]:
        if self.extract_modes is not None:
            return tuple(self.extract_modes)
        return tuple(m for m in EXTRACT_MODES if self.extract_stages or m != "two-stage-trained")

    def __post_init__(self) -> None:
        safe_path("run", self.run)
        known_names("extract_modes", self.extract_modes or [], list(EXTRACT_MODES))
        if "two-stage-trained" in (self.extract_modes or []) and not self.extract_stages:
            raise ValueError("extract_modes: two-stage-trained needs extract_stages=true (its adapter)")
        names = self.sources().names()
        if self.folds is None:
            self.folds = names
        known_names("folds", self.folds, names)
        if unknown := sorted(set(self.op_train_overrides) - set(datasets_of(True))):
            raise ValueError(
                f"op_train_overrides: unknown operator {unknown}; expected some of {datasets_of(True)}"
            )
        if self.adapters_fold not in (None, SYNTHETIC):
            raise ValueError(
                f"adapters_fold={self.adapters_fold!r}: only {SYNTHETIC!r} holds every trajectory out"
            )


def compose_config(name: str, overrides: list[str]) -> Any:
    """The typed config an entry script would get from ``configs/<name>.yaml`` and these overrides,
    inside a running Hydra app or outside one."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    if GlobalHydra.instance().is_initialized():
        return OmegaConf.to_object(compose(name, overrides=overrides))
    configs = Path(__file__).resolve().parents[1] / "configs"
    with initialize_config_dir(config_dir=str(configs), version_base="1.3"):
        return OmegaConf.to_object(compose(name, overrides=overrides))


ConfigStore.instance().store(name="replay_schema", node=ReplayConfig)
ConfigStore.instance().store(name="loo_schema", node=LooConfig)
