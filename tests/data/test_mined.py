"""The shipped mined benchmark: its size, its card, its split, and that it loads like the five.

Re-mining it needs the repositories themselves, which are not shipped: with clones at
``MEMOPS_MINED_CLONES`` (``benchmarks/mine_benchmark.py``'s ``--clones`` layout) every
trajectory is mined again and compared byte for byte with the shipped one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memops.core.sources import MINED, Sources
from memops.data.replay import load_trajectories
from tests.conftest import ROOT

CARD = (MINED / "README.md").read_text()
SPLIT = json.loads((MINED / "split.json").read_text())


@pytest.fixture(scope="module")
def episodes():
    return {e.id: e for e in load_trajectories(Sources.of(["mined"], ["mined"]))}


def test_the_benchmark_has_20_repositories_and_300_claims_each_with_5_changes(episodes) -> None:
    claims = {name: sum(len(s.claims) for s in e.sessions if s.commit) for name, e in episodes.items()}
    assert len(episodes) >= 20 and sum(claims.values()) >= 300
    assert min(claims.values()) >= 5
    assert f"{len(episodes)} repositories" in CARD and f"{sum(claims.values())} gold claims" in CARD


def test_the_card_lists_each_repository_with_its_licence_tip_span_and_claims(episodes) -> None:
    rows = [line for line in CARD.splitlines() if line.startswith("| [")]
    assert len(rows) == len(episodes)
    for row in rows:
        repository, _, licence, tip, span, commits, claims, part = (
            c.strip() for c in row.strip("|").split(" | ")
        )
        name = re.match(r"\[([^\]]+)\]", repository).group(1).replace("/", "-").lower()
        episode = episodes[name]
        notes = [s for s in episode.sessions if s.commit]
        assert int(commits) == len(notes) and int(claims) == sum(len(s.claims) for s in notes)
        stated = [c.value for s in notes for c in s.claims if c.pair == "project.license"]
        assert licence == (stated[-1] if stated else "not stated")
        header = (MINED / f"{name}.yaml").read_text().splitlines()[0]
        assert f" at {tip.strip('`')} " in header
        first, last = span.split(" – ")
        assert first <= last and part == ("held out" if name in SPLIT["heldout"] else "train")


def test_the_split_puts_each_repository_on_one_side_and_no_held_out_note_in_training(episodes) -> None:
    assert sorted(SPLIT["train"] + SPLIT["heldout"]) == sorted(episodes)
    assert not set(SPLIT["train"]) & set(SPLIT["heldout"]) and len(SPLIT["heldout"]) >= 5
    training = {s.text for name in SPLIT["train"] for s in episodes[name].sessions}
    assert not training & {s.text for name in SPLIT["heldout"] for s in episodes[name].sessions}


@pytest.mark.skipif(not os.environ.get("MEMOPS_MINED_CLONES"), reason="no clones of the mined repositories")
def test_the_repositories_mine_to_the_shipped_bytes() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/mine_benchmark.py",
            "--clones",
            os.environ["MEMOPS_MINED_CLONES"],
            "--check",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{len(SPLIT['train']) + len(SPLIT['heldout'])} of" in done.stdout


def test_a_mined_trajectory_joins_the_codex_ones_in_one_build(tmp_path: Path) -> None:
    from memops.data.config import DataConfig
    from memops.data.pipeline import build

    name = SPLIT["heldout"][0]
    cfg = DataConfig(
        scenarios_per_family=1,
        noisy_per_family=0,
        annotations=["shipped", "mined"],
        exports=["shipped", "mined"],
        folds=[name],
        datasets_dir=str(tmp_path),
        progress=False,
    )
    build(cfg)
    test = [json.loads(x) for x in (tmp_path / name / "extract" / "test.jsonl").read_text().splitlines()]
    train = [json.loads(x) for x in (tmp_path / name / "extract" / "train.jsonl").read_text().splitlines()]
    assert test and {r["group"] for r in test} == {name}
    groups = {r["group"] for r in train}
    assert "patch-guardrails" in groups and SPLIT["train"][0] in groups and name not in groups
