"""Operator datasets for every leave-one-out fold (docs/design.md §5, §10).

Fold ``<trajectory>``: train = synthetic (train part) + the other four trajectories, validation =
synthetic (validation part), test = that trajectory, held out. Fold ``all``: every source in
train, the same validation, no test; it is what deployed adapters train on. Fold
``synthetic``: synthetic scenarios alone in train, the same validation, no test; no trajectory
reaches its training, so its adapters are a held-out model for every trajectory at once.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memops.core.folds import Fold
from memops.core.sessions import Episode, is_real
from memops.data.realism import baseline_markdown, one_input_baseline, realism, realism_markdown
from memops.operators.contract import NO_CONTRACT, ContractDraw
from memops.operators.examples import Example, stage_examples
from memops.operators.registry import DECISIONS, EXTRACT, OPERATORS, OPS, STAGES_ADAPTER, adapters

SPLITS: tuple[str, ...] = ("train", "validation", "test")


class LeakageError(RuntimeError):
    pass


def is_validation(episode_id: str, fraction: float) -> bool:
    """A stable split by id, so adding scenarios never moves existing ones between splits."""
    digest = int(hashlib.sha256(episode_id.encode()).hexdigest()[:8], 16)
    return digest / 0xFFFFFFFF < fraction


@dataclass
class Pool:
    """Every example of every episode, per op, built once and shared by all folds."""

    datasets: tuple[str, ...] = OPS
    """What each episode holds examples for: ``adapters(stages)``. ``extract-stages`` (the extract
    examples with the two-stage procedure's mixed in) has train and validation splits only: every
    extraction variant is scored on ``extract/test.jsonl``."""
    by_episode: dict[str, dict[str, list[Example]]] = field(default_factory=dict)

    def examples(self, op: str, episodes: list[Episode]) -> list[Example]:
        return [ex for e in episodes for ex in self.by_episode[e.id][op]]


def mix_stages(
    direct: list[Example], stages: list[Example], ratio: float | None, rng: random.Random
) -> list[Example]:
    """The direct examples, then ``ratio`` stage examples per direct one (every one when unset),
    drawn per episode in their original order so that a fold's mix does not depend on the others."""
    if ratio is not None and round(ratio * len(direct)) < len(stages):
        keep = set(rng.sample(range(len(stages)), round(ratio * len(direct))))
        stages = [ex for i, ex in enumerate(stages) if i in keep]
    return direct + stages


def build_pool(
    episodes: list[Episode],
    seed: int,
    compare_per_label: int,
    progress: bool = True,
    stages: bool = False,
    stage_ratio: float | None = None,
    contract: ContractDraw = NO_CONTRACT,
) -> Pool:
    """``contract``: the contract cases each synthetic episode adds per decision, and how they are
    drawn (``operators.contract``)."""
    pool = Pool(adapters(stages))
    for episode in tqdm(episodes, desc="examples", unit="episode", disable=not progress):
        pool.by_episode[episode.id] = {
            name: op.examples(
                episode,
                random.Random(f"{seed}:{name}:{episode.id}"),
                compare_per_label,
                contract=contract,
            )
            for name, op in OPERATORS.items()
        }
        if stages:
            mix = random.Random(f"{seed}:stages:{episode.id}")
            direct = pool.by_episode[episode.id][EXTRACT.name]
            stages_of = stage_examples(episode)
            pool.by_episode[episode.id][STAGES_ADAPTER] = mix_stages(direct, stages_of, stage_ratio, mix)
    return pool


def fold_splits(
    fold: Fold,
    synthetic: list[Episode],
    trajectories: list[Episode],
    validation_fraction: float,
    real_repeat: int = 1,
) -> dict[str, list[Episode]]:
    """The episodes of each split: the scenarios' training part and the trajectories the fold
    takes (``Fold.takes``), each ``real_repeat`` times; the scenarios' validation part and the
    trajectories it validates on (``Fold.validates``); the trajectory it is named after as its
    test split."""
    val = [e for e in synthetic if is_validation(e.id, validation_fraction)] + fold.validates(trajectories)
    train = [e for e in synthetic if not is_validation(e.id, validation_fraction)]
    train += fold.takes(trajectories) * real_repeat
    test = [t for t in trajectories if t.id == fold.name]
    return {"train": train, "validation": val, "test": test}


def trained_only(row: Example) -> bool:
    """A row only a train split holds: a value twin of a trajectory's pair
    (``ContractDraw.real_twins``). A real pair is validated on and scored as it was written."""
    return is_real(row["source"]) and "twin_of" in json.loads(row["inputs"])


def check_leakage(held_out: Episode, splits: dict[str, list[Example]]) -> None:
    """Fail if any session id, commit or note text of the held-out trajectory reaches train or
    validation."""
    ids = {s.id for s in held_out.sessions}
    commits = {s.commit for s in held_out.sessions if s.commit}
    texts = [s.text for s in held_out.sessions]
    leaks = []
    for split in ("train", "validation"):
        for ex in splits[split]:
            if ex["group"] == held_out.id or ids & set(ex["sessions"]) or commits & set(ex["commits"]):
                leaks.append(f"{split}: {ex['id']} is built from the held-out trajectory")
                continue
            content = "\n".join(m["content"] for m in ex["prompt"])
            if any(commit in content for commit in commits) or any(t in content for t in texts):
                leaks.append(f"{split}: {ex['id']} quotes a held-out commit or note")
    if leaks:
        shown = "\n  ".join(leaks[:10])
        raise LeakageError(f"fold {held_out.id}: {len(leaks)} leaking examples, e.g.\n  {shown}")


def write_jsonl(path: Path, rows: list[Example]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def save_op(out: Path, splits: dict[str, list[Example]]) -> None:
    """Write one op of one fold as a ``datasets.DatasetDict`` and as JSONL, side by side.

    Empty splits (the test split of fold ``all``) are left out of both.
    """
    from datasets import Dataset, DatasetDict
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()
    out.mkdir(parents=True, exist_ok=True)
    features = Dataset.from_list(next(rows for rows in splits.values() if rows)).features

    def table(rows: list[Example]) -> Dataset:
        columns = {name: [row[name] for row in rows] for name in features}
        return Dataset.from_dict(columns, features=features)

    splits = {split: rows for split, rows in splits.items() if rows}
    DatasetDict({split: table(rows) for split, rows in splits.items()}).save_to_disk(str(out))
    _pin_fingerprints(out, splits)
    for split, rows in splits.items():
        write_jsonl(out / f"{split}.jsonl", rows)


def _pin_fingerprints(out: Path, splits: dict[str, list[Example]]) -> None:
    """Replace datasets' random in-memory fingerprints with content hashes, for byte-identical builds."""
    for split, rows in splits.items():
        state_path = out / split / "state.json"
        state = json.loads(state_path.read_text())
        digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]
        state["_fingerprint"] = digest
        state_path.write_text(json.dumps(state, indent=2, sort_keys=True))


def build_folds(
    synthetic: list[Episode],
    trajectories: list[Episode],
    pool: Pool,
    out_dir: Path,
    folds: list[str],
    validation_fraction: float,
    real_trajectories: int | None = None,
    real_repeat: int = 1,
    synthetic_plus: Collection[str] = (),
    real_validation: Collection[str] = (),
    progress: bool = True,
) -> dict[str, dict[str, dict[str, int]]]:
    """Write every requested fold; returns split sizes per fold and op."""
    sizes: dict[str, dict[str, dict[str, int]]] = {}
    for name in tqdm(folds, desc="folds", unit="fold", disable=not progress):
        fold = Fold.of(name, synthetic_plus, real_trajectories, real_validation)
        episodes = fold_splits(fold, synthetic, trajectories, validation_fraction, real_repeat)
        sizes[name] = {}
        for op in pool.datasets:
            splits = {split: pool.examples(op, episodes[split]) for split in SPLITS}
            for split in ("validation", "test"):
                splits[split] = [row for row in splits[split] if not trained_only(row)]
            if op == STAGES_ADAPTER:
                splits["test"] = []
            for trajectory in fold.holds_out(trajectories):
                check_leakage(trajectory, splits)
            save_op(out_dir / name / op, splits)
            sizes[name][op] = {split: len(rows) for split, rows in splits.items()}
    return sizes


def percentiles(values: list[int]) -> dict[str, int]:
    if not values:
        return {}
    ordered = sorted(values)

    def at(q: float) -> int:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": ordered[-1]}


def length_counter(tokenizer_dir: Path) -> tuple[str, Callable[[Example], int]]:
    """Token counts with the model's tokenizer when it is built, else characters."""
    if (tokenizer_dir / "tokenizer.json").exists():
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))

        def tokens(ex: Example) -> int:
            return len(
                tok.apply_chat_template(ex["prompt"] + ex["completion"], tokenize=True, return_dict=False)
            )

        return f"tokens ({tokenizer_dir.name} tokenizer)", tokens
    return "characters", lambda ex: sum(len(m["content"]) for m in ex["prompt"] + ex["completion"])


