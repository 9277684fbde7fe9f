"""Mine a trajectory from a git repository: memops mine <repository> --catalog <yaml>

Every first-parent commit that changes a fact of the catalog (read from the repository's own
files at that commit, as the catalog's ``read_from`` says) becomes an annotated commit with its
note and gold claims; distractors and queries are generated from the mined history. The output,
``<name>.yaml`` and ``<name>.jsonl``, joins the pipeline through ``annotations=`` and ``exports=``.
An interrupted run resumes from its journal (a run under another catalog or --since reads from the
start); the same tip mines to the same bytes.

    memops mine ~/src/click --catalog python-project --name pallets-click
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from memops.core.layout import OUTPUTS
from memops.core.names import safe_name
from memops.data.catalog import load_read_from
from memops.data.export import ExportError
from memops.data.mine import MineError, Miner, mine
from memops.data.problems import DataError
from memops.track.git import SINCE_HELP, moment


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="memops mine", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("repository", type=Path)
    parser.add_argument(
        "--catalog", required=True, help="a catalog YAML with read_from, or a shipped one: python-project"
    )
    parser.add_argument("--name", help="the trajectory's name (default: the repository folder's)")
    parser.add_argument("--branch", default="HEAD", help="the branch (or any revision) to follow")
    parser.add_argument("--since", type=moment, help=SINCE_HELP + "; the values before it are the start")
    parser.add_argument("--out", type=Path, default=Path(OUTPUTS) / "mined", help="default: outputs/mined")
    args = parser.parse_args()
    repo = args.repository.expanduser().resolve()
    try:
        name = safe_name("--name", args.name or repo.name)
        catalog, read_from = load_read_from(args.catalog)
        miner = Miner(repo, name, catalog, read_from, args.branch, args.since)

        def progress(commits, total):
            return tqdm(
                commits,
                desc=name,
                unit="commit",
                initial=total - len(commits),
                total=total,
                disable=not sys.stderr.isatty(),
            )

        annotation, export, claims = mine(miner, args.out, progress)
    except (DataError, ExportError, MineError, ValueError) as exc:
        sys.exit(f"memops mine: {exc}")
    print(f"{name}: {claims} fact changes mined at {miner.tip[:12]}; wrote {annotation} and {export}")


if __name__ == "__main__":
    main()
