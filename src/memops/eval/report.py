"""A run's report, rebuilt from its per-sample records alone (no model needed): ``summary.json``,
``report.md`` and ``figures/``; and the records of a run's folds, scored by separate jobs,
gathered into one run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memops.core.files import write_atomic
from memops.eval.contract import CONTRACT_RECORDS, read_contract
from memops.eval.figures import figures
from memops.eval.scored import Record, RecordsError, read_records, write_records
from memops.eval.summary import summarize
from memops.eval.tables import markdown


def build_report(run_dir: Path) -> dict[str, Any]:
    """Write summary.json, report.md and figures/ for a run directory from its records."""
    records = read_records(run_dir / "records.jsonl")
    if not records:
        raise FileNotFoundError(f"no records in {run_dir / 'records.jsonl'}")
    manifest = run_dir / "manifest.json"
    run = json.loads(manifest.read_text())["run"] if manifest.exists() else {}
    summary = summarize(records)
    summary["contract"] = read_contract(run_dir)
    write_atomic(run_dir / "summary.json", json.dumps(summary, indent=1) + "\n")
    write_atomic(run_dir / "report.md", markdown(summary, run))
    figures(summary, records, run_dir / "figures")
    return summary


def merge_folds(run_dir: Path, folds: list[str]) -> int:
    """Gather the per-fold runs under ``<run>/folds/`` (one Slurm eval job each) into the run's
    own records and manifest; returns the number of records."""
    from memops.data.manifest import write_manifest

    records: list[Record] = []
    parts: dict[str, dict[str, Any]] = {}
    for fold in folds:
        part = run_dir / "folds" / fold
        path = part / "records.jsonl"
        if not path.exists():
            raise FileNotFoundError(f"no records for fold {fold}: {path} does not exist")
        found = read_records(path)
        strangers = sorted({r["fold"] for r in found} - {fold})
        if strangers:
            raise RecordsError(
                f"{path}: holds records of fold(s) {', '.join(strangers)}, expected {fold} only"
            )
        records += found
        manifest = part / "manifest.json"
        parts[fold] = json.loads(manifest.read_text()) if manifest.exists() else {}
    write_records(run_dir / "records.jsonl", records)
    # Each fold's job scored the same contract suite; the first fold's records stand for the run.
    suites = [run_dir / "folds" / fold / CONTRACT_RECORDS for fold in folds]
    if scored := next((path for path in suites if path.exists()), None):
        write_records(run_dir / CONTRACT_RECORDS, read_records(scored))
    first = parts[folds[0]].get("run", {})
    write_manifest(
        run_dir,
        run={**first, "name": run_dir.name, "folds": folds},
        parts={fold: str(run_dir / "folds" / fold) for fold in folds},
        part_commits={fold: m.get("git_commit") for fold, m in parts.items()},
        part_phases={fold: m.get("phases") for fold, m in parts.items()},
        records=len(records),
    )
    return len(records)
