"""Mine the shipped benchmark of public Python repositories, write its card, or check it.

    python benchmarks/mine_benchmark.py --clones DIR           # mine every repository, write the card
    python benchmarks/mine_benchmark.py --clones DIR --check   # re-mine each into a scratch folder,
                                                               # compare it with the shipped bytes

``DIR`` holds one git clone (bare or not) per repository, as ``<owner>+<name>`` or
``<owner>+<name>/repo``, at the commit the card names. Each repository is mined from its whole
first-parent history with the ``python-project`` catalog into ``memops/data/mined/``
(``annotations=[mined] exports=[mined]``). The split into training and held-out repositories is
drawn once, by a hash of each name, and kept in ``split.json``: a rerun never moves a repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

from memops.core.files import write_atomic
from memops.core.sources import MINED, Sources
from memops.data.catalog import load_read_from
from memops.data.mine import Miner, mine
from memops.data.replay import load_trajectory, read_export

REPOSITORIES: dict[str, str] = {
    "pallets/click": "command-line framework",
    "pallets/itsdangerous": "signing library",
    "pallets/jinja": "template engine",
    "pallets/markupsafe": "string escaping with a C speedup",
    "pytest-dev/pluggy": "plugin system",
    "pytest-dev/pytest-mock": "pytest plugin",
    "pytest-dev/pytest-xdist": "pytest plugin, distributed runs",
    "pypa/packaging": "packaging standards library",
    "pypa/wheel": "packaging tool",
    "pypa/build": "build frontend",
    "pypa/pipx": "application installer",
    "python-attrs/attrs": "class boilerplate library",
    "tox-dev/filelock": "file locking",
    "tox-dev/platformdirs": "platform folders",
    "hynek/structlog": "structured logging",
    "hukkin/tomli": "TOML parser",
    "agronholm/anyio": "async compatibility layer",
    "marshmallow-code/marshmallow": "serialisation",
    "more-itertools/more-itertools": "iterator utilities",
    "jd/tenacity": "retrying",
    "tiangolo/typer": "command-line framework on click",
    "encode/httpx": "HTTP client",
    "python-jsonschema/jsonschema": "JSON Schema validation",
    "Delgan/loguru": "logging",
    "aio-libs/yarl": "URL parsing with a Cython speedup",
    "jazzband/pip-tools": "dependency pinning",
    "dateutil/dateutil": "date utilities",
}
"""GitHub repositories and what kind of project each is."""
HELDOUT_SHARE = 4
"""One repository in this many is held out (by the first byte of its name's SHA-256)."""
SPLIT = MINED / "split.json"
CARD = MINED / "README.md"


def trajectory_name(repository: str) -> str:
    return repository.replace("/", "-").lower()


def clone_of(clones: Path, repository: str) -> Path:
    folder = clones / repository.replace("/", "+")
    return folder / "repo" if (folder / "repo").exists() else folder


def shared_notes(names: list[str]) -> set[frozenset[str]]:
    """Pairs of repositories with a note in common (one author's same commit in both): such a
    pair must not straddle the split, or a held-out note is in training."""
    sources = Sources.of([MINED], [MINED])
    texts = {n: {s.text for s in load_trajectory(n, sources).sessions} for n in names}
    return {frozenset((a, b)) for a in names for b in names if a < b and texts[a] & texts[b]}


def split() -> dict[str, list[str]]:
    """The split of ``split.json``; drawn the first time, by a hash of each name, a held-out
    repository that shares a note with a training one moving to training."""
    if SPLIT.exists():
        return json.loads(SPLIT.read_text())
    names = sorted(trajectory_name(r) for r in REPOSITORIES)
    held = {n for n in names if hashlib.sha256(n.encode()).digest()[0] % HELDOUT_SHARE == 0}
    for pair in sorted(shared_notes(names), key=sorted):
        if len(pair & held) == 1:
            held -= pair
    drawn = {"train": [n for n in names if n not in held], "heldout": sorted(held)}
    write_atomic(SPLIT, json.dumps(drawn, indent=1) + "\n")
    return drawn


def card() -> str:
    sources = Sources.of([MINED], [MINED])
    drawn = split()
    names = sorted(trajectory_name(r) for r in REPOSITORIES)
    rows, total_claims, total_commits = [], 0, 0
    for repository, kind in sorted(REPOSITORIES.items(), key=lambda kv: trajectory_name(kv[0])):
        name = trajectory_name(repository)
        episode = load_trajectory(name, sources)
        records = [r for _, r in read_export(sources.export(name))[0]]
        notes = [s for s in episode.sessions if s.commit]
        claims = sum(len(s.claims) for s in notes)
        licence = next(
            (c.value for s in reversed(notes) for c in s.claims if c.pair == "project.license"), "not stated"
        )
        span = f"{records[0].author_date.date()} – {records[-1].author_date.date()}"
        part = "held out" if name in drawn["heldout"] else "train"
        url = f"https://github.com/{repository}"
        header = sources.annotation(name).read_text().splitlines()[0]
        tip = re.search(r" at ([0-9a-f]{12}) ", header).group(1)
        cells = [
            f"[{repository}]({url})",
            kind,
            licence,
            f"`{tip}`",
            span,
            str(len(notes)),
            str(claims),
            part,
        ]
        rows.append(f"| {' | '.join(cells)} |")
        total_claims += claims
        total_commits += len(notes)
    head = [
        "# Mined trajectories: public Python repositories",
        "",
        f"{len(REPOSITORIES)} repositories, {total_commits} commits that change a fact, {total_claims} gold "
        "claims, mined by `memops mine --catalog python-project` from each repository's whole first-parent "
        "history (`benchmarks/mine_benchmark.py`). A note is a commit's subject, the changed lines of the "
        "files that state the fact, its touched files and the start of its message; a gold value is what the "
        "files state after the commit. Nothing of the repositories but this metadata and those short diff "
        "lines is kept: no source file. Each repository's licence is the one its own files state at its last "
        "mined change (the `project.license` fact).",
        "",
        f"The split by repository is fixed in `split.json`: {len(drawn['train'])} train, "
        f"{len(drawn['heldout'])} held out, drawn by a hash of each name. Repositories with a note in common "
        "(one author's same commit in both) sit on the same side, so no held-out note is in training: "
        + ", ".join(
            " and ".join(f"`{n}`" for n in sorted(p)) for p in sorted(shared_notes(names), key=sorted)
        )
        + ".",
        "",
        "| repository | kind | licence | tip | commit span | commits | claims | split |",
        "| --- | --- | --- | --- | --- | ---: | ---: | --- |",
    ]
    return "\n".join([*head, *rows]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clones", type=Path, required=True)
    parser.add_argument("--check", action="store_true", help="re-mine and compare with the shipped files")
    args = parser.parse_args()
    catalog, read_from = load_read_from("python-project")
    tips, different = {}, []
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) if args.check else MINED
        for repository in REPOSITORIES:
            name = trajectory_name(repository)
            miner = Miner(clone_of(args.clones, repository), name, catalog, read_from)
            _, _, changes = mine(miner, out)
            tips[name] = miner.tip[:12]
            print(f"{repository}: {changes} fact changes at {tips[name]}", flush=True)
            if args.check:
                for suffix in (".yaml", ".jsonl"):
                    if (out / f"{name}{suffix}").read_bytes() != (MINED / f"{name}{suffix}").read_bytes():
                        different.append(f"{name}{suffix}")
    if args.check:
        print(
            f"{len(REPOSITORIES) - len({d.rsplit('.', 1)[0] for d in different})} of {len(REPOSITORIES)} "
            f"repositories mine to the shipped bytes"
            + (f"; differ: {', '.join(different)}" if different else "")
        )
        sys.exit(1 if different else 0)
    write_atomic(CARD, card())
    print(f"wrote {CARD}")


if __name__ == "__main__":
    main()
