"""The LOO run: datasets, adapters, backend; then the operators of every fold served by that
backend, then their engine replays; records throughout, and the report. Each step reuses what
exists, so a rerun of the same config resumes."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from memops.core.config import check_device, cuda_available
from memops.core.determinism import cpu_threads
from memops.core.files import write_atomic
from memops.core.lanes import halves
from memops.core.layout import adapter_finished, adapters_path, run_dir, test_file
from memops.core.locks import exclusive
from memops.core.sessions import Episode
from memops.data.manifest import fingerprint, write_manifest
from memops.data.problems import DataError, Problem
from memops.data.trajectory import load_trajectory
from memops.eval.calibration import calibrate, calibration_json, reading_name
from memops.eval.config import LooConfig
from memops.eval.contract import CONTRACT_RECORDS, score_contract
from memops.eval.harness import ask_replays, load_test, replay_fold, score_fold
from memops.eval.plan import Plan, check_trained_as, steps
from memops.eval.report import build_report
from memops.eval.scored import Records, RecordsError
from memops.operators.adapters import calibration, collapse_warning
from memops.operators.backends.factory import ServedBackend, check_given_server, check_unseen, open_backend
from memops.operators.backends.hf import HFBackend
from memops.operators.backends.symbolic import SymbolicBackend
from memops.operators.learned import PLACED_MODES, LearnedOperators, mode_adapter
from memops.operators.registry import DECISIONS, OPS, adapters
from memops.train.builds import ensure_model
from memops.train.card import record_heldout
from memops.train.config import train_config
from memops.train.tracking import HELDOUT_EVENTS, TENSORBOARD, check_tracker, log_scalars


def build_datasets(cfg: LooConfig, missing: list[str]) -> None:
    """Build the ``missing`` folds the run needs: those alone into a fresh folder or beside folds
    built with the run's settings; every fold where the folder was built otherwise, which a
    partial build may not mix with (``data.pipeline.check_partial_rebuild``)."""
    from memops.data.pipeline import BUILD_KEYS, built_otherwise
    from memops.data.pipeline import build as build_data

    data = cfg.data(progress=cfg.progress)
    if not built_otherwise(data, BUILD_KEYS):
        data = cfg.data(folds=missing, progress=cfg.progress)
    print(f"building datasets into {cfg.datasets_dir}: {', '.join(data.folds)}", flush=True)
    build_data(data)


RUN_DATA_KEYS = (
    "seed",
    "real_trajectories",
    "real_repeat",
    "synthetic_plus",
    "real_validation",
    "near_misses",
    "value_twins",
    "real_twins",
    "near_twins",
)
"""The data settings a LOO run names itself: the datasets it reads must have been built with them."""


def check_datasets(cfg: LooConfig) -> None:
    """Refuse datasets built with another seed or real-trajectory count than this run's: the
    run would train and score on data its manifest does not describe."""
    from memops.data.pipeline import built_otherwise

    if differ := built_otherwise(cfg.data(), RUN_DATA_KEYS):
        said = ", ".join(f"{k}={new} (built with {old})" for k, (old, new) in differ.items())
        manifest = Path(cfg.datasets_dir) / "manifest.json"
        raise DataError(
            [
                Problem(
                    manifest,
                    None,
                    "config",
                    f"this run has {said}: rebuild them (memops build-data with the same "
                    "settings) or give the run a datasets_dir of its own, which it builds",
                )
            ]
        )


def train_adapters(cfg: LooConfig, pairs: list[tuple[str, str]], logs: Path) -> None:
    """Train each ``(fold, op)`` adapter of ``pairs`` on its fold. On a GPU one after another,
    each in a child process, which this process then hands to the backend (a vLLM server takes
    most of its memory). On a CPU of two cores or more, two at a time, each a child process on
    half the cores, its log in ``logs`` (``train_in_lanes``); on one core, in this process."""
    from memops.train.recipe import train_adapter, train_in_child, train_in_lanes

    cfgs = [train_config(cfg, fold, op) for fold, op in pairs]
    if not cuda_available() and len(cfgs) > 1 and cpu_threads() > 1:
        names = ", ".join(f"{c.fold} {c.op.name}" for c in cfgs)
        print(f"training the adapters {names}, two at a time", flush=True)
        manifests = train_in_lanes(cfgs, halves(os.sched_getaffinity(0)), logs)
        for c, manifest in zip(cfgs, manifests, strict=True):  # the children's lines are in their logs
            if warning := collapse_warning(c.op.name, manifest):
                print(warning, file=sys.stderr, flush=True)
    else:
        train = train_in_child if cuda_available() else train_adapter
        manifests = []
        for c in cfgs:
            print(f"{c.fold}: training the {c.op.name} adapter", flush=True)
            manifests.append(train(c))
    for c, manifest in zip(cfgs, manifests, strict=True):
        loss, seconds = manifest["eval_loss"], manifest["wall_seconds"]
        print(f"{c.fold}: {c.op.name} adapter: eval loss {loss:.4f}, {seconds:.0f} s")


POLL_S = 10.0
"""How often a run waiting for adapters looks for their manifests."""


def wait_for_adapters(cfg: LooConfig, pairs: list[tuple[str, str]]) -> None:
    """Wait until other jobs have finished training the ``(fold, op)`` adapters of ``pairs``, up
    to ``wait_for_training_s`` in all; each is then held to the settings this run would have
    trained it with, as a finished adapter found at the start is (``eval.plan``)."""
    deadline = time.monotonic() + cfg.wait_for_training_s
    for fold, op in pairs:
        adapter = adapters_path(cfg.adapters_dir, cfg.model.name, fold, op)
        if not adapter_finished(adapter):
            print(f"{fold}: waiting for the {op} adapter, in training elsewhere ({adapter})", flush=True)
        while not adapter_finished(adapter):
            if (left := deadline - time.monotonic()) <= 0:
                raise TimeoutError(
                    f"{adapter}: not finished after wait_for_training_s={cfg.wait_for_training_s:g} s "
                    f"(is its training running? its log says; wait_for_training_s=0 trains it here)"
                )
            time.sleep(min(POLL_S, left))
        check_trained_as(cfg, fold, op, adapter, data_ready=True)


def fold_adapters(cfg: LooConfig, fold: str) -> Path:
    """The folder of the adapters trained on ``fold``: under ``adapters=<root>``, or else
    ``adapters_dir``."""
    return (
        Path(cfg.adapters) / fold if cfg.adapters else adapters_path(cfg.adapters_dir, cfg.model.name, fold)
    )


def adapters_of(cfg: LooConfig, fold: str) -> dict[str, Path]:
    """The adapters that evaluate ``fold``, by name: each that of the fold it trains on
    (``LooConfig.trained_on``)."""
    return {a: fold_adapters(cfg, cfg.trained_on(fold, a)) / a for a in adapters(stages=True)}


ADAPTER_FIGURES: dict[str, tuple[tuple[str, str], ...]] = {
    "extract": (("direct", "extract"), ("direct", "extract_value")),
    "extract-stages": (("two-stage-trained", "extract"), ("two-stage-trained", "extract_value")),
    "compare": (("direct", "compare"), ("decisions", "engine_state")),
    "update": (("direct", "update"), ("decisions", "engine_state")),
}
"""The held-out figures an adapter's model card shows: (report variant, metric) per adapter."""


