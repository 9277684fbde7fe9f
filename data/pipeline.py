"""The data build end to end: validate inputs, generate, label, split, check, write, describe.

Outputs are staged next to the destination and swapped in per fold only after every fold
passed its leakage check, so a failed build never leaves a half-written or emptied dataset.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from data.build import build_folds, build_pool, card, card_markdown
from data.config import DataConfig
from data.problems import DataError, Problem
from data.replay import ANNOTATIONS, load_trajectories
from data.scenarios.generate import scenarios
from data.sessions import Episode
from memory.reader import answer


def check_queries(episodes: list[Episode]) -> list[Problem]:
    """Every query must be answered correctly by the structured reader on the gold state."""
    problems = []
    for episode in episodes:
        mem = episode.replay()
        file = ANNOTATIONS / f"{episode.id}.yaml" if episode.source == "trajectory" else Path(episode.id)
        for query in episode.queries:
            got = answer(mem, query.target.key, query.target.ask, query.target.at)
            if not query.accepts(got):
                problems.append(
                    Problem(
                        file,
                        None,
                        f"queries[{query.id}]",
                        f"gold replay answers {got!r}, which the tokens reject",
                    )
                )
    return problems


def validate(cfg: DataConfig) -> dict[str, Any]:
    trajectories = load_trajectories(Path(cfg.export_dir))
    problems = check_queries(trajectories)
    if problems:
        raise DataError(problems)
    return {
        "trajectories": len(trajectories),
        "commits": sum(1 for t in trajectories for s in t.sessions if s.commit),
        "sessions": sum(len(t.sessions) for t in trajectories),
        "queries": sum(len(t.queries) for t in trajectories),
    }


def run(cfg: DataConfig, overrides: list[str] | None = None) -> dict[str, Any]:
    from data.manifest import fingerprint, write_manifest

    started = time.perf_counter()
    trajectories = load_trajectories(Path(cfg.export_dir))
    synthetic = scenarios(cfg.seed, cfg.scenarios_per_family, cfg.noisy_per_family, cfg.noise)
    problems = check_queries(trajectories + synthetic)
    if problems:
        raise DataError(problems)
    episodes = synthetic + trajectories
    pool = build_pool(episodes, cfg.seed, cfg.compare_per_label, progress=cfg.progress)

    out = Path(cfg.out_dir)
    staging = out.parent / f".{out.name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        sizes = build_folds(
            synthetic,
            trajectories,
            pool,
            staging,
            list(cfg.folds),
            cfg.validation_fraction,
            progress=cfg.progress,
        )
        info = card(pool, episodes, sizes, Path(cfg.tokenizer_dir))
        (staging / "card.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        (staging / "card.md").write_text(card_markdown(info))
        out.mkdir(parents=True, exist_ok=True)
        for fold in cfg.folds:
            shutil.rmtree(out / fold, ignore_errors=True)
            (staging / fold).rename(out / fold)
        for name in ("card.json", "card.md"):
            (staging / name).replace(out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)

    files = [p for fold in cfg.folds for p in (out / fold).rglob("*.jsonl")]
    write_manifest(
        out,
        config=asdict(cfg),
        overrides=overrides or [],
        seed=cfg.seed,
        dataset_fingerprint=fingerprint(files),
    )
    examples = sum(info["ops"][op]["examples"] for op in info["ops"])
    return {"examples": examples, "seconds": time.perf_counter() - started, "card": info}
