"""The data build end to end: validate inputs, generate, label, split, check, write, describe.

Outputs are staged next to the destination and swapped in (``data/publish.py``) only after
every fold passed its leakage check, so a failed or killed build never leaves a half-written or
emptied dataset. A partial rebuild (``folds=[...]``) must use the settings the other folds were
built with.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import MISSING, asdict, fields
from pathlib import Path
from typing import Any

from memops.core.layout import TRAINING_FOLDS
from memops.core.locks import beside, exclusive
from memops.core.sessions import Episode
from memops.core.sources import Sources
from memops.data.build import build_folds, build_pool, card, card_markdown
from memops.data.config import DataConfig
from memops.data.problems import DataError, Problem
from memops.data.publish import publish, recover
from memops.data.scenarios.generate import scenarios
from memops.data.trajectory import load_trajectories
from memops.memory.reader import answer
from memops.operators.contract import ContractDraw


def _line_naming(file: Path, query_id: str) -> int | None:
    """The line of an annotation that declares this query id."""
    if not file.is_file():
        return None
    lines = file.read_text(encoding="utf-8").splitlines()
    return next((n for n, line in enumerate(lines, 1) if "id:" in line and query_id in line), None)


def check_queries(episodes: list[Episode], sources: Sources) -> list[Problem]:
    """Every query must be answered correctly by the structured reader on the gold state, and
    must be able to fail: one that accepts an empty answer scores every engine as right."""
    problems = []
    for episode in episodes:
        mem = episode.replay()
        file = sources.annotation(episode.id) if episode.source == "trajectory" else Path(episode.id)
        for query in episode.queries:
            if query.accepts(""):
                problems.append(
                    Problem(
                        file,
                        _line_naming(file, query.id),
                        f"queries[{query.id}]",
                        "accepts an empty answer, so no engine can fail it; give required or any_of tokens",
                    )
                )
            got = answer(mem, query.target.key, query.target.ask, query.target.at)
            if not query.accepts(got):
                problems.append(
                    Problem(
                        file,
                        _line_naming(file, query.id),
                        f"queries[{query.id}]",
                        f"gold replay answers {got!r}, which the tokens reject",
                    )
                )
    return problems


def validate(cfg: DataConfig) -> dict[str, Any]:
    sources = cfg.sources()
    trajectories = load_trajectories(sources)
    problems = check_queries(trajectories, sources)
    if problems:
        raise DataError(problems)
    return {
        "validated": {
            t.id: {"annotation": str(sources.annotation(t.id)), "export": str(sources.export(t.id))}
            for t in trajectories
        },
        "trajectories": len(trajectories),
        "commits": sum(1 for t in trajectories for s in t.sessions if s.commit),
        "sessions": sum(len(t.sessions) for t in trajectories),
        "queries": sum(len(t.queries) for t in trajectories),
    }


BUILD_KEYS = (
    "annotations",
    "exports",
    "seed",
    "scenarios_per_family",
    "noisy_per_family",
    "noise",
    "compare_per_label",
    "contract_per_episode",
    "contract_weights",
    "near_misses",
    "value_twins",
    "real_twins",
    "near_twins",
    "validation_fraction",
    "real_trajectories",
    "real_repeat",
    "synthetic_plus",
    "real_validation",
    "extract_stages",
    "extract_stage_ratio",
)
"""The settings that decide a fold's bytes; folds built under different ones must not sit together."""


def built_otherwise(cfg: DataConfig, keys: tuple[str, ...]) -> dict[str, tuple[Any, Any]]:
    """key -> (built with, ``cfg``'s) for each of ``keys`` where the build in ``cfg.datasets_dir``
    differs from ``cfg``; empty when nothing is built there."""
    manifest = Path(cfg.datasets_dir) / "manifest.json"
    if not manifest.exists():
        return {}
    before = json.loads(manifest.read_text()).get("config", {})
    # A key added after that build was made is read as its default: the value it was built with.
    defaults = {f.name: f.default for f in fields(DataConfig)}
    defaults |= {f.name: f.default_factory() for f in fields(DataConfig) if f.default_factory is not MISSING}
    built = {k: before.get(k, defaults[k]) for k in keys}
    return {k: (built[k], getattr(cfg, k)) for k in keys if built[k] != getattr(cfg, k)}


