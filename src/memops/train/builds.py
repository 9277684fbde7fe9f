"""Models the project builds itself, by builder name, and Hub bases fetched into the cache.

A model config says how its weights come to exist (``build: tiny`` or ``build: smollm2``);
``train.py``, ``memops loo``, the Slurm prepare job and ``memops make-model`` all call
:func:`ensure_model`, so no caller tests a model's name to decide whether to build it.
"""

from __future__ import annotations

from pathlib import Path

from memops.core.models import BASE_FILES, ModelConfig, base_cached, check_base, hub_cache, on_hub


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


def fetch_base(cfg: ModelConfig) -> Path:
    """Download a Hub base into the Hugging Face cache (config, safetensors, tokenizer) and check
    what arrived: the one download a cluster makes, in its prepare job."""
    from huggingface_hub import snapshot_download

    check_base(cfg)  # offline: fail with the fix instead of a download error
    print(f"fetching {cfg.path} into {hub_cache()} (safetensors only)", flush=True)
    folder = Path(snapshot_download(repo_id=cfg.path, allow_patterns=BASE_FILES))
    if not (folder / "config.json").is_file() or not any(folder.glob("*.safetensors")):
        raise FileNotFoundError(f"{cfg.path}: the download at {folder} has no config.json or safetensors")
    return folder


def ensure_model(cfg: ModelConfig, force: bool = False) -> None:
    """Build ``cfg.path`` with its builder when it is missing (or always, with ``force``); fetch a
    Hub base into the cache when it is not there yet."""
    if cfg.build is None:
        if on_hub(cfg) and (force or not base_cached(cfg)):
            fetch_base(cfg)
        return
    if cfg.build not in BUILDERS:
        raise ValueError(f"model.build={cfg.build!r}; expected one of {', '.join(BUILDERS)}")
    if force or not built(cfg.path):
        print(f"building model {cfg.name} at {cfg.path} (memops make-model)", flush=True)
        BUILDERS[cfg.build](Path(cfg.path), force)