def card(
    pool: Pool,
    episodes: list[Episode],
    sizes: dict[str, Any],
    tokenizer_dir: Path,
    validation_fraction: float,
) -> dict[str, Any]:
    unit, length = length_counter(tokenizer_dir)
    ops: dict[str, Any] = {}
    for op in pool.datasets:
        rows = pool.examples(op, episodes)
        ops[op] = {
            "examples": len(rows),
            "source": dict(sorted(Counter(r["source"] for r in rows).items())),
            "family": dict(sorted(Counter(r["family"] for r in rows).items())),
            "label": dict(sorted(Counter(r["label"] for r in rows).items())),
            "length": percentiles([length(r) for r in rows]),
        }
        if op == STAGES_ADAPTER:
            stage = Counter(json.loads(r["inputs"]).get("stage", "direct") for r in rows)
            ops[op]["stage"] = {k: stage[k] for k in ("direct", "select", "fill")}
        if op in DECISIONS:  # the contract cases per region (operators/contract.py), beside the rest
            region = Counter(json.loads(r["inputs"]).get("region", "(episode's own)") for r in rows)
            ops[op]["region"] = dict(sorted(region.items()))
    synthetic = [e for e in episodes if e.source == "synthetic"]
    train = [e for e in synthetic if not is_validation(e.id, validation_fraction)]
    tests = {
        "synthetic validation": [e for e in synthetic if is_validation(e.id, validation_fraction)],
        "trajectories": [e for e in episodes if is_real(e.source)],
    }
    return {
        "length_unit": unit,
        "ops": ops,
        "folds": sizes,
        "realism": realism(episodes, pool.examples, DECISIONS),
        "one_input": {
            op: one_input_baseline(
                pool.examples(op, train), {k: pool.examples(op, v) for k, v in tests.items()}, op
            )
            for op in DECISIONS
        },
    }


def card_markdown(data: dict[str, Any]) -> str:
    lines = ["# Operator datasets", "", f"Lengths are in {data['length_unit']}.", ""]
    for op, info in data["ops"].items():
        lines += [f"## {op} ({info['examples']} examples)", ""]
        for facet in ("source", "family", "label", "stage", "region"):
            if facet not in info:
                continue
            total = sum(info[facet].values())
            lines += [f"| {facet} | count | share |", "| --- | ---: | ---: |"]
            lines += [f"| {k} | {v} | {v / total:.1%} |" for k, v in info[facet].items()]
            lines.append("")
        lines += [f"Length: {', '.join(f'{k} {v}' for k, v in info['length'].items())}", ""]
    lines += [
        "## Folds",
        "",
        "| fold | op | train | validation | test |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for fold, ops in data["folds"].items():
        for op, s in ops.items():
            lines.append(f"| {fold} | {op} | {s['train']} | {s['validation']} | {s['test']} |")
    lines += ["", *realism_markdown(data["realism"]), *baseline_markdown(data["one_input"])]
    return "\n".join(lines) + "\n"