def record_adapter_figures(cfg: LooConfig, summary: dict[str, Any]) -> None:
    """Write each scored adapter's held-out figures into its folder and refresh its model card:
    pooled over the folds for one that served them all (``adapters_fold``'s), else its own fold's."""
    for op, wanted in ADAPTER_FIGURES.items():
        owners = {cfg.trained_on(fold, op) for fold in cfg.folds}
        if owners.isdisjoint(cfg.folds):  # trained outside the folds, it served them all
            scored = dict.fromkeys(owners, summary["mean"])
        else:
            scored = {fold: summary["folds"][fold] for fold in cfg.folds if fold in summary["folds"]}
        for fold, table in scored.items():
            adapter = adapters_path(cfg.adapters_dir, cfg.model.name, fold, op)
            figures = {
                f"{metric} ({variant})": table[variant][metric]
                for variant, metric in wanted
                if variant in table
            }
            if adapter_finished(adapter) and figures:
                record_heldout(adapter, cfg.run, figures)


SETTINGS = "settings.json"
"""The settings a run's records were made with (``run_settings``); a resume must match them."""


def run_settings(cfg: LooConfig) -> dict[str, Any]:
    """What decides a run's records: the backend, the base and the dtype it scores in, which
    adapters serve which folds, the seed, and the held-out examples themselves (their files'
    fingerprint)."""
    learned = cfg.backend.kind != "symbolic"
    return {
        "backend": cfg.backend.kind,
        "model": cfg.model.name,
        "model_path": cfg.model.path,
        "dtype": cfg.backend.compute_dtype(cfg.model) if learned else None,
        "adapters": str(fold_adapters(cfg, cfg.adapters_fold or "<fold>")) if learned else None,
        **({"own_adapters": list(cfg.own_adapters)} if cfg.own_adapters else {}),  # absent when none
        "seed": cfg.seed,
        **({"favour_note": cfg.favour_note} if cfg.favour_note else {}),  # absent when off
        **({"decisions": cfg.decisions} if cfg.decisions != "decode" else {}),  # absent by default
        **({"typed_selection": True} if cfg.typed_selection else {}),  # absent by default
        "test_examples": fingerprint(test_file(cfg.datasets_dir, f, op) for f in cfg.folds for op in OPS),
    }


