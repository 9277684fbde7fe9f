"""Every config under configs/ composes, and a training setting given to any entry point reaches
the adapter: the LOO harness and the Slurm submitter hand training a typed config, not strings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from memops.core.config import CONFIGS, compose_config
from memops.core.sources import MINED, SHIPPED
from memops.operators.registry import ADAPTERS, adapters
from tests.slurm.test_submit import dry_run

ENTRY = {"train": [], "loo": [], "data": [], "replay": [], "submit": [], "curve": ["adapter=a"]}
ENTRY |= {"report": ["run=r"], "parity": ["first=a", "second=b"]}
"""Each entry point's config (configs/<name>.yaml, a `memops` command or a benchmark), and what it
needs given; every other config in configs/ is a LOO run (its defaults start from loo)."""
GROUPS = {"model": "train", "recipe": "train", "backend": "loo", "profile": "submit"}
"""Each config group, and the entry config that composes it."""
PRIMARY = sorted(p.stem for p in CONFIGS.glob("*.yaml"))


def test_every_config_file_belongs_to_an_entry_point_or_a_known_group() -> None:
    groups = {p.parent.name for p in CONFIGS.glob("*/*.yaml")}
    assert groups == set(GROUPS), "a new config group needs an entry in GROUPS"
    loo_based = {
        name for name in PRIMARY if "loo" in OmegaConf.load(CONFIGS / f"{name}.yaml").get("defaults")
    }
    assert set(PRIMARY) == set(ENTRY) | loo_based


@pytest.mark.parametrize("name", PRIMARY)
def test_every_entry_config_composes_to_its_schema(name: str) -> None:
    cfg = compose_config(name, ENTRY.get(name, []))
    assert type(cfg).__name__.endswith("Config")


@pytest.mark.parametrize(
    ("group", "option"), sorted((p.parent.name, p.stem) for p in CONFIGS.glob("*/*.yaml"))
)
def test_every_group_option_composes(group: str, option: str) -> None:
    cfg = compose_config(GROUPS[group], [f"{group}={option}"])
    if group == "recipe" and option != "auto":
        assert cfg.recipe == option
    if group == "model":
        assert cfg.model.name == option


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_every_adapter_is_an_op_with_the_registrys_defaults(adapter: str) -> None:
    cfg = compose_config("train", [f"op={adapter}", "recipe=gpu"])
    assert cfg.op.max_length == ADAPTERS[adapter].training.max_length
    assert cfg.op.grad_accum == ADAPTERS[adapter].training.grad_accum


def test_recipe_auto_picks_the_models_cpu_recipe_without_cuda_and_says_so(
    capsys: pytest.CaptureFixture,
) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: auto picks gpu")
    picked = {m: compose_config("train", [f"model={m}"]).recipe for m in ("tiny", "smollm2-135m-instruct")}
    said = capsys.readouterr().out
    assert picked == {"tiny": "cpu", "smollm2-135m-instruct": "smollm2-cpu"}
    assert "recipe=cpu: no CUDA device" in said and "recipe=smollm2-cpu: no CUDA device" in said
    assert compose_config("train", ["model=qwen2.5-14b-instruct"]).recipe == "gpu"  # no CPU recipe
    told = compose_config("train", ["model=tiny", "recipe=gpu"])
    assert (told.recipe, told.max_steps, told.op.learning_rate) == ("gpu", -1, 2e-4)


def test_the_command_line_wins_over_the_recipe_and_the_recipe_over_the_registry() -> None:
    cfg = compose_config("train", ["op=compare", "model=tiny", "recipe=smollm2-cpu", "op.max_length=512"])
    assert cfg.op.max_length == 512  # command line
    assert cfg.op.learning_rate == 1e-3  # recipe
    assert cfg.op.epochs == ADAPTERS["compare"].training.epochs  # registry
    assert cfg.max_steps == 440  # the recipe's budget for compare
    assert compose_config("train", ["op=compare", "recipe=smollm2-cpu", "max_steps=7"]).max_steps == 7


def test_the_decisions_recipe_trains_on_the_mined_training_side_and_scores_every_other_trajectory() -> None:
    """``smollm2-decisions``: the synthetic fold's adapters with the mined training repositories,
    scored on every trajectory they never saw (the shipped five and the mined held-out side),
    with its own data build and the compare budget its twins need."""
    cfg = compose_config("smollm2-decisions", [])
    split = json.loads((MINED / "split.json").read_text())
    assert cfg.synthetic_plus == split["train"] and cfg.adapters_fold == "synthetic"
    assert cfg.folds == [*SHIPPED, *split["heldout"]]
    assert (cfg.value_twins, cfg.real_twins, cfg.near_twins, cfg.decisions) == (True, True, True, "judged")
    assert (cfg.steps["compare"], cfg.steps["update"]) == (1000, 120)
    assert cfg.datasets_dir != compose_config("smollm2-cpu", []).datasets_dir


def test_the_demo_trains_one_compare_adapter_in_short_rows_at_a_held_learning_rate() -> None:
    """``make demo``: read judged, it trains compare alone, on the synthetic fold with its twins,
    and that adapter gets the demo's budget, row length and schedule on the top layers; the
    recipe's own choices (cosine, 1,024-token rows) stay the other configs'."""
    from memops.train.config import train_config

    cfg = compose_config("smollm2-demo", [])
    assert cfg.served_adapters() == ("compare",)
    assert cfg.adapters_fold == "synthetic" and not cfg.synthetic_plus
    assert (cfg.value_twins, cfg.near_twins, cfg.real_twins) == (True, True, False)
    compare = train_config(cfg, "synthetic", "compare")
    assert (compare.max_steps, compare.op.max_length) == (400, 512)
    assert compare.sft["lr_scheduler_type"] == "constant_with_warmup" and compare.sft["packing"]
    assert compare.model.lora.layers_to_transform == list(range(15, 30))
    recipe = compose_config("smollm2-cpu", [])
    assert (recipe.op.max_length, recipe.sft["lr_scheduler_type"]) == (1024, "cosine")
    assert cfg.datasets_dir not in {recipe.datasets_dir, compose_config("smollm2-decisions", []).datasets_dir}


def test_the_recipes_layers_are_per_adapter_and_the_command_line_sets_them_for_all() -> None:
    """``layers`` in a recipe adapts only those layers of the adapters it names; the others
    adapt every layer. ``model.lora.layers_to_transform`` on the command line applies to every
    adapter, and ``~layers`` drops the recipe's choice."""
    recipe = OmegaConf.load(CONFIGS / "recipe" / "smollm2-cpu.yaml").layers
    smollm2 = ["model=smollm2-135m-instruct", "recipe=smollm2-cpu"]
    chosen = {
        op: compose_config("train", [f"op={op}", *smollm2]).model.lora.layers_to_transform for op in ADAPTERS
    }
    assert chosen == {op: recipe.get(op) for op in ADAPTERS} and chosen["compare"] and not chosen["update"]
    given = ["model.lora.layers_to_transform=[28,29]"]
    assert all(
        compose_config("train", [f"op={op}", *smollm2, *given]).model.lora.layers_to_transform == [28, 29]
        for op in ADAPTERS
    )
    assert compose_config("train", ["op=compare", *smollm2, "~layers"]).model.lora.layers_to_transform is None
    with pytest.raises(ValueError, match="layers: unknown"):
        compose_config("train", ["op=compare", *smollm2, "+layers.comparison=[1]"])


