"""Write a trajectory's commit metadata (JSONL) from a git checkout.

memops export-commits --repo PATH --trajectory data/trajectories/NAME.yaml [--out FILE]
memops export-commits --repo PATH --commits FILE --name NAME [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memops.core.sources import EXPORTED
from memops.data.export import ExportError, commits_from_file, commits_from_trajectory, export


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="a git checkout (or bare clone)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--commits", type=Path, help="file with one commit name per line")
    source.add_argument("--trajectory", type=Path, help="an annotation YAML; exports the commits it names")
    parser.add_argument("--name", help="trajectory name (default: from the YAML)")
    parser.add_argument("--out", type=Path, help=f"output JSONL (default: {EXPORTED}/<name>.jsonl)")
    args = parser.parse_args()
    try:
        if args.trajectory:
            name, commits = commits_from_trajectory(args.trajectory)
        else:
            if not args.name:
                parser.error("--commits needs --name")
            name, commits = args.name, commits_from_file(args.commits)
        out = args.out or Path(EXPORTED) / f"{args.name or name}.jsonl"
        records = export(args.repo, commits, args.name or name, out)
    except ExportError as exc:
        print(f"memops export-commits: {exc}", file=sys.stderr)
        sys.exit(1)
    print(f"wrote {len(records)} commits to {out}")


if __name__ == "__main__":
    main()
