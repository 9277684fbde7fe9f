"""Seeds swept one command at a time add up to one table, and only where the runs are the same."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.seed_sweep import earlier_rows

OVERRIDES = ["steps.compare=880", "contract=[learned]"]


def test_rows_of_an_earlier_sweep_of_the_same_runs_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "seeds.json"
    assert earlier_rows(path, OVERRIDES) == {}
    rows = {"2": {"compare": 0.95, "wall_s": 4320}}
    path.write_text(json.dumps({"config": "smollm2-cpu", "overrides": OVERRIDES, "rows": rows}))
    assert earlier_rows(path, OVERRIDES) == {2: {"compare": 0.95, "wall_s": 4320}}
    assert earlier_rows(path, ["steps.compare=440", "contract=[learned]"]) == {}
