"""The steps of a leave-one-out run, and which of them are already done: the one plan that
``scripts/loo.py`` runs in a loop and ``scripts/submit.py`` turns into Slurm jobs.

    build (datasets, and the base when the project builds it) -> train (fold x op) -> evaluate
    (each fold) -> report

Done means what ``core.layout`` says: a fold's datasets are ready, an adapter is finished, the
base's build stamp exists. Evaluation and the report always run: records resume on their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from core.layout import adapter_finished, adapters_path, unready
from core.models import ModelConfig
from operators.registry import adapters
from train.builds import built


@dataclass(frozen=True)
class Plan:
    ops: tuple[str, ...]
    """The datasets built per fold, and the adapters a fold may train (a Slurm train task is
    one of them), of which a run trains those it serves."""
    unbuilt: list[str]
    """Folds whose datasets must be built first."""
    base_missing: bool
    """The project builds this base and it is not built yet."""
    untrained: list[tuple[str, str]]
    """(fold, op) adapters still to train, in fold-major order."""

    def missing(self, model: ModelConfig) -> list[str]:
        """What the build step would make, in words."""
        out = [f"datasets (missing: {', '.join(self.unbuilt)})"] if self.unbuilt else []
        return out + ([f"the {model.name} model at {model.path}"] if self.base_missing else [])

    def trains(self, fold: str) -> list[str]:
        return [op for f, op in self.untrained if f == fold]


class Run(Protocol):
    """What a plan reads from a run's config (``LooConfig`` and ``SubmitConfig`` both hold it)."""

    folds: list[str] | None
    datasets_dir: str
    adapters_dir: str
    model: ModelConfig
    extract_stages: bool

    def served_adapters(self) -> tuple[str, ...]: ...


def steps(cfg: Run, adapters_fold: str | None = None, trains: bool = True) -> Plan:
    """``adapters_fold``: one fold's adapters serve every fold. ``trains=False``: the adapters
    are given (``adapters=<dir>``) or not needed, so none is planned."""
    folds, ops = list(cfg.folds or []), adapters(cfg.extract_stages)
    adapter_folds = [adapters_fold] if adapters_fold else folds
    served = cfg.served_adapters()
    untrained = [
        (fold, op)
        for fold in adapter_folds
        for op in ops
        if trains
        and op in served
        and not adapter_finished(adapters_path(cfg.adapters_dir, cfg.model.name, fold, op))
    ]
    return Plan(
        ops=ops,
        unbuilt=unready(cfg.datasets_dir, [*folds, *(f for f in adapter_folds if f not in folds)], ops),
        base_missing=bool(cfg.model.build) and not built(cfg.model.path),
        untrained=untrained,
    )