def check_settings(out: Path, records: Records, settings: dict[str, Any]) -> None:
    """Refuse to resume records made under other settings, naming each difference; the records
    would otherwise be reused as if this run had scored them."""
    path = out / SETTINGS
    if path.exists() and records.records:
        before = json.loads(path.read_text())
        differ = {k: (before.get(k), v) for k, v in settings.items() if before.get(k) != v}
        if differ:
            said = "; ".join(
                f"{k}: records made with {old!r}, this run has {new!r}" for k, (old, new) in differ.items()
            )
            raise RecordsError(
                f"{out}: {len(records.records)} records belong to other settings ({said}). "
                "Give this run another name (run=...), or remove the folder to score again."
            )
    write_atomic(path, json.dumps(settings, indent=2, sort_keys=True) + "\n")


def place_reading(cfg: LooConfig, out: Path, fold: str, ops: LearnedOperators) -> None:
    """The scoring selections' reading (prior weight, empty answer or not, mix weight) for ``fold``'s
    adapters, placed on the validation split of the fold they were trained on; written once
    under ``calibration/`` and read on resume, as are the notes' reads a stopped run made."""
    path = out / "calibration" / f"{fold}.json"
    if not path.exists():
        print(f"{fold}: placing the scoring selection's reading on validation notes", flush=True)
        reads = path.with_suffix(".reads.jsonl")
        found = calibrate(
            ops, cfg.datasets_dir, fold, cfg.seed, cfg.calibration_notes, reads, cfg.batch, cfg.progress
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, calibration_json(found))
    said = json.loads(path.read_text())
    if "mix_weight" not in said:
        raise RecordsError(f"{path}: placed by an older calibration, which placed no mix weight; remove it")
    ops.prior_weight, ops.select_none = float(said["prior_weight"]), bool(said["select_none"])
    ops.mix_weight = float(said["mix_weight"])
    reading = reading_name(ops.prior_weight, ops.select_none)
    print(
        f"{fold}: scoring selection reads prior weight {reading} (stated pairs' mean reciprocal "
        f"rank {said['ranking'][str(ops.prior_weight)]:.2f} over {len(said['ranked'])} notes; selection "
        f"F1 {said['f1'][reading]:.2f}, precision {said['precision']:.2f}, recall {said['recall']:.2f}, "
        f"{said['notes']} notes); two-stage-mixed leans {ops.mix_weight} on the adapter (selection F1 "
        f"{said['mixing'][str(ops.mix_weight)]:.2f})",
        flush=True,
    )


