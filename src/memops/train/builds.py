"""Models the project builds itself, by builder name.

A model config says how its weights come to exist (``build: tiny`` or ``build: smollm2``);
``train.py``, ``memops loo``, the Slurm prepare job and ``memops make-model`` all call
:func:`ensure_model`, so no caller tests a model's name to decide whether to build it.
"""

from __future__ import annotations

from pathlib import Path

from memops.core.models import ModelConfig


def _tiny(out: Path, force: bool) -> Path:
    from memops.train.tiny import build

    return build(out, force=force)


def _smollm2(out: Path, force: bool) -> Path:
    from memops.train.smollm2 import build

    return build(out, force=force)


BUILDERS = {"tiny": _tiny, "smollm2": _smollm2}


def built(path: str | Path) -> bool:
    """A finished build: builders write ``build.json`` last, after the weights."""
    return (Path(path) / "build.json").exists()


def ensure_model(cfg: ModelConfig, force: bool = False) -> None:
    """Build ``cfg.path`` with its builder when it is missing (or always, with ``force``)."""
    if cfg.build is None:
        return
    if cfg.build not in BUILDERS:
        raise ValueError(f"model.build={cfg.build!r}; expected one of {', '.join(BUILDERS)}")
    if force or not built(cfg.path):
        print(f"building model {cfg.name} at {cfg.path} (memops make-model)", flush=True)
        BUILDERS[cfg.build](Path(cfg.path), force)
