"""The steps of a leave-one-out run, and which of them are already done: the one plan that
``memops loo`` runs in a loop and ``memops submit`` turns into Slurm jobs.

    build (datasets, and the base when the project builds it) -> train (fold x op) -> evaluate
    (each fold) -> report

Done means what ``core.layout`` says: a fold's datasets are ready, an adapter is finished, the
base's build stamp exists. Evaluation and the report always run: records resume on their own. A
finished adapter that this run would train otherwise (another recipe, layers, budget) or on other
data (its datasets rebuilt since) is refused rather than reused: its scores would be reported as
this run's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from memops.core.layout import ADAPTER_MANIFEST, adapter_finished, adapters_path, dataset_dir, unready
from memops.core.models import ModelConfig, base_cached, on_hub
from memops.eval.config import LooConfig
from memops.operators.registry import adapters
from memops.train.builds import built
from memops.train.config import TrainingRun, train_config, trained_otherwise


class AdapterMismatch(Exception):
    """A finished adapter that this run would train with other settings."""


@dataclass(frozen=True)
class Plan:
    ops: tuple[str, ...]
    """The datasets built per fold, and the adapters a fold may train (a Slurm train task is
    one of them), of which a run trains those it serves."""
    unbuilt: list[str]
    """Folds whose datasets must be built first."""
    base_missing: bool
    """The project builds this base and it is not built yet, or it is a Hub base that is not in
    the Hugging Face cache yet."""
    untrained: list[tuple[str, str]]
    """(fold, op) adapters still to train, in the order the run's folds first need them."""

    def missing(self, model: ModelConfig) -> list[str]:
        """What the build step would make, in words."""
        out = [f"datasets (missing: {', '.join(self.unbuilt)})"] if self.unbuilt else []
        return out + ([f"the {model.name} model at {model.path}"] if self.base_missing else [])


def check_trained_as(cfg: TrainingRun, fold: str, op: str, adapter: Path, data_ready: bool) -> None:
    """Refuse a finished adapter whose manifest says it was trained otherwise than ``cfg``
    would train it, naming each field; and, once its datasets are built (``data_ready``), one
    trained on other rows than those the run would train it on."""
    from memops.train.recipe import load_splits

    manifest = adapter / ADAPTER_MANIFEST
    written = json.loads(manifest.read_text())
    wanted = train_config(cfg, fold, op)
    retrain = f"Give this run its own adapters_dir, or remove {adapter} to train it again."
    if differ := trained_otherwise(written.get("config", {}), wanted):
        said = ", ".join(f"{k}={new} (trained with {old})" for k, (old, new) in differ.items())
        raise AdapterMismatch(f"{manifest}: config: this run has {said}. {retrain}")
    if not data_ready or "dataset_fingerprint" not in written:  # nothing to compare yet, or ever
        return
    # The training rows' fingerprint (datasets hashes their content), not the validation
    # sample's after the slash: that one only decides which loss is logged.
    then = str(written["dataset_fingerprint"]).split("/")[0]
    if (now := load_splits(wanted)[2].split("/")[0]) != then:
        raise AdapterMismatch(
            f"{manifest}: dataset_fingerprint: trained on rows {then}, but "
            f"{dataset_dir(cfg.datasets_dir, fold, op)} now gives {now} (rebuilt since). {retrain}"
        )


def steps(cfg: LooConfig, trains: bool = True) -> Plan:
    """``trains=False``: the adapters are given (``adapters=<dir>``) or not needed, so none is
    planned nor checked. Each adapter is planned on the fold it trains on
    (``LooConfig.trained_on``): once for ``adapters_fold``, or once per fold. A finished adapter
    trained otherwise than this run would train it raises ``AdapterMismatch``; its data are
    checked only where the fold's datasets are built, so a run that builds them plans again
    after the build."""
    folds, ops = list(cfg.folds or []), adapters(cfg.extract_stages)
    pairs = list(dict.fromkeys((cfg.trained_on(f, op), op) for f in folds for op in ops))
    unbuilt = unready(cfg.datasets_dir, list(dict.fromkeys([*folds, *(f for f, _ in pairs)])), ops)
    served = cfg.served_adapters() if trains else ()
    untrained = []
    for fold, op in (pair for pair in pairs if pair[1] in served):
        adapter = adapters_path(cfg.adapters_dir, cfg.model.name, fold, op)
        if not adapter_finished(adapter):
            untrained.append((fold, op))
        else:
            check_trained_as(cfg, fold, op, adapter, data_ready=fold not in unbuilt)
    return Plan(
        ops=ops,
        unbuilt=unbuilt,
        base_missing=(bool(cfg.model.build) and not built(cfg.model.path))
        or (on_hub(cfg.model) and not base_cached(cfg.model)),
        untrained=untrained,
    )