PHASES = (
    "datasets",
    "base",
    "training",
    "adapter wait",
    "backend start",
    "calibration",
    "operators",
    "contract suite",
    "engine replays",
)
"""Where a run's wall time goes, in the manifest's ``phases``: a pass's model calls are one share
of it, and the figures say which part of a slow pass to work on. Like
``wall_seconds``, they time this process: a resumed run's are those of what it had left."""


@contextmanager
def timed(phases: dict[str, float], phase: str) -> Iterator[None]:
    began = time.perf_counter()
    try:
        yield
    finally:
        phases[phase] += time.perf_counter() - began


def evaluate(cfg: LooConfig, overrides: list[str] | None = None) -> dict[str, Any]:
    """The run, holding its folder's lock: two runs on one name once wrote duplicate records."""
    if cfg.backend.kind != "symbolic":  # the rules train nothing and log no held-out scalars
        check_tracker(cfg.report_to)
        check_device(cfg)
    out = run_dir(cfg.runs_dir, cfg.run)
    with exclusive(out / ".lock", "LOO run"):
        return _evaluate(cfg, out, overrides)


def _evaluate(cfg: LooConfig, out: Path, overrides: list[str] | None) -> dict[str, Any]:
    """The run's phases in order: prepare (datasets, settings, base), then each set of adapters
    trained, served and scored on its folds, then the manifest and the report."""
    out.mkdir(parents=True, exist_ok=True)
    records = Records(out / "records.jsonl")
    began = time.perf_counter()
    phases = dict.fromkeys(PHASES, 0.0)
    plan, settings = prepare(cfg, out, records, phases)
    serving: dict[str, Any] = {}
    # One backend per set of adapters: each fold's own, or one for every fold when they share
    # the adapters of ``adapters_fold`` (a single vLLM server then serves the whole run).
    sets = [cfg.folds] if cfg.shares_adapters() else [[f] for f in cfg.folds]
    for folds in sets:
        score_set(cfg, out, folds, plan, records, phases, serving, suite=folds == sets[0])
    return finish(cfg, out, overrides, settings, records, phases, serving, time.perf_counter() - began)


def prepare(
    cfg: LooConfig, out: Path, records: Records, phases: dict[str, float]
) -> tuple[Plan, dict[str, Any]]:
    """What the run needs before any adapter: a given server checked, the datasets built and
    checked, the run's settings checked against its records, the base built."""
    check_given_server(cfg.backend, cfg.served_adapters(), cfg.folds)
    trains = not cfg.adapters and cfg.backend.kind != "symbolic"
    plan = steps(cfg, trains)
    if plan.unbuilt:
        with timed(phases, "datasets"):
            build_datasets(cfg, plan.unbuilt)
        plan = steps(cfg, trains)  # the reused adapters' data checked, now built
    check_datasets(cfg)
    settings = run_settings(cfg)
    check_settings(out, records, settings)
    if plan.base_missing and cfg.backend.kind != "symbolic":
        with timed(phases, "base"):
            ensure_model(cfg.model)
    return plan, settings


