"""Seeds swept one command at a time add up to one table, and only where the runs are the same."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.seed_sweep import by_group, earlier_rows

OVERRIDES = ["steps.compare=880", "contract=[learned]"]


def test_rows_of_an_earlier_sweep_of_the_same_runs_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "seeds.json"
    assert earlier_rows(path, OVERRIDES) == {}
    rows = {"2": {"compare": 0.95, "wall_s": 4320}}
    path.write_text(json.dumps({"config": "smollm2-cpu", "overrides": OVERRIDES, "rows": rows}))
    assert earlier_rows(path, OVERRIDES) == {2: {"compare": 0.95, "wall_s": 4320}}
    assert earlier_rows(path, ["steps.compare=440", "contract=[learned]"]) == {}


def test_a_run_over_two_groups_gets_each_groups_figures_pooled_by_count() -> None:
    """A run scoring the shipped five and the mined held-out side reports each set apart, each
    fold weighed by how many decisions it holds; a run of one group reports the pooled row only."""
    from memops.core.sources import SHIPPED, group

    mined = group("mined-held-out")[0]

    def fold(compare: float, n: int) -> dict:
        return {"learned": {"compare": {"mean": compare, "n": n}, "update": {"mean": 1.0, "n": n}}}

    folds = {SHIPPED[0]: fold(1.0, 30), SHIPPED[1]: fold(0.5, 10), mined: fold(0.25, 4)}
    grouped = by_group(folds, "learned")
    assert grouped == {
        "compare shipped": 0.875,
        "update shipped": 1.0,
        "compare mined-held-out": 0.25,
        "update mined-held-out": 1.0,
    }
    assert by_group({SHIPPED[0]: fold(1.0, 30)}, "learned") == {}
