"""Audit the shipped mined benchmark against the repositories: every gold claim, value and commit.

    python benchmarks/audit_mined.py --clones DIR     # print each failure, write the sheet

``DIR`` is laid out as for ``benchmarks/mine_benchmark.py``. Each gold commit claim is checked by
``memops.data.audit``: the value re-read at its commit, changed from its parent, and written in
the files. The failures are printed one a line; ``memops/data/mined/AUDIT.md`` gets the summary,
every exception with its reason, and a sampled sheet (value, value before, the lines of the files
that hold it) to read against ``git show <commit>:<file>``. Exits 1 when a claim fails.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from mine_benchmark import REPOSITORIES, clone_of, trajectory_name

from memops.core.files import write_atomic
from memops.core.sources import MINED, Sources
from memops.data.audit import Finding, audit
from memops.data.catalog import load_read_from
from memops.data.problems import yaml_with_lines
from memops.data.trajectory import Annotation, read_export

SHEET = MINED / "AUDIT.md"
SAMPLE = 40
"""Claims on the sampled sheet (drawn with a fixed seed: the same set gives the same sheet)."""


def audit_all(clones: Path, names: dict[str, str]) -> list[Finding]:
    """Every claim of every trajectory, ``names`` mapping each trajectory to its repository."""
    _, read_from = load_read_from("python-project")
    sources = Sources.of([MINED], [MINED])
    found = []
    for name, repository in sorted(names.items()):
        annotation = Annotation.model_validate(yaml_with_lines(sources.annotation(name))[0])
        records = [r for _, r in read_export(sources.export(name))[0]]
        found += audit(clone_of(clones, repository), annotation, records, read_from)
    return found


def summary(findings: list[Finding]) -> str:
    failed = [f for f in findings if f.problems]
    return f"{len(findings) - len(failed)} of {len(findings)} gold claims pass the audit"


def sheet(findings: list[Finding]) -> str:
    failed = [f for f in findings if f.problems]
    lines = [
        "# Audit of the mined benchmark",
        "",
        f"{summary(findings)} (`python benchmarks/audit_mined.py --clones DIR`): each gold claim's value "
        "re-read at its commit, changed from the commit's parent, and every part of it written in the "
        "files there (`memops.data.audit`).",
        "",
        "## Exceptions" if failed else "No exceptions.",
        "",
    ]
    lines += [
        f"- `{f.trajectory}` {f.commit[:9]} {f.pair} = {f.value!r}: {'; '.join(f.problems)}" for f in failed
    ]
    lines += ["", f"## A sample of {SAMPLE} claims", ""]
    for f in sorted(
        random.Random(0).sample(findings, min(SAMPLE, len(findings))), key=lambda f: (f.trajectory, f.commit)
    ):
        lines.append(f"### `{f.trajectory}` {f.commit[:9]} {f.pair}")
        lines.append("")
        lines.append(f"- gold: {f.value}")
        lines.append(f"- at the parent: {f.before if f.before is not None else 'not stated'}")
        lines.append(f"- audit: {'; '.join(f.problems) or 'passes'}")
        lines += [f"- `{line}`" for line in f.lines]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clones", type=Path, required=True)
    args = parser.parse_args()
    findings = audit_all(args.clones, {trajectory_name(r): r for r in REPOSITORIES})
    for f in findings:
        if f.problems:
            print(f"{f.trajectory} {f.commit[:9]} {f.pair} = {f.value!r}: {'; '.join(f.problems)}")
    write_atomic(SHEET, sheet(findings))
    print(f"{summary(findings)}; wrote {SHEET}")
    sys.exit(1 if any(f.problems for f in findings) else 0)


if __name__ == "__main__":
    main()