def ready_adapters(
    cfg: LooConfig, out: Path, folds: list[str], plan: Plan, phases: dict[str, float]
) -> tuple[dict[str, Path] | None, dict[str, str], list[str]]:
    """The adapters that score ``folds``: their folders (None for the rules), the fold each
    trains on, and those other jobs are still training (``wait_for_training_s``); the others
    are trained here first, or waited for when a server must load them all as it starts."""
    owner = {a: cfg.trained_on(folds[0], a) for a in cfg.served_adapters()}
    if cfg.backend.kind == "symbolic":
        return None, owner, []
    dirs, elsewhere = adapters_of(cfg, folds[0]), []
    untrained = [a for a in owner if (owner[a], a) in plan.untrained and not adapter_finished(dirs[a])]
    if cfg.wait_for_training_s:
        elsewhere = untrained
    else:
        with timed(phases, "training"):
            train_adapters(cfg, [(owner[a], a) for a in untrained], out / "logs")
    if elsewhere and cfg.backend.kind != "hf":  # a server loads its adapters as it starts
        with timed(phases, "adapter wait"):
            wait_for_adapters(cfg, [(owner[a], a) for a in elsewhere])
        elsewhere = []
    return dirs, owner, elsewhere


def score_set(
    cfg: LooConfig,
    out: Path,
    folds: list[str],
    plan: Plan,
    records: Records,
    phases: dict[str, float],
    serving: dict[str, Any],
    suite: bool,
) -> None:
    """One set of adapters on its folds: trained if missing, checked never to have seen a fold
    it scores, served, then every fold's operators scored, the contract suite (``suite``, the
    first set) and the engine replays."""
    episodes = {f: load_trajectory(f, cfg.sources()) for f in folds}
    name = cfg.adapters_fold if cfg.shares_adapters() else folds[0]  # whose set of adapters
    dirs, owner, elsewhere = ready_adapters(cfg, out, folds, plan, phases)
    log = out / "logs" / f"serve-{name}.log"
    needs = [a for a in cfg.served_adapters() if a not in elsewhere]
    if dirs is not None:  # given (adapters=<root>) or trained here: none saw a fold it scores
        check_unseen({a: dirs[a] for a in needs}, folds)
    with ExitStack() as stack:
        with timed(phases, "backend start"):
            backend = stack.enter_context(
                open_backend(cfg.backend, cfg.model, dirs, list(episodes.values()), log, needs)
            )
        # hf: the adapters still in training, loaded once they finish; one that finished
        # since the plan was loaded with the others, and is checked as they were.
        missing = [a for a in elsewhere if isinstance(backend, HFBackend) and a not in backend.adapters]
        wait_for_adapters(cfg, [(owner[a], a) for a in elsewhere if a not in missing])
        if isinstance(backend, SymbolicBackend):
            remember_gold(backend, Path(cfg.datasets_dir), folds)
        if isinstance(backend, ServedBackend):
            serving[name] = backend.describe()
        ops = LearnedOperators(
            backend, favour_note=cfg.favour_note, decisions=cfg.decisions, typed_selection=cfg.typed_selection
        )
        load_offsets(cfg, ops, dirs, needs)
        data, modes = Path(cfg.datasets_dir), cfg.learned_modes()
        scorer = mode_adapter(PLACED_MODES[0])
        uncalibrated = bool(set(PLACED_MODES) & set(modes)) and not isinstance(backend, SymbolicBackend)
        # Every fold's operator scores first, then the engine replays (the slow part), so a
        # run stopped early still has the operator table for every fold. A run that waits
        # for adapters in training scores what the loaded ones serve, then loads the others.
        while True:
            if uncalibrated and scorer not in missing:
                with timed(phases, "calibration"):
                    place_reading(cfg, out, owner[scorer], ops)
                uncalibrated = False
            for fold, episode in episodes.items():
                with timed(phases, "operators"):
                    score_fold(
                        fold,
                        data,
                        episode,
                        ops,
                        records,
                        modes,
                        cfg.batch,
                        cfg.progress,
                        missing,
                        cfg.prompted,
                    )
                if isinstance(backend, HFBackend) and backend.stems is not None:
                    backend.stems.clear()  # no later call asks about this fold's notes
                print(f"{fold}: operators scored ({len(records.records)} records so far)", flush=True)
            if not missing:
                break
            with timed(phases, "adapter wait"):
                wait_for_adapters(cfg, [(owner[a], a) for a in missing])
                backend.add_adapters({a: dirs[a] for a in missing})
                load_offsets(cfg, ops, dirs, missing)
            missing = []
        if cfg.contract and suite:
            if isinstance(backend, SymbolicBackend):
                backend.remember_suite()
            with timed(phases, "contract suite"):
                score_contract(
                    ops, Records(out / CONTRACT_RECORDS), "test", cfg.contract, cfg.batch, cfg.progress
                )
            print("contract suite: scored", flush=True)
        if cfg.replay:
            replay_set(cfg, episodes, ops, records, phases)


