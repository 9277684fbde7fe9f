"""The Hydra schemas of the package's configs, registered in one place.

Each entry config in ``configs/`` names its schema in its defaults list (``loo.yaml``: ``-
loo_schema``), and ``op=<adapter>`` takes each adapter's defaults from the ``op`` group. Whatever
composes a config (the ``memops`` command and ``train.py`` through ``cli.hydra_entry``,
``open_memory``, the benchmarks and tests) calls ``register`` first; no module registers anything
by being imported. Registering again changes nothing.
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from memops.data.config import DataConfig
from memops.eval.config import LooConfig, ParityConfig, ReplayConfig, ReportConfig
from memops.eval.curve import CurveConfig
from memops.operators.registry import ADAPTERS
from memops.slurm.config import SubmitConfig
from memops.train.config import OpConfig, TrainConfig

SCHEMAS: dict[str, type] = {
    "data": DataConfig,
    "train": TrainConfig,
    "loo": LooConfig,
    "replay": ReplayConfig,
    "report": ReportConfig,
    "submit": SubmitConfig,
    "curve": CurveConfig,
    "parity": ParityConfig,
}
"""Each entry config (``configs/<name>.yaml``) and its schema, ``<name>_schema`` to Hydra."""


def register() -> None:
    store = ConfigStore.instance()
    for name, node in SCHEMAS.items():
        store.store(name=f"{name}_schema", node=node)
    for adapter in ADAPTERS:
        store.store(group="op", name=adapter, node=OpConfig(name=adapter))
