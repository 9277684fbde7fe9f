"""Mine the shipped benchmark of public Python repositories, write its card, or check it.

    python benchmarks/mine_benchmark.py --clones DIR           # mine every repository, audit it,
                                                               # write the card and AUDIT.md
    python benchmarks/mine_benchmark.py --clones DIR --check   # re-mine each into a scratch folder,
                                                               # compare it with the shipped bytes

``DIR`` holds one git clone (bare or not) per repository, as ``<owner>+<name>`` or
``<owner>+<name>/repo``, at the commit the card names. Each repository is mined from its whole
first-parent history with the ``python-project`` catalog into ``memops/data/mined/``
(``annotations=[mined] exports=[mined]``). The split into training and held-out repositories is
drawn once, by a hash of each family's name (the owner), and kept in ``split.json``: a rerun never
moves a repository. The held-out side is mined first; a training note that repeats one of its
notes or quotes the same changed lines is left out, so no held-out note is in training.
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
from memops.data.catalog import ReadFrom, load_read_from
from memops.data.mine import DISPUTED, LEFT_OUT, Blobs, Miner, facts_at, files_at, mine
from memops.data.problems import yaml_with_lines
from memops.data.trajectory import Annotation, load_trajectory, read_export
from memops.eval.metrics import verbatim

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
    "psf/requests": "HTTP library",
    "psf/black": "code formatter, a CLI",
    "tqdm/tqdm": "progress bars",
    "PyCQA/flake8": "linter, a CLI with plugins",
    "PyCQA/isort": "import sorter, a CLI",
    "PyCQA/flake8-bugbear": "flake8 plugin",
    "pre-commit/pre-commit": "git hook manager, a CLI",
    "tox-dev/tox": "test environment manager, a CLI",
    "wntrblm/nox": "test automation, a CLI",
    "pypa/twine": "package upload tool",
    "pypa/flit": "build backend and tool",
    "Textualize/rich": "terminal rendering",
    "encode/starlette": "web framework",
    "encode/uvicorn": "web server, an application",
    "mkdocs/mkdocs": "documentation site generator",
    "httpie/cli": "HTTP client, an application",
    "cookiecutter/cookiecutter": "project templates, a CLI",
    "simonw/sqlite-utils": "SQLite library and CLI",
    "simonw/datasette": "data publishing, an application",
    "urllib3/urllib3": "HTTP library",
    "arrow-py/arrow": "date and time",
    "sdispater/pendulum": "date and time, with a Rust extension",
    "pytest-dev/pytest-cov": "pytest plugin, coverage",
    "pytest-dev/pytest-asyncio": "pytest plugin, asyncio",
    "pytest-dev/pytest-timeout": "pytest plugin, timeouts",
    "pydantic/pydantic-core": "validation core in Rust (maturin)",
    "ijl/orjson": "JSON library in Rust (maturin)",
    "samuelcolvin/watchfiles": "file watching in Rust (maturin)",
    "pdm-project/pdm": "package manager, an application",
    "python-poetry/poetry-core": "build backend",
    "aio-libs/multidict": "multidict with a C extension",
    "python-trio/trio": "async I/O library",
    "asottile/pyupgrade": "code upgrader, a CLI",
    "pyinvoke/invoke": "task runner",
    "benoitc/gunicorn": "WSGI server, an application",
    "spulec/freezegun": "test helper",
    "jaraco/keyring": "credential storage",
    "Python-Markdown/markdown": "Markdown parser",
    "executablebooks/markdown-it-py": "Markdown parser",
    "sqlalchemy/alembic": "database migrations",
    "pallets/flask": "web framework",
    "pallets/werkzeug": "WSGI toolkit",
    "mitmproxy/pdoc": "API documentation generator",
    "pygments/pygments": "syntax highlighter",
    "giampaolo/psutil": "system information with C extensions",
}
"""GitHub repositories and what kind of project each is."""
HELDOUT_SHARE = 4
"""One family of repositories in this many is held out (by the first byte of its name's SHA-256)."""
SPLIT = MINED / "split.json"
CARD = MINED / "README.md"


def trajectory_name(repository: str) -> str:
    return repository.replace("/", "-").lower()


def family(repository: str) -> str:
    """A repository's family: its owner. One organisation's projects share maintainers, who make
    the same edit across them at once (the pallets projects' ``requires-python`` moves), so a
    family sits on one side of the split."""
    return repository.split("/")[0].lower()


def clone_of(clones: Path, repository: str) -> Path:
    folder = clones / repository.replace("/", "+")
    return folder / "repo" if (folder / "repo").exists() else folder


def notes(name: str, sources: Sources) -> set[str]:
    """What a trajectory's notes say that another's could repeat: each note's text, and the
    changed lines a commit note quotes (one edit made across several repositories quotes the
    same lines in each)."""
    episode = load_trajectory(name, sources)
    annotation = Annotation.model_validate(yaml_with_lines(sources.annotation(name))[0])
    lines = {c.summary for c in annotation.commits if c.summary.startswith("Changed lines:")}
    return {s.text for s in episode.sessions} | lines


def split() -> dict[str, list[str]]:
    """The split of ``split.json``; drawn the first time by a hash of each family's name, so
    that it is known before anything is mined and a rerun never moves a repository."""
    if SPLIT.exists():
        return json.loads(SPLIT.read_text())
    families = {trajectory_name(r): family(r) for r in REPOSITORIES}
    held = {f for f in families.values() if hashlib.sha256(f.encode()).digest()[0] % HELDOUT_SHARE == 0}
    drawn = {
        "train": sorted(n for n, f in families.items() if f not in held),
        "heldout": sorted(n for n, f in families.items() if f in held),
    }
    write_atomic(SPLIT, json.dumps(drawn, indent=1) + "\n")
    return drawn


def licence_at_tip(miner: Miner, read_from: list[ReadFrom]) -> str:
    """The licence a repository's files state at its tip, or where they disagree, what each says."""
    source = [r for r in read_from if r.pair == "project.license"]
    blobs = Blobs(miner.repo)
    try:
        values, disputed = facts_at(files_at(miner.repo, blobs, miner.tip, list(source[0].files)), source)
    finally:
        blobs.close()
    if "project.license" in disputed:
        return f"disputed: {disputed['project.license']}"
    return values["project.license"] or "not stated"


def card(audited: str, licences: dict[str, str]) -> str:
    """The card; ``licences`` gives each repository's licence as its files state it at the tip."""
    sources = Sources.of([MINED], [MINED])
    drawn = split()
    rows, total_claims, total_commits, held_claims, flagged, left_out = [], 0, 0, 0, [], 0
    per_slot: dict[str, list[bool]] = {}
    for repository, kind in sorted(REPOSITORIES.items(), key=lambda kv: trajectory_name(kv[0])):
        name = trajectory_name(repository)
        episode = load_trajectory(name, sources)
        records = [r for _, r in read_export(sources.export(name))[0]]
        notes = [s for s in episode.sessions if s.commit]
        claims = sum(len(s.claims) for s in notes)
        for s in notes:
            for c in s.claims:
                per_slot.setdefault(c.pair, []).append(verbatim(c.value, f"{s.title}\n{s.text}"))
        licence = licences.get(name, "not stated")
        head = [line for line in sources.annotation(name).read_text().splitlines() if line.startswith("# ")]
        flagged += [
            f"`{name}` {line.removeprefix(DISPUTED).rstrip('.')}"
            for line in head
            if line.startswith(DISPUTED)
        ]
        left_out += sum(
            int(line.removeprefix(LEFT_OUT).split()[0]) for line in head if line.startswith(LEFT_OUT)
        )
        span = f"{records[0].author_date.date()} – {records[-1].author_date.date()}"
        part = "held out" if name in drawn["heldout"] else "train"
        url = f"https://github.com/{repository}"
        tip = re.search(r" at ([0-9a-f]{12}) ", head[0]).group(1)
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
        held_claims += claims if part == "held out" else 0
    families = sorted({family(r) for r in REPOSITORIES if trajectory_name(r) in drawn["heldout"]})
    head = [
        "# Mined trajectories: public Python repositories",
        "",
        f"{len(REPOSITORIES)} repositories, {total_commits} commits that change a fact, {total_claims} gold "
        "claims, mined by `memops mine --catalog python-project` from each repository's whole first-parent "
        "history (`benchmarks/mine_benchmark.py`). A note is a commit's subject, the changed lines of the "
        "files that state the fact, its touched files and the start of its message; a gold value is what the "
        "files state after the commit. Nothing of the repositories but this metadata and those short diff "
        "lines is kept: no source file. Each repository's licence is the one its own files state at its tip "
        "(the `project.license` reader).",
        "",
        "Values are compared by meaning before a change is recorded (`memops.data.facts`): licences as SPDX "
        "ids (a bare BSD told 2- or 3-clause by its text), version specifiers and tool names in one "
        "spelling, so a respelling is no change. A fact whose file cannot be parsed at a commit is unknown "
        "there and keeps its last value. "
        + (
            "Facts whose files disagree are left out: " + "; ".join(flagged) + "."
            if flagged
            else "No fact had files that disagree."
        ),
        "",
        f"**Audit**: {audited} (`python benchmarks/audit_mined.py --clones DIR`, every exception and a "
        "sampled sheet in `AUDIT.md`).",
        "",
        f"The split is by family (a repository's owner: one organisation's maintainers make one edit "
        f"across its projects) and fixed in `split.json`: {len(drawn['train'])} train, "
        f"{len(drawn['heldout'])} held out with {held_claims} gold claims (the families "
        + ", ".join(f"`{f}`" for f in families)
        + "), drawn by a hash of each family's name. A training note that repeats a held-out note, or "
        "quotes the same changed lines (`requires-python` raised from 3.8 to 3.9 in two unrelated "
        f"projects), is left out of its trajectory, so no held-out note is in training: {left_out} "
        "training notes are left out this way.",
        "",
        "| slot | gold claims | value written in its note |",
        "| --- | ---: | ---: |",
        *(
            f"| `{pair}` | {len(seen)} | {sum(seen) / len(seen):.0%} |"
            for pair, seen in sorted(per_slot.items(), key=lambda kv: -len(kv[1]))
        ),
        "",
        "| repository | kind | licence | tip | commit span | commits | claims | split |",
        "| --- | --- | --- | --- | --- | ---: | ---: | --- |",
    ]
    return "\n".join([*head, *rows]) + "\n"


def main() -> None:
    from audit_mined import SHEET, audit_all, sheet, summary  # a sibling script: it imports this one

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clones", type=Path, required=True)
    parser.add_argument("--check", action="store_true", help="re-mine and compare with the shipped files")
    args = parser.parse_args()
    catalog, read_from = load_read_from("python-project")
    drawn = split()
    order = sorted(REPOSITORIES, key=lambda r: trajectory_name(r) not in drawn["heldout"])
    tips, licences, different, held_notes = {}, {}, [], set()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) if args.check else MINED
        for repository in order:  # the held-out side first: the training side leaves out its notes
            name = trajectory_name(repository)
            miner = Miner(clone_of(args.clones, repository), name, catalog, read_from)
            held = name in drawn["heldout"]
            _, _, changes = mine(miner, out, leave_out=() if held else held_notes)
            if held:
                held_notes |= notes(name, Sources.of([out], [out]))
            tips[name], licences[name] = miner.tip[:12], licence_at_tip(miner, read_from)
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
    findings = audit_all(args.clones, {trajectory_name(r): r for r in REPOSITORIES})
    write_atomic(SHEET, sheet(findings))
    write_atomic(CARD, card(summary(findings), licences))
    print(f"{summary(findings)}; wrote {CARD} and {SHEET}")


if __name__ == "__main__":
    main()
