"""The run config every entry point extends, and how an entry point gets its typed config.

``RunConfig`` holds what the data build, training, the LOO harness, a replay and the Slurm
submitter share: the trajectory sources, the output directories, the seed and the base model.
Each entry point's config extends it (``data/config.py``, ``train/config.py``,
``eval/config.py``, ``slurm/config.py``), so a setting has one name and one default wherever it
is given, and a config is handed from one step to the next as a typed object.

A training recipe is chosen with ``recipe=<name>`` (``configs/recipe/``); ``recipe=auto``, the
default of train.py and memops loo, is decided here by one rule (:func:`auto_recipe`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import asdict, dataclass, field, fields
from itertools import takewhile
from pathlib import Path
from typing import Any

from memops.core.extras import installed
from memops.core.layout import ADAPTERS, DATASETS, RUNS
from memops.core.models import TRAINS, ModelConfig
from memops.core.sources import SourcesConfig

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
AUTO = "auto"


@dataclass
class RunConfig(SourcesConfig):
    datasets_dir: str = DATASETS
    adapters_dir: str = ADAPTERS
    runs_dir: str = RUNS
    """LOO runs: records, summary and report of run ``<run>`` go to ``<runs_dir>/<run>/``."""
    seed: int = field(default=0, metadata=TRAINS)
    model: ModelConfig = field(default_factory=ModelConfig)


def shared(cfg: Any, base: type) -> dict[str, Any]:
    """Copies of the fields ``cfg`` has in common with the config class ``base``: how one step's
    typed config is made from another's (a run's data build, an adapter's training)."""
    return {f.name: copy.deepcopy(getattr(cfg, f.name)) for f in fields(base)}


def auto_recipe(model: Any) -> tuple[str, str]:
    """``recipe=auto``: the model's CPU recipe where there is no CUDA device and the model has one,
    else the GPU recipe. Returns the recipe and the reason, for the one log line that says so.
    Without torch (the base install) there is no CUDA device to find."""
    if cuda_available():
        import torch

        return "gpu", f"a CUDA device ({torch.cuda.get_device_name(0)})"
    if not model.cpu_recipe:
        return "gpu", f"no CUDA device, and model {model.name} has no CPU recipe"
    return model.cpu_recipe, f"no CUDA device, so model {model.name}'s CPU recipe (recipe=gpu overrides)"


def cuda_available() -> bool:
    """A CUDA device torch can use; False where torch is not installed (the base install)."""
    if not installed("torch"):
        return False
    import torch

    return torch.cuda.is_available()


class DeviceError(RuntimeError):
    """A run this machine cannot carry: a GPU model where there is no GPU."""


def check_device(cfg: Any) -> None:
    """Refuse, before any work, to train or serve a model that has no CPU recipe (a GPU model:
    Qwen2.5-14B) on a machine without CUDA; ``allow_cpu=true`` forces it. Without this, such a
    run builds datasets, starts a 27.5 GiB download and fails hours later, or crawls."""
    if cfg.allow_cpu or cfg.model.cpu_recipe or cuda_available():
        return
    raise DeviceError(
        f"model {cfg.model.name} has no CPU recipe and this machine has no CUDA device: run it on a "
        "GPU machine (memops preflight checks one), or pass allow_cpu=true to run it here anyway"
    )


def compose(name: str, overrides: list[str]) -> Any:
    """The raw config an entry script would get from ``configs/<name>.yaml`` and these overrides,
    ``recipe=auto`` decided: inside a running Hydra app (its own config dir included) or outside."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        return resolve_recipe(hydra_compose(name, overrides=overrides), name, overrides)
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return resolve_recipe(hydra_compose(name, overrides=overrides), name, overrides)


def resolve_recipe(raw: Any, name: str, overrides: list[str]) -> Any:
    """Compose again with the recipe ``auto`` picks, so the command line still wins over it. A
    config whose training runs elsewhere (``runs_here`` false: a Slurm submission) is left as is."""
    from hydra import compose as hydra_compose
    from omegaconf import OmegaConf

    if raw.get("recipe") != AUTO or not getattr(OmegaConf.get_type(raw), "runs_here", True):
        return raw
    recipe, why = auto_recipe(raw.model)
    print(f"recipe={recipe}: {why}", flush=True)
    return hydra_compose(name, overrides=[*overrides, f"recipe={recipe}"])


def compose_config(name: str, overrides: list[str]) -> Any:
    """The typed config of ``configs/<name>.yaml`` with these overrides."""
    from omegaconf import OmegaConf

    return OmegaConf.to_object(compose(name, overrides))


class ConfigError(ValueError):
    """A config the user gave that cannot be composed or fails its schema's checks; its message
    is one line that names the field."""


def one_line(exc: BaseException) -> str:
    """An exception and its cause as one line: Hydra's and OmegaConf's messages span several
    (the override, then the key and the schema it is missing from)."""
    whole = f"{exc} {exc.__cause__}"
    if "Cannot convert 'dict' to string" in whole and (
        override := re.search(r"override ([\w.]+)\.(\w+)=", whole)
    ):  # recipe.max_steps=3: a dotted key into a field that holds a name
        head, name = override.groups()
        return (
            f"{head}.{name}: {head} holds one name ({head}=<name>), not fields of its own; "
            f"give the setting as {name}=..."
        )
    lines = [str(e).strip().splitlines()[0].rstrip(".") for e in (exc, exc.__cause__) if e and str(e).strip()]
    said = ": ".join(dict.fromkeys(lines)) or type(exc).__name__
    text = str(exc).splitlines()
    if starts := [i for i, line in enumerate(text) if line.startswith("Available options")]:
        options = list(takewhile(lambda line: line.startswith("\t"), text[starts[0] + 1 :]))
        options = [line.strip() for line in options]
        said += f" (available: {', '.join(options)})"
    return said


def validate(name: str, overrides: list[str]) -> None:
    """Compose ``configs/<name>.yaml`` with these overrides and build its typed config, raising
    ``ConfigError`` with one line on the first problem; nothing else is done (``recipe=auto``
    stays undecided, no device is looked at)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
            OmegaConf.to_object(hydra_compose(name, overrides=overrides))
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        raise ConfigError(one_line(exc)) from exc


def entry_config(raw: Any) -> Any:
    """The typed config of the running ``@hydra.main`` entry script, ``recipe=auto`` decided. A
    field its schema refuses ends the command with one line naming it, not a traceback."""
    import sys

    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    hydra = HydraConfig.get()
    try:
        return OmegaConf.to_object(resolve_recipe(raw, hydra.job.config_name, list(hydra.overrides.task)))
    except (OmegaConfBaseException, ValueError) as exc:
        sys.exit(f"memops {hydra.job.name.replace('_', '-')}: {one_line(exc)}")


def write_config(path: Path, entry: str, config: Any, by: str) -> None:
    """``config`` in full as a Hydra config file on the entry script's own config (which then
    gives only its Hydra settings), for ``--config-dir``/``--config-name``: how a job, or a child
    process, gets a config resolved elsewhere without parsing it again. ``by`` names the writer
    in the header."""
    from omegaconf import OmegaConf

    body = OmegaConf.to_yaml(OmegaConf.create(asdict(config)))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"# resolved by {by}\ndefaults:\n  - {entry}\n  - _self_\n\n{body}")
    tmp.replace(path)