def check_partial_rebuild(cfg: DataConfig, out: Path) -> None:
    """Refuse to rebuild some folds with settings other than those the remaining folds were
    built with: the directory would hold folds from two seeds under one manifest."""
    manifest = out / "manifest.json"
    if not manifest.exists():
        return
    kept = sorted(set(json.loads(manifest.read_text())["config"].get("folds", [])) - set(cfg.folds))
    differ = built_otherwise(cfg, BUILD_KEYS)
    if kept and differ:
        said = ", ".join(f"{k}={new} (built with {old})" for k, (old, new) in differ.items())
        raise DataError(
            [
                Problem(
                    manifest,
                    None,
                    "config",
                    f"rebuilding {list(cfg.folds)} with {said} would leave "
                    f"{kept} from the earlier build beside them; rebuild every fold or use another "
                    "datasets_dir",
                )
            ]
        )


def build(cfg: DataConfig, overrides: list[str] | None = None) -> dict[str, Any]:
    """Build and publish the datasets; one build per ``datasets_dir`` at a time (two once shared
    a staging folder and published one's files under the other's card)."""
    out = Path(cfg.datasets_dir)
    with exclusive(beside(out), "dataset build"):
        return _build(cfg, out, overrides)


def _build(cfg: DataConfig, out: Path, overrides: list[str] | None) -> dict[str, Any]:
    from memops.data.manifest import fingerprint, write_manifest

    started = time.perf_counter()
    recover(out)  # a build killed while swapping: back to its previous complete set
    check_partial_rebuild(cfg, out)
    sources = cfg.sources()
    trajectories = load_trajectories(sources)
    synthetic = scenarios(cfg.seed, cfg.scenarios_per_family, cfg.noisy_per_family, cfg.noise)
    problems = check_queries(trajectories + synthetic, sources)
    if problems:
        raise DataError(problems)
    episodes = synthetic + trajectories
    pool = build_pool(
        episodes,
        cfg.seed,
        cfg.compare_per_label,
        progress=cfg.progress,
        stages=cfg.extract_stages,
        stage_ratio=cfg.extract_stage_ratio,
        contract=ContractDraw(
            cfg.contract_per_episode,
            cfg.contract_weights,
            cfg.near_misses,
            cfg.value_twins,
            cfg.real_twins,
            cfg.near_twins,
        ),
    )

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
            cfg.real_trajectories,
            cfg.real_repeat,
            cfg.synthetic_plus,
            cfg.real_validation,
            progress=cfg.progress,
        )
        # A partial rebuild keeps the other folds, so the card and manifest describe them too.
        kept = [f for f in sorted(p.name for p in out.glob("[!.]*") if p.is_dir()) if f not in cfg.folds]
        if kept and (out / "card.json").exists():
            before = json.loads((out / "card.json").read_text())["folds"]
            sizes.update({f: {op: before[f][op] for op in pool.datasets} for f in kept if f in before})
            order = [*sources.names(), *TRAINING_FOLDS]
            sizes = dict(sorted(sizes.items(), key=lambda kv: order.index(kv[0])))
        info = card(pool, episodes, sizes, Path(cfg.model.path), cfg.validation_fraction)
        (staging / "card.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        (staging / "card.md").write_text(card_markdown(info))
        where = {**{f: out / f for f in kept}, **{f: staging / f for f in cfg.folds}}
        folds = {f: fingerprint(where[f].rglob("*.jsonl")) for f in sorted(where)}
        write_manifest(
            staging,
            config={**asdict(cfg), "folds": sorted(where)},
            overrides=overrides or [],
            seed=cfg.seed,
            folds=folds,
            dataset_fingerprint=hashlib.sha256(json.dumps(folds, sort_keys=True).encode()).hexdigest(),
        )
        publish(staging, out, [*cfg.folds, "card.json", "card.md", "manifest.json"])
    finally:
        shutil.rmtree(staging, ignore_errors=True)

    examples = sum(info["ops"][op]["examples"] for op in info["ops"])
    return {"examples": examples, "seconds": time.perf_counter() - started, "card": info}
