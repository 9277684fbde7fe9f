"""The held-out run with a real model on CPU, uninterrupted and timed.

    python benchmarks/bench_heldout.py [--config-name smollm2-cpu] [--root outputs/bench/heldout] [...]

One command, everything under ``--root``, each step a child process (argument lists) as it is
a job under Slurm, with its config resolved here and handed over as a file (``<root>/configs/``);
Hydra overrides after the options reach every step, the root's paths excepted
(``model.lora.layers_to_transform=[15,...,29]`` benchmarks a recipe change):

1. the base (``memops make-model``) and the datasets (``memops build-data``);
2. each adapter, one ``train.py`` each: ``adapters_fold``'s, and each fold's own of those named
   in ``own_adapters``. Two at a time, each on half the cores, the longest step budget first, the
   next on the first half free (``--training-apart``: one after the other on all of them), since
   two small trainings side by side do more work a second than one on both cores;
3. ``memops loo --config-name <config>``: the five folds on ``hf``, engine replays included, on
   the first lane the trainings leave; it scores what the finished adapters serve and waits for
   those still in training (``wait_for_training_s``);
4. the same config with ``backend=vllm`` on the next lane free once every training has ended.
   The two passes run at once, each pinned to half the cores (``--passes-apart``: one after the
   other; with it, ``--training-apart`` or ``--passes-after-training`` the passes start once every
   training has ended);
5. the parity of the two runs per operator and variant (``eval/parity.py``): identical raw text
   for every model call, identical final values and answers for every replay.

Scoring runs in a process that trained nothing. It prints the wall time of each step and each
pass's phases, the training tokens/s and their share of the matmul peak of the cores they had
(``benchmarks/throughput.py``), the pooled held-out figures and the parity; writes them to
``<root>/heldout.json`` and draws the steps per core in ``<root>/timeline.png``. A rerun resumes
and runs only what is left, so its times are those of what was left: give a new ``--root`` for
a timing. A rerun with other overrides stops before any step if a finished adapter was trained
otherwise (``eval/plan.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Collection, Mapping
from pathlib import Path

from throughput import flops_per_token, matmul_peak, token_mix
from timeline import IN_LANES, OVERLAPPED, PASS_STAGE, SIDE_BY_SIDE, phase_row, plot

from memops import schemas
from memops.core.config import compose_config, write_config
from memops.core.lanes import LaneFailed, halves, in_lanes
from memops.core.layout import OUTPUTS
from memops.eval.config import LooConfig
from memops.eval.loo import PHASES
from memops.eval.parity import parity as decoding_parity
from memops.eval.plan import AdapterMismatch, steps
from memops.eval.tables import cell
from memops.train.config import train_config
from memops.train.cpu import cpu_model, matmul_flags, native_bf16

ROOT = Path(__file__).resolve().parents[1]
BENCH = "benchmarks/bench_heldout.py"
TRAINING_WAIT_S = 24 * 3600
"""How long the hf pass may wait for an adapter still in training: a failed training stops it
sooner (``in_lanes``), so this bound only ends a wait nothing else would."""


def run(name: str, argv: list[str], log: Path, clock: float) -> dict:
    """Run one child on every core, with its output written to ``log``; see ``in_lanes``."""
    return lanes({name: (argv, log)}, [os.sched_getaffinity(0)], clock)[name]


def lanes(
    jobs: dict[str, tuple[list[str], Path]],
    cores: list[set[int]],
    clock: float,
    after: Mapping[str, Collection[str]] | None = None,
) -> dict[str, dict]:
    """``in_lanes`` from the repository root; a failed step ends the benchmark with its line."""
    try:
        return in_lanes(jobs, cores, clock, after, cwd=ROOT)
    except LaneFailed as failed:
        sys.exit(str(failed))


def span(ran: dict[str, dict]) -> float:
    """The wall seconds of jobs run in lanes, from the first start to the last end."""
    return max(r["start"] + r["seconds"] for r in ran.values()) - min(r["start"] for r in ran.values())


def trained(cfg: LooConfig, fold: str, op: str) -> str:
    """An adapter's name in the benchmark's steps: the op, and the fold where each trains its own."""
    return op if fold == cfg.adapters_fold else f"{op} {fold}"


def cost(config: dict, datasets: Path) -> float:
    """FLOPs per trained token of an adapter, from its resolved config and training rows."""
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    from memops.core.models import LoraSpec

    rows = load_from_disk(str(datasets / config["fold"] / config["op"]["name"]))["train"]
    mix = token_mix(rows, AutoTokenizer.from_pretrained(config["model"]["path"]))
    return flops_per_token(config["model"]["path"], LoraSpec(**config["model"]["lora"]), mix)


def training_figures(m: dict, token_flops: float, peaks: dict[str, float], cores: int) -> dict:
    """One adapter's training figures from its manifest ``m``. The matmul peak was measured on
    all ``cores``; the adapter is held to the share of them its torch threads had (one a core it
    could run on, as its manifest records), so one trained in a lane, or linked from another run,
    is not held to every core. ``token_flops``: FLOPs a trained token costs (``cost``)."""
    rate = m["tokens_seen"] / m["wall_seconds"]
    gflops = rate * token_flops / 1e9
    precision = m["device"]["precision"]
    return {
        "steps": m["global_step"],
        "tokens": m["tokens_seen"],
        "tokens_per_second": round(rate, 1),
        "gflops": round(gflops, 1),
        "precision": precision,
        "cores": m["threads"],
        "share_of_peak": round(gflops / (peaks[precision] * m["threads"] / cores), 3),
        "eval_loss": m["eval_loss"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config-name", default="smollm2-cpu")
    parser.add_argument("--root", type=Path, default=Path(OUTPUTS) / "bench" / "heldout")
    parser.add_argument(
        "--passes-apart",
        action="store_true",
        help="run the hf and vLLM passes one after the other on every core, not side by side, "
        "once every training has ended",
    )
    parser.add_argument(
        "--training-apart",
        action="store_true",
        help="train the adapters one after the other on every core, not two at a time, and start "
        "the passes once every training has ended",
    )
    parser.add_argument(
        "--passes-after-training",
        action="store_true",
        help="start the passes once every training has ended, not the hf pass on the first lane free",
    )
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for every step")
    args = parser.parse_args()
    schemas.register()
    root = args.root.resolve()
    (root / "logs").mkdir(parents=True, exist_ok=True)
    model_path = root / "models" / compose_config(args.config_name, args.overrides).model.name
    where = [
        *args.overrides,
        f"model.path={model_path}",
        f"datasets_dir={root / 'datasets'}",
        f"adapters_dir={root / 'adapters'}",
        f"runs_dir={root / 'loo'}",
    ]
    cfg: LooConfig = compose_config(args.config_name, where)
    if not cfg.adapters_fold:
        sys.exit(
            f"{args.config_name}: the benchmark serves every fold from one fold's adapters "
            "(adapters_fold), but those in own_adapters"
        )
    try:
        plan = steps(cfg)
    except AdapterMismatch as exc:  # a recipe change benchmarked on a root trained otherwise
        sys.exit(f"{exc}\nA timing needs a new --root.")
    peaks = {"float32": matmul_peak("float32")}  # before any step, with the machine to itself
    if native_bf16():
        peaks["bf16"] = matmul_peak("bfloat16")
    configs, logs, py = root / "configs", root / "logs", sys.executable
    cores, clock = os.sched_getaffinity(0), time.perf_counter()
    walls, schedule = {}, {}  # walls: the steps one after another (a group in lanes is one)

    def alone(name: str, argv: list[str], log: Path) -> None:
        schedule[name] = run(name, argv, log, clock)
        walls[name] = schedule[name]["seconds"]

    def grouped(jobs: dict[str, tuple[list[str], Path]], apart: bool, group: str) -> None:
        if apart or len(cores) < 2 or len(jobs) < 2:
            for name, job in jobs.items():
                alone(name, *job)
            return
        ran = lanes(jobs, halves(cores), clock)
        schedule.update(ran)
        walls[group] = span(ran)

    if plan.base_missing:
        make = [py, "-m", "memops", "make-model", cfg.model.name, "--path", str(model_path)]
        alone("model", make, logs / "model.log")
    if plan.unbuilt:
        write_config(configs / "prepare.yaml", "data", cfg.data(progress=False), by=BENCH)
        data = [py, "-m", "memops", "build-data", "--config-dir", str(configs), "--config-name", "prepare"]
        alone("datasets", data, logs / "datasets.log")
    trainings = {}
    for fold, op in sorted(plan.untrained, key=lambda fold_op: -cfg.steps.get(fold_op[1], 0)):
        name = trained(cfg, fold, op)
        file = name.replace(" ", "-")
        write_config(
            configs / "train" / f"{file}.yaml", "train", train_config(cfg, fold, op, prepare=False), by=BENCH
        )
        train = [py, "train.py", "--config-dir", str(configs / "train"), "--config-name", file]
        trainings[f"train {name}"] = (train, logs / f"train-{file}.log")
    loo = [py, "-m", "memops", "loo", "--config-name", args.config_name, *where]
    passes = {
        "hf": ([*loo, "run=hf"], logs / "hf.log"),
        "vllm": ([*loo, "run=vllm", "backend=vllm"], logs / "vllm.log"),
    }
    if args.passes_after_training or args.training_apart or args.passes_apart or len(cores) < 2:
        grouped(trainings, args.training_apart, IN_LANES)
        grouped(passes, args.passes_apart, SIDE_BY_SIDE)
    else:
        # The hf pass takes the first lane the trainings leave and waits for the adapters still
        # in training; the vLLM pass, whose server loads every adapter as it starts, the next.
        passes["hf"][0].append(f"wait_for_training_s={TRAINING_WAIT_S}")
        ran = lanes({**trainings, **passes}, halves(cores), clock, after={"vllm": list(trainings)})
        schedule.update(ran)
        walls[OVERLAPPED] = span(ran)
    parity = decoding_parity(root / "loo" / "hf", root / "loo" / "vllm")

    stages = {"model build": json.loads((model_path / "build.json").read_text())["seconds"]}
    if "datasets" in walls:
        stages["datasets build"] = walls["datasets"]
    training = {}
    for manifest in sorted((root / "adapters").glob("*/*/*/manifest.json")):
        m = json.loads(manifest.read_text())
        op = trained(cfg, manifest.parent.parent.name, manifest.parent.name)
        stages[f"adapter {op}"] = m["wall_seconds"]
        training[op] = training_figures(m, cost(m["config"], root / "datasets"), peaks, len(cores))
    stages |= {group: walls[group] for group in (IN_LANES, SIDE_BY_SIDE, OVERLAPPED) if group in walls}
    for backend, stage in PASS_STAGE.items():
        stages[stage] = schedule[backend]["seconds"]
        phases = json.loads((root / "loo" / backend / "manifest.json").read_text())["phases"]
        stages |= {phase_row(backend, phase): phases[phase] for phase in PHASES if phases[phase]}
    summary = json.loads((root / "loo" / "hf" / "summary.json").read_text())
    result = {
        "config": args.config_name,
        "overrides": args.overrides,
        "cpu": f"{cpu_model()} ({' '.join(matmul_flags())})",
        "matmul_peak_gflops": {k: round(v, 1) for k, v in peaks.items()},
        "wall_seconds": {**walls, "total": sum(walls.values())},
        "schedule": schedule,
        "stages": {k: round(v, 1) for k, v in stages.items()},
        "training": training,
        "pooled": summary["mean"],
        "selection": summary["selection"].get("all folds", {}),
        "value_by_wording": summary["value_by_wording"],
        "parity": parity,
    }
    (root / "heldout.json").write_text(json.dumps(result, indent=2) + "\n")
    timeline = plot(result, root / "timeline.png")

    print(f"\nwall time: {result['wall_seconds']['total'] / 60:.1f} min in all")
    for name, seconds in result["stages"].items():
        print(f"  {name:40s} {seconds:8.0f} s")
    print(
        f"\ntraining on {result['cpu']}, matmul peak "
        + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in peaks.items())
    )
    for op, t in training.items():
        rate, share = t["tokens_per_second"], t["share_of_peak"]
        print(
            f"  {op:16s} {t['steps']:4d} steps, {t['tokens']:7d} tokens, {rate:6.1f} tokens/s, "
            f"{t['gflops']:5.0f} GFLOP/s on {t['cores']} core(s) = {share:.0%} of their {t['precision']} peak"
        )
    print("\npooled held-out, exact match / claim F1 with 95% CIs:")
    for variant in summary["mean"]:
        cells = [
            f"{m} {cell(summary['mean'][variant][m])}"
            for m in ("compare", "update", "extract", "extract_value", "engine_state", "engine_state_value")
        ]
        print(f"  {variant:18s} " + "; ".join(cells))
    print("\nselection (stage 1), pooled pairs: precision / recall")
    for variant, c in result["selection"].items():
        counts = f"{c['selected']} selected, {c['gold']} gold"
        print(f"  {variant:18s} {c['precision']:.2f} / {c['recall']:.2f} ({counts})")
    print("\nvalue F1 by the gold value's wording: verbatim in the note / paraphrased")
    for variant, sides in result["value_by_wording"].items():
        print(f"  {variant:18s} {cell(sides['verbatim'])} / {cell(sides['paraphrased'])}")
    print("\nparity hf vs vllm (identical raw text; replays: identical final values and answers):")
    for name, row in parity.items():
        print(f"  {name:20s} {row['identical']:4d}/{row['samples']:<4d} {row['share']:.1%}")
    print(f"\n-> {root / 'heldout.json'}\n-> {timeline}")


if __name__ == "__main__":
    main()
