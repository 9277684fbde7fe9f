"""benchmarks/value_spans.py on the tiny model's extract-stages adapter, trained by the real recipe,
over the first notes of a shipped trajectory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memops.core.sources import Sources
from memops.data.problems import load_yaml
from memops.data.trajectory import load_trajectory
from memops.eval.metrics import value_match
from tests.conftest import ROOT, shipped

pytestmark = pytest.mark.slow
FOLD = "patch-guardrails"
NOTES = 6
"""The study reads every gold claim of these first notes; the whole trajectory would only repeat
each check over more claims."""


def first_notes(export_dir: Path, out: Path) -> Path:
    """The trajectory cut to its first ``NOTES`` annotated commits, distractors and queries kept,
    under its own name (so its fold's adapters serve it)."""
    source = shipped(export_dir)
    annotation = load_yaml(source.annotation(FOLD).read_text())
    annotation["commits"] = annotation["commits"][:NOTES]
    kept = tuple(c["commit"] for c in annotation["commits"])
    out.mkdir()
    (out / f"{FOLD}.yaml").write_text(yaml.safe_dump(annotation, sort_keys=False))
    lines = source.export(FOLD).read_text().splitlines(keepends=True)
    (out / f"{FOLD}.jsonl").write_text("".join(x for x in lines if json.loads(x)["commit"].startswith(kept)))
    return out


def test_the_value_study_reads_every_gold_claim_once_and_resumes_after_a_cut_off_line(
    trained_adapters: Path, tiny_model: Path, export_dir: Path, tmp_path: Path
) -> None:
    trajectory = first_notes(export_dir, tmp_path / "trajectory")
    cmd = [
        sys.executable,
        "benchmarks/value_spans.py",
        "--config-name",
        "loo",
        "model=tiny",
        f"model.path={tiny_model}",
        f"adapters={trained_adapters.parent}",
        f"folds=[{FOLD}]",
        f"annotations=[{trajectory}]",
        f"exports=[{trajectory}]",
        f"runs_dir={tmp_path}",
        "run=study",
        "progress=false",
    ]
    first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    out = tmp_path / "study" / "value_spans.jsonl"
    rows = [json.loads(line) for line in out.read_text().splitlines()]

    episode = load_trajectory(FOLD, Sources.of([trajectory], [trajectory]))
    assert sum(1 for s in episode.sessions if s.commit) == NOTES
    notes = {s.id: s for s in episode.sessions}
    gold = [(s.id, c.pair, c.value) for s in episode.sessions for c in s.claims]
    assert [(r["note"], r["pair"], r["gold"]) for r in rows] == gold
    assert len({(r["note"], r["claim"]) for r in rows}) == len(rows)
    for r in rows:
        session = notes[r["note"]]
        # The likeliest run and the least risky one are runs of the note's own words, and a
        # match there is one the ceiling counts too.
        for column in ("map", "mbr"):
            value = r[f"{column}_value"]
            assert value in f"{session.title}\n{session.text}"
            assert r[column] == value_match(value, r["gold"]) and (r["ceiling"] or not r[column])
        kept = list(r["likeliest"].items())
        odds = [p for _, p in kept]
        assert kept[0][0] == r["map_value"] and odds == sorted(odds, reverse=True)
        assert r["greedy"] == value_match(r["greedy_value"], r["gold"])
    assert f"| ceiling | {sum(r['ceiling'] for r in rows)}/{len(rows)} |" in first.stdout

    # A run killed mid-write leaves a cut-off last line: the rerun drops it, and reads nothing
    # twice.
    whole = out.read_text()
    out.write_text(whole + '{"fold": "patch-gua')
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert out.read_text() == whole
    assert again.stdout == first.stdout