def load_offsets(
    cfg: LooConfig, ops: LearnedOperators, dirs: dict[str, Path] | None, adapters: list[str]
) -> None:
    """``decisions=calibrated``: the decision adapters' fitted offsets, from their manifests."""
    if cfg.decisions == "calibrated" and dirs is not None:
        ops.calibrations.update({a: calibration(a, dirs[a]) for a in adapters if a in DECISIONS})


def remember_gold(backend: SymbolicBackend, data: Path, folds: list[str]) -> None:
    """The rules' oracle told each decision's gold answer on the folds' test examples."""
    for fold in folds:
        for op in DECISIONS:
            for example in load_test(data, fold, op):
                backend.remember(example["prompt"], example["completion"][0]["content"])


def replay_set(
    cfg: LooConfig,
    episodes: dict[str, Episode],
    ops: LearnedOperators,
    records: Records,
    phases: dict[str, float],
) -> None:
    """Every fold's held-out trajectory replayed through the engine on the operators: the
    learned decisions every replay needs asked first, in shared batches, then each fold replayed."""
    modes = cfg.learned_modes()
    with timed(phases, "engine replays"):
        asked = ask_replays(episodes, ops, records, modes, cfg.progress, cfg.prompted)
    for fold, episode in episodes.items():
        with timed(phases, "engine replays"):
            replay_fold(fold, episode, ops, records, modes, cfg.progress, asked, cfg.prompted)
        print(f"{fold}: engine replayed ({len(records.records)} records so far)", flush=True)


def finish(
    cfg: LooConfig,
    out: Path,
    overrides: list[str] | None,
    settings: dict[str, Any],
    records: Records,
    phases: dict[str, float],
    serving: dict[str, Any],
    wall_s: float,
) -> dict[str, Any]:
    """The run's manifest and report, its adapters' held-out figures, and its TensorBoard scalars."""
    write_manifest(
        out,
        config=asdict(cfg),
        overrides=overrides or [],
        seed=cfg.seed,
        dataset_fingerprint=settings["test_examples"],
        run={
            "name": cfg.run,
            "model": cfg.model.name,
            "model_note": cfg.model.note,
            "backend": cfg.backend.kind,
            "dtype": settings["dtype"],
            "folds": cfg.folds,
        },
        adapters={
            f: {a: str(d) for a, d in adapters_of(cfg, f).items() if a in cfg.served_adapters()}
            for f in cfg.folds
        },
        serving=serving,
        records=len(records.records),
        wall_seconds=round(wall_s, 1),
        phases={phase: round(seconds, 1) for phase, seconds in phases.items()},
    )
    print("time: " + ", ".join(f"{phase} {s:.0f} s" for phase, s in phases.items() if round(s)), flush=True)
    (out / "resolved_config.json").write_text(json.dumps(asdict(cfg), indent=2) + "\n")
    summary = build_report(out)
    if cfg.backend.kind != "symbolic" and not cfg.adapters:
        record_adapter_figures(cfg, summary)
    if cfg.report_to == TENSORBOARD and cfg.backend.kind != "symbolic":
        means = {
            f"heldout/{variant}/{metric}": stat["mean"]
            for variant, metrics in summary["mean"].items()
            for metric, stat in metrics.items()
        }
        log_scalars(out / HELDOUT_EVENTS, {0: means})
    return summary
