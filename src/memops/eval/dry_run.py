"""What a LOO run would do, without doing it (``memops loo dry_run=true``): what it builds,
trains, scores and replays, each with an estimated time where this machine recorded one (an
adapter's manifest for training, an earlier run's records for scoring and replays). It reads
only what is on disk and writes nothing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from memops.core.layout import run_dir, test_file
from memops.eval.config import LooConfig
from memops.eval.harness import decision_variants, engine_variants, extract_variants
from memops.eval.plan import steps
from memops.eval.scored import read_records
from memops.operators.learned import PLACED_MODES, mode_adapter
from memops.operators.registry import DECISIONS, EXTRACT
from memops.train.config import train_config
from memops.train.dry_run import duration, training_plan


def recorded_latency(cfg: LooConfig) -> dict[tuple[str, str], float]:
    """(op, variant) -> mean seconds per sample over earlier runs of this model and backend;
    engine replays as ("replay", variant) -> seconds per replay."""
    samples: dict[tuple[str, str], list[float]] = defaultdict(list)
    for manifest in Path(cfg.runs_dir).glob("*/manifest.json"):
        run = json.loads(manifest.read_text()).get("run", {})
        records = manifest.parent / "records.jsonl"
        if (run.get("model"), run.get("backend")) != (
            cfg.model.name,
            cfg.backend.kind,
        ) or not records.exists():
            continue
        for r in read_records(records):
            if r["op"] == "engine_state" and r.get("replay_s") is not None:
                samples["replay", r["variant"]].append(r["replay_s"])
            elif r.get("latency_s"):
                samples[r["op"], r["variant"]].append(r["latency_s"])
    return {key: sum(v) / len(v) for key, v in samples.items()}


def loo_plan(cfg: LooConfig) -> dict[str, Any]:
    plan = steps(cfg, trains=not cfg.adapters and cfg.backend.kind != "symbolic")
    out: dict[str, Any] = {
        "build": plan.missing(cfg.model),
        "train": [],
        "wait": [],
        "calibrate": [],
        "score": [],
        "replay": [],
    }
    for fold, op in plan.untrained:
        if cfg.wait_for_training_s:  # other jobs train them
            out["wait"].append({"fold": fold, "op": op})
            continue
        adapter = training_plan(train_config(cfg, fold, op))
        out["train"].append({"fold": fold, "op": op, **adapter})
    latency = recorded_latency(cfg)
    modes = cfg.learned_modes()
    if set(PLACED_MODES) & set(modes) and cfg.backend.kind != "symbolic":
        placed = run_dir(cfg.runs_dir, cfg.run) / "calibration"
        scorer = mode_adapter(PLACED_MODES[0])
        for fold in dict.fromkeys(cfg.trained_on(f, scorer) for f in cfg.folds or []):
            done = (placed / f"{fold}.json").exists()
            out["calibrate"].append({"fold": fold, "notes": cfg.calibration_notes, "placed": done})
    for fold in cfg.folds or []:
        for op in (*DECISIONS, EXTRACT.name):
            path = test_file(cfg.datasets_dir, fold, op)
            n = sum(1 for _ in path.open()) if path.exists() else None
            variants = (
                decision_variants(cfg.prompted) if op in DECISIONS else extract_variants(modes, cfg.prompted)
            )
            for variant in variants:
                seconds = latency.get((op, variant))
                out["score"].append(
                    {
                        "fold": fold,
                        "op": op,
                        "variant": variant,
                        "examples": n,
                        "estimated_seconds": round(seconds * n) if seconds is not None and n else None,
                    }
                )
        if cfg.replay:
            for variant in engine_variants(modes, cfg.prompted):
                seconds = latency.get(("replay", variant))
                out["replay"].append({"fold": fold, "variant": variant, "estimated_seconds": seconds})
    return out


def _time(seconds: float | None) -> str:
    return "no earlier run recorded" if seconds is None else duration(seconds)


def describe_loo(cfg: LooConfig, plan: dict[str, Any]) -> str:
    adapters = cfg.adapters or (f"fold {cfg.adapters_fold}'s" if cfg.adapters_fold else "each fold's own")
    if cfg.own_adapters:
        adapters += f", but each fold's own {', '.join(cfg.own_adapters)}"
    lines = [
        f"LOO run {cfg.run}: model {cfg.model.name}, backend {cfg.backend.kind}, "
        f"folds {', '.join(cfg.folds or [])}; adapters: {adapters}",
        "",
        "build: " + ("; ".join(plan["build"]) if plan["build"] else "nothing (datasets and base are ready)"),
        f"train: {len(plan['train'])} adapter(s)",
    ]
    for t in plan["train"]:
        what = t.get("missing") or f"{t['steps']} steps; {t['estimate']}"
        lines.append(f"  {t['fold']}/{t['op']}: {what}")
    if plan["wait"]:
        lines.append(
            f"wait up to {cfg.wait_for_training_s:g} s for the adapters other jobs are training: "
            + ", ".join(f"{w['fold']}/{w['op']}" for w in plan["wait"])
        )
    for c in plan["calibrate"]:
        what = "placed already" if c["placed"] else f"{c['notes']} validation notes, each against its catalog"
        lines.append(f"place the scoring selection's reading for {c['fold']}'s adapters: {what}")
    lines.append("score:")
    for s in plan["score"]:
        n = "test examples not built yet" if s["examples"] is None else f"{s['examples']} examples"
        lines.append(f"  {s['fold']} {s['op']} {s['variant']}: {n}, {_time(s['estimated_seconds'])}")
    if plan["replay"]:
        lines.append("replay the engine:")
        lines += [f"  {r['fold']} {r['variant']}: {_time(r['estimated_seconds'])}" for r in plan["replay"]]
    lines.append("(dry run: nothing was built, trained, scored or written)")
    return "\n".join(lines)
