"""Typed config of memops submit; Hydra rejects unknown keys against it.

Cluster details (resources, partition, account) live here and in the sbatch templates, never
in the training or evaluation code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from memops.core.config import AUTO
from memops.eval.config import LooConfig

STEPS = ("prepare", "train", "eval", "report")
_MEM = re.compile(r"\d+[KMGT]?")
_TIME = re.compile(r"(\d+-)?\d+(:\d{2}){0,2}")
_NAME = re.compile(r"[A-Za-z0-9._-]+")


@dataclass
class Resources:
    """One job's request; each field becomes an sbatch option that wins over the template's."""

    gpus: int = 1
    """GPUs per job (``--gres=gpu:N``; 0 sends ``--gres=none``)."""
    cpus: int = 16
    mem: str = "96G"
    time: str = "12:00:00"
    partition: str | None = None
    extra: list[str] = field(default_factory=list)
    """Further sbatch options, e.g. ``[--constraint=h100, --qos=high]``."""

    def check(self, step: str) -> None:
        where = f"resources.{step}"
        if self.gpus < 0 or self.cpus < 1:
            raise ValueError(f"{where}: gpus must be >= 0 and cpus >= 1 (got {self.gpus}, {self.cpus})")
        if not _MEM.fullmatch(self.mem):
            raise ValueError(f"{where}.mem={self.mem!r}; expected a Slurm size such as 96G or 16000M")
        if not _TIME.fullmatch(self.time):
            raise ValueError(f"{where}.time={self.time!r}; expected [days-]hours:minutes:seconds")
        bad = [e for e in self.extra if not e.startswith("--") or "\n" in e]
        if bad:
            raise ValueError(f"{where}.extra: {bad} are not single --option[=value] arguments")


@dataclass
class StepResources:
    """H100 defaults, as in the templates; configs/profile/ holds the per-cluster values."""

    prepare: Resources = field(default_factory=lambda: Resources(0, 4, "16G", "01:00:00"))
    train: Resources = field(default_factory=lambda: Resources(1, 16, "96G", "12:00:00"))
    eval: Resources = field(default_factory=lambda: Resources(1, 16, "96G", "06:00:00"))
    report: Resources = field(default_factory=lambda: Resources(0, 2, "8G", "00:30:00"))


@dataclass
class SubmitConfig(LooConfig):
    """A LOO run on a cluster: every field of ``LooConfig`` (what is trained, how and what is
    scored) reaches the jobs as typed configs, plus the cluster's own settings below."""

    run: str = "qwen2.5-14b-instruct-vllm"
    """Records and report go to ``<runs_dir>/<run>/``; also the prefix of the job names."""
    resources: StepResources = field(default_factory=StepResources)
    logs_dir: str = "logs"
    prepare: bool = True
    """Submit the prepare job when datasets (or the tiny model) are missing."""
    accelerate_config: str | None = None
    """Multi-GPU training: ``ddp`` or ``fsdp_qlora`` (the shipped ``slurm/accelerate/<name>.yaml``) or
    the path of an accelerate config of your own; unset: one process."""
    hf_home: str | None = None
    """The cluster's Hugging Face home, on a filesystem every node sees: the prepare job fetches
    a Hub base into it once, and the training and eval jobs read it with the Hub offline. Unset:
    the jobs' own ``HF_HOME``. A base in a local folder (``model.path``) needs neither."""
    account: str | None = None
    python: str | None = None
    """The interpreter the jobs run; unset: the one running this script."""
    sbatch: str = "sbatch"
    """sbatch to call; scancel is taken from the same folder."""
    runs_here: ClassVar[bool] = False
    """The jobs train on the cluster's nodes: ``recipe=auto`` is not decided on this machine."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.folds:
            raise ValueError(f"folds: none given; expected some of {', '.join(self.sources().names())}")
        if len(set(self.folds)) != len(self.folds):
            raise ValueError(f"folds: {self.folds} names a fold twice")
        if not _NAME.fullmatch(self.run):
            raise ValueError(f"run={self.run!r}; use letters, digits, '.', '_' and '-' only")
        if self.backend.kind == "symbolic":
            raise ValueError("backend=symbolic needs no cluster; run memops loo backend=symbolic")
        if self.recipe == AUTO:
            raise ValueError(
                "recipe=auto: this machine's devices say nothing of the nodes'; name the recipe the "
                "training jobs run (recipe=gpu, recipe=cpu, recipe=smollm2-cpu)"
            )
        if self.adapters_fold is not None:
            raise ValueError("adapters_fold: not on Slurm yet; run memops loo adapters_fold=...")
        for step in STEPS:
            getattr(self.resources, step).check(step)