SETTINGS = ["model.lora.r=8", "op.max_length=512"]


@pytest.mark.slow
def test_loo_settings_reach_the_trained_adapter(
    tiny_model: Path, small_datasets: Path, tmp_path: Path
) -> None:
    """``memops loo ... model.lora.r=8 op.max_length=512``: the adapters it trains have them."""
    from memops.eval.loo import train_adapters

    cfg = compose_config(
        "tiny-demo",
        [
            *SETTINGS,
            "max_steps=1",
            "max_eval_samples=4",
            f"model.path={tiny_model}",
            f"datasets_dir={small_datasets}",
            f"adapters_dir={tmp_path}",
        ],
    )
    train_adapters(cfg, [("patch-guardrails", "compare")], tmp_path / "logs")
    adapter = tmp_path / "tiny" / "patch-guardrails" / "compare"
    assert json.loads((adapter / "adapter_config.json").read_text())["r"] == 8
    manifest = json.loads((adapter / "manifest.json").read_text())
    assert manifest["config"]["op"]["max_length"] == 512 and manifest["config"]["recipe"] == "cpu"
    assert manifest["global_step"] == 1


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to split")
def test_a_cpu_run_trains_two_adapters_at_once_each_on_half_the_cores(
    tiny_model: Path, small_datasets: Path, tmp_path: Path
) -> None:
    """A LOO run on a CPU trains its adapters two at a time, each a child on half the cores
    with its own log, and a progress bar that reads the trainer's steps from those logs."""
    from memops.eval.loo import train_adapters
    from memops.train.recipe import steps_logged

    cfg = compose_config(
        "tiny-demo",
        [
            "max_steps=2",
            "max_eval_samples=4",
            f"model.path={tiny_model}",
            f"datasets_dir={small_datasets}",
            f"adapters_dir={tmp_path}",
        ],
    )
    train_adapters(cfg, [("patch-guardrails", "compare"), ("patch-guardrails", "update")], tmp_path / "logs")
    half = len(os.sched_getaffinity(0)) // 2
    for op in ("compare", "update"):
        manifest = json.loads((tmp_path / "tiny" / "patch-guardrails" / op / "manifest.json").read_text())
        assert manifest["global_step"] == 2 and manifest["threads"] == half
        log = tmp_path / "logs" / f"train-patch-guardrails-{op}.log"
        assert steps_logged(log, 2) == 2 and steps_logged(log, 3) == 0


