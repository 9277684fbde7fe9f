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
import yaml

from memops.core.sources import MINED, SHIPPED, Sources
from memops.data.trajectory import load_trajectories
from tests.conftest import ROOT

CARD = (MINED / "README.md").read_text()
SPLIT = json.loads((MINED / "split.json").read_text())


@pytest.fixture(scope="module")
def episodes():
    return {e.id: e for e in load_trajectories(Sources.of(["mined"], ["mined"]))}


def test_the_benchmark_has_60_repositories_2000_claims_and_the_new_slots(episodes) -> None:
    claims = {name: sum(len(s.claims) for s in e.sessions if s.commit) for name, e in episodes.items()}
    assert len(episodes) >= 60 and sum(claims.values()) >= 2000
    assert min(claims.values()) >= 5
    assert f"{len(episodes)} repositories" in CARD and f"{sum(claims.values())} gold claims" in CARD
    slots = {c.pair for e in episodes.values() for s in e.sessions if s.commit for c in s.claims}
    new = {"typing.checker", "lint.line_length", "tests.coverage_threshold", "docs.builder"}
    assert new <= slots


def test_no_claim_is_a_respelling_every_licence_an_spdx_id_every_specifier_canonical(episodes) -> None:
    """Issue 84: 62 of 102 licence claims only respelled one licence (``MIT`` and ``MIT License``);
    a compare pair or update case between two claims at a key turns on a respelling only if one
    of them is not in the canonical spelling."""
    from memops.core.values import python_specifier, spdx

    canonical = {"project.license": spdx, "python.supported_versions": python_specifier}
    for e in episodes.values():
        for pair, spell in canonical.items():
            values = [c.value for s in e.sessions for c in s.claims if c.pair == pair]
            assert all(spell(v) == v for v in values), (e.id, values)


def test_the_card_reports_the_audit_of_every_claim() -> None:
    audit = (MINED / "AUDIT.md").read_text()
    summary = re.search(r"(\d+) of (\d+) gold claims pass the audit", audit)
    assert summary and f"**Audit**: {summary.group(0)}" in CARD
    listed = audit.split("## A sample")[0]
    exceptions = [line for line in listed.splitlines() if line.startswith("- `")]
    assert int(summary.group(2)) - int(summary.group(1)) == len(exceptions)


def test_the_card_lists_each_repository_with_its_licence_tip_span_and_claims(episodes) -> None:
    from memops.core.values import spdx

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
        assert licence == "not stated" or licence.startswith("disputed: ") or spdx(licence) == licence
        header = (MINED / f"{name}.yaml").read_text().splitlines()[0]
        assert f" at {tip.strip('`')} " in header
        first, last = span.split(" – ")
        assert first <= last and part == ("held out" if name in SPLIT["heldout"] else "train")


def test_the_split_puts_each_family_on_one_side_and_no_held_out_note_in_training(episodes) -> None:
    """Issue 84: 54 of 195 held-out notes quoted the same changed lines as a training note."""
    assert sorted(SPLIT["train"] + SPLIT["heldout"]) == sorted(episodes)
    assert not set(SPLIT["train"]) & set(SPLIT["heldout"]) and len(SPLIT["heldout"]) >= 10
    owners = {}
    for line in CARD.splitlines():
        if line.startswith("| ["):
            repository = re.match(r"\| \[([^\]]+)\]", line).group(1)
            owners.setdefault(repository.split("/")[0].lower(), set()).add(
                line.rstrip(" |").rsplit("| ", 1)[-1]
            )
    assert all(len(sides) == 1 for sides in owners.values()), owners
    sources = Sources.of(["mined"], ["mined"])

    def said(names: list[str]) -> set[str]:
        texts = {s.text for n in names for s in episodes[n].sessions}
        lines = {
            c["summary"]
            for n in names
            for c in yaml.safe_load(sources.annotation(n).read_text())["commits"]
            if c["summary"].startswith("Changed lines:")
        }
        return texts | lines

    assert not said(SPLIT["train"]) & said(SPLIT["heldout"])


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


def test_a_list_of_trajectories_names_the_splits_sides_by_one_word() -> None:
    from memops.eval.config import LooConfig
    from memops.eval.curve import CurveConfig

    both = {"annotations": ["shipped", "mined"], "exports": ["shipped", "mined"]}
    cfg = LooConfig(**both, synthetic_plus=["mined-train"], folds=["shipped", "mined-held-out"])
    assert cfg.synthetic_plus == SPLIT["train"]
    assert cfg.folds == [*SHIPPED, *SPLIT["heldout"]]
    # Unset, the folds are what the synthetic fold holds out: the same list.
    assert LooConfig(**both, synthetic_plus=["mined-train"]).folds == cfg.folds
    held_out = f"folds: mined-held-out stands for {len(SPLIT['heldout'])} trajectories the sources do not"
    with pytest.raises(ValueError, match=held_out):
        LooConfig(folds=["mined-held-out"])
    # A learning curve reads the same words.
    assert CurveConfig(**both, adapter="a", folds=["shipped", "mined-held-out"]).folds == cfg.folds
