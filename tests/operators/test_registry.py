"""The operator registry: every operator's declared parts agree with each other on real episodes.

For each example an operator's builder writes, the completion validates against its output
schema; for a decision, the example's inputs rebuild arguments whose prompt is the example's
prompt and whose symbolic answer is the example's label.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from memops.core.sessions import Episode
from memops.data.scenarios.generate import scenarios
from memops.data.trajectory import load_trajectory
from memops.operators.registry import DECISIONS, OPERATORS, OPS
from tests.conftest import shipped


@pytest.fixture(scope="module")
def episodes(export_dir: Path) -> list[Episode]:
    return [*scenarios(0, 2, 1, 2), load_trajectory("patch-guardrails", shipped(export_dir))]


def test_names_are_unique_and_name_every_dataset() -> None:
    assert len(set(OPS)) == len(OPS) and OPS[0] == "extract"
    assert all(OPERATORS[name].name == name for name in OPS)
    assert set(DECISIONS) == set(OPS) - {"extract"}


@pytest.mark.parametrize("name", OPS)
def test_parts_agree_on_every_example(name: str, episodes: list[Episode]) -> None:
    op = OPERATORS[name]
    seen = 0
    for episode in episodes:
        for ex in op.examples(episode, random.Random(f"0:{name}:{episode.id}"), 2):
            assert ex["op"] == name and ex["id"].startswith(f"{name}/")
            answer = op.output.model_validate_json(ex["completion"][0]["content"])
            seen += 1
            if name not in DECISIONS:
                continue
            arguments = op.arguments(json.loads(ex["inputs"]))
            assert op.messages(*arguments) == ex["prompt"], ex["id"]
            assert op.rule(*arguments) == answer, ex["id"]
            assert answer.label == ex["label"], ex["id"]
    assert seen > 0
