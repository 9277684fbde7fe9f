"""Decoding parity of two runs over the same samples: the share whose raw model text is identical.

Two backends that decode greedily under the same grammar, chat template and stop token, on the
same weights in the same dtype, should write the same text. Comparing raw text, not scores,
catches a difference even where both answers happen to be right (or wrong). An engine replay
writes no text of its own: its records (each key's final value, each query's answer) are
compared by what they hold, so a replay that drifted anywhere shows.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from memops.eval.scored import read_records, record_key


def said(record: dict[str, Any]) -> str:
    """A model call's raw text; for an engine record (no text), what it holds."""
    return record["raw"] if record["raw"] is not None else json.dumps(record["parsed"], sort_keys=True)


def parity(run_a: Path, run_b: Path) -> dict[str, dict[str, Any]]:
    """Per op (engine replays included) and model variant (learned, extraction modes, prompted):
    samples in both runs, how many are identical, and the share."""
    a = {record_key(r): said(r) for r in read_records(run_a / "records.jsonl")}
    b = {record_key(r): said(r) for r in read_records(run_b / "records.jsonl")}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for key in sorted(a.keys() & b.keys()):
        _, op, variant, _ = key
        if variant == "symbolic":
            continue
        name = op if variant == "learned" else f"{op}/{variant}"
        counts[name][0] += a[key] == b[key]
        counts[name][1] += 1
    return {
        name: {"identical": same, "samples": total, "share": same / total if total else None}
        for name, (same, total) in sorted(counts.items())
    }