def test_slurm_job_configs_carry_the_settings_and_each_adapters_own_budget(tmp_path: Path) -> None:
    """A SmolLM2 submission with the smollm2-cpu recipe: every training task's config has its
    adapter's step budget, and the command line's model and op settings, as do the eval jobs."""
    overrides = ["profile=cpu", "model=smollm2-135m-instruct", "recipe=smollm2-cpu", "extract_stages=true"]
    dry_run(tmp_path, *overrides, "folds=[patch-guardrails]", *SETTINGS)
    configs = tmp_path / "loo" / "smollm2-135m-instruct-hf" / "configs"
    budgets = OmegaConf.load(CONFIGS / "recipe" / "smollm2-cpu.yaml").steps
    layers = OmegaConf.load(CONFIGS / "recipe" / "smollm2-cpu.yaml").layers
    for adapter in adapters(stages=True):
        job = OmegaConf.load(configs / "train" / "patch-guardrails" / f"{adapter}.yaml")
        assert (job.op.name, job.max_steps) == (adapter, budgets[adapter])
        assert job.model.lora.layers_to_transform == layers.get(adapter)
        assert (job.model.lora.r, job.op.max_length, job.recipe) == (8, 512, "smollm2-cpu")
    evaluation = OmegaConf.load(configs / "eval" / "patch-guardrails" / "job.yaml")
    assert (evaluation.model.lora.r, evaluation.op.max_length, evaluation.steps.compare) == (
        8,
        512,
        budgets.compare,
    )


@pytest.mark.parametrize("batch", [0, -1])
def test_a_batch_below_one_is_refused_before_any_work(batch: int) -> None:
    """It once wrote a report of dashes with exit code 0 (-1) or crashed in range() (0)."""
    with pytest.raises(Exception, match=rf"batch={batch}: samples per operator call must be 1 or more"):
        compose_config("loo", [f"batch={batch}"])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("decisions=sample", "decisions='sample': one of decode, read"),
        ("contract=[learned,oracle]", r"contract=\['oracle'\]: the variants are learned, prompted, symbolic"),
    ],
)
def test_decision_settings_out_of_range_are_refused(override: str, message: str) -> None:
    with pytest.raises(Exception, match=message):
        compose_config("loo", [override])


def test_contract_draw_settings_out_of_range_are_refused() -> None:
    from memops.data.config import DataConfig

    with pytest.raises(ValueError, match="contract_per_episode=-1: must be 0 or more"):
        DataConfig(contract_per_episode=-1)
    with pytest.raises(ValueError, match=r"no region \[.evidence.\]; the regions: unrelated"):
        DataConfig(contract_weights={"evidence": 12})
    with pytest.raises(ValueError, match="weights are 1 or more"):
        DataConfig(contract_weights={"exact tie": 0})
    with pytest.raises(ValueError, match=r"near_misses=1\.5: a share, between 0 and 1"):
        DataConfig(near_misses=1.5)


HTTP_LOGGERS = ("httpx", "httpx2")


@pytest.mark.parametrize("name", PRIMARY)
def test_entry_scripts_log_their_messages_and_not_each_http_request(name: str) -> None:
    """A vLLM pass sends thousands of requests; httpx and the OpenAI client's httpx2 log each at
    INFO, which hid the progress."""
    import logging.config

    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(name, overrides=ENTRY.get(name, []), return_hydra_config=True)
    logging.config.dictConfig(OmegaConf.to_container(cfg.hydra.job_logging))
    try:
        assert logging.getLogger("memops.eval.loo").isEnabledFor(logging.INFO)
        assert not any(logging.getLogger(n).isEnabledFor(logging.INFO) for n in HTTP_LOGGERS)
    finally:
        for n in HTTP_LOGGERS:
            logging.getLogger(n).setLevel(logging.NOTSET)


def test_what_an_adapter_learns_is_read_from_the_fields_marked_trains() -> None:
    """``TRAINED_WITH`` comes from the ``TRAINS`` marks, nested configs included: a marked field
    that differs refuses a finished adapter, an unmarked one (how often it evaluates) does not."""
    from dataclasses import asdict

    from memops.train.config import TRAINED_WITH, OpConfig, TrainConfig, trained_otherwise

    wanted = TrainConfig(op=OpConfig(name="compare"))
    recorded = asdict(wanted)
    assert trained_otherwise(recorded, wanted) == {}
    recorded["model"]["lora"]["r"], recorded["eval_steps"], recorded["seed"] = 8, 7, 3
    assert trained_otherwise(recorded, wanted) == {"seed": (3, 0), "model.lora.r": (8, 16)}
    assert {"sft", "op.learning_rate", "model.compute_dtype"} <= set(TRAINED_WITH)
    assert not {"eval_steps", "lm_head", "packed_attention", "model.name"} & set(TRAINED_WITH)
    # Selecting by the answers keeps an evaluated checkpoint, so there how often it evaluates counts.
    wanted.select = recorded["select"] = "decisions"
    assert trained_otherwise(recorded, wanted) == {
        "seed": (3, 0),
        "model.lora.r": (8, 16),
        "eval_steps": (7, 50),
    }
