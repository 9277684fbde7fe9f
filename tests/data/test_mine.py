"""memops mine over a repository made here: a dozen commits that change config files as people do
(facts added, moved between files, replaced, a commit that changes nothing), mined to exactly the
trajectory the files state; deterministic, resumable, and refusing what it cannot read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memops.core.records import added_lines
from memops.core.sources import Sources
from memops.core.values import candidates
from memops.data.catalog import load_read_from
from memops.data.mine import MineError, Miner, excerpt, mine
from memops.data.problems import DataError
from memops.data.trajectory import load_trajectory
from tests.data.test_export import git

SETUP_PY = """from setuptools import setup

setup(
    name="demo",
    python_requires=">=3.7",
    install_requires=["click>=7.0", "attrs"],
    license="MIT",
)
"""
WORKFLOW = """on: push
jobs:
  test:
    runs-on: {runs_on}
    steps:
      - run: pytest
"""
PRE_COMMIT = "repos:\n" + "".join(
    f"  - repo: https://example.com/{hook}\n    hooks:\n      - id: {hook}\n" for hook in ("{0}", "{1}")
)
PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "demo"
description = "{description}"
requires-python = "{python}"
dependencies = ["click>=8.0", "attrs"]
license = "{licence}"
"""

HISTORY: list[tuple[str, dict[str, str | None]]] = [
    ("Initial layout", {"setup.py": SETUP_PY}),
    ("Add a README", {"README.md": "# demo\n"}),
    ("Configure pytest", {"setup.cfg": "[tool:pytest]\ntestpaths = tests\n"}),
    ("Run CI on GitHub", {".github/workflows/test.yml": WORKFLOW.format(runs_on="ubuntu-latest")}),
    (
        "Lint in pre-commit",
        {".pre-commit-config.yaml": "repos:\n  - repo: x\n    hooks:\n      - id: flake8\n"},
    ),
    (
        "Test on macOS too",
        {
            ".github/workflows/test.yml": WORKFLOW.format(runs_on="${{ matrix.os }}")
            + "    strategy:\n      matrix:\n        os: [ubuntu-latest, macos-latest]\n"
        },
    ),
    (
        "Move the metadata to pyproject.toml",
        {
            "setup.py": None,
            "pyproject.toml": PYPROJECT.format(description="a demo", python=">=3.8", licence="MIT"),
        },
    ),
    ("Format with black", {".pre-commit-config.yaml": PRE_COMMIT.format("flake8", "black")}),
    (
        "Replace flake8 and black with ruff",
        {".pre-commit-config.yaml": PRE_COMMIT.format("ruff", "ruff-format")},
    ),
    (
        "Reword the description",
        {"pyproject.toml": PYPROJECT.format(description="a small demo", python=">=3.8", licence="MIT")},
    ),
    (
        "Drop Python 3.8",
        {"pyproject.toml": PYPROJECT.format(description="a small demo", python=">= 3.9", licence="MIT")},
    ),
    (
        "Relicense",
        {
            "pyproject.toml": PYPROJECT.format(
                description="a small demo", python=">= 3.9", licence="Apache-2.0"
            )
        },
    ),
]

EXPECTED = [
    (
        "Initial layout",
        [
            ("python.supported_versions", ">=3.7"),
            ("project.license", "MIT"),
            ("dependencies.minimums", "click>=7.0"),
        ],
    ),
    ("Configure pytest", [("tests.runner", "pytest")]),
    ("Run CI on GitHub", [("ci.platforms", "GitHub Actions on Linux")]),
    ("Lint in pre-commit", [("lint.linter", "flake8")]),
    ("Test on macOS too", [("ci.platforms", "GitHub Actions on Linux, macOS")]),
    (
        "Move the metadata to pyproject.toml",
        [
            ("python.supported_versions", ">=3.8"),
            ("build.backend", "hatchling.build"),
            ("dependencies.minimums", "click>=8.0"),
        ],
    ),
    ("Format with black", [("lint.formatter", "black")]),
    ("Replace flake8 and black with ruff", [("lint.linter", "ruff"), ("lint.formatter", "ruff format")]),
    ("Drop Python 3.8", [("python.supported_versions", ">=3.9")]),
    ("Relicense", [("project.license", "Apache-2.0")]),
]
"""What the files state, commit by commit: the README and the reworded description change no
fact, moving the licence from setup.py to pyproject.toml keeps it, and pytest stays configured
when setup.cfg does."""


def make_repo(path: Path) -> None:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for day, (subject, files) in enumerate(HISTORY, start=1):
        for name, text in files.items():
            target = path / name
            if text is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", subject, date=f"2024-03-{day:02d}T10:00:00+01:00")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mine") / "demo"
    make_repo(path)
    return path


def run_mine(repo: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    argv = [
        sys.executable,
        "-m",
        "memops",
        "mine",
        str(repo),
        "--catalog",
        "python-project",
        "--out",
        str(out),
    ]
    return subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=300)


def test_mining_gives_exactly_what_the_files_state(repo: Path, tmp_path: Path) -> None:
    done = run_mine(repo, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "demo: 15 fact changes mined" in done.stdout
    episode = load_trajectory("demo", Sources.of([tmp_path], [tmp_path]))
    commits = [s for s in episode.sessions if s.commit]
    assert [(s.title, [(c.pair, c.value) for c in s.claims]) for s in commits] == EXPECTED
    assert {c.evidence_type for s in commits for c in s.claims} == {"code-change"}

    # The note carries the changed lines that state the fact, whatever the subject says.
    drop = next(s for s in commits if s.title == "Drop Python 3.8")
    assert (
        'pyproject.toml: -requires-python = ">=3.8" | pyproject.toml: +requires-python = ">= 3.9"'
        in drop.text
    )
    moved = next(s for s in commits if s.title.startswith("Move the metadata"))
    assert 'setup.py: -python_requires=">=3.7",' in moved.text and "build-backend" in moved.text

    # Distractors after the last commit state old values; queries ask the value now, then, and
    # the commit of each slot's last change.
    last = max(s.at for s in commits)
    stale = [s for s in episode.sessions if not s.commit]
    assert len(stale) == 4 and all(s.at > last for s in stale)
    olds = {(p, v) for _, claims in EXPECTED for p, v in claims} - {(c.pair, c.value) for c in drop.claims}
    assert all((c.pair, c.value) in olds for s in stale for c in s.claims)
    assert [c.branch for c in stale[-1].claims] == ["maint/legacy"]
    kinds = [q.type for q in episode.queries]
    assert kinds.count("provenance") == 8 and "temporal" in kinds and "stale-suppression" in kinds
    provenance = {q.target.key.slot: q.required for q in episode.queries if q.type == "provenance"}
    relicense = next(s for s in commits if s.title == "Relicense")
    assert provenance["license"] == (relicense.commit,)
    now = next(
        q for q in episode.queries if q.target.slot == "supported_versions" and q.target.ask == "value"
    )
    assert now.accepts(">=3.9") and not now.accepts(">=3.8")


def test_the_same_repository_mines_to_the_same_bytes_and_an_interrupted_run_resumes(
    repo: Path, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert run_mine(repo, first).returncode == 0
    catalog, read_from = load_read_from("python-project")
    miner = Miner(repo, "demo", catalog, read_from)
    journal = second / ".demo.mined.jsonl"
    read: list[str] = []

    def cut(commits, total):  # reads four commits, then the run dies mid-line
        for i, commit in enumerate(commits):
            if i == 4:
                journal.write_text(journal.read_text() + '{"commit": "0a1b')
                raise KeyboardInterrupt
            read.append(commit)
            yield commit

    with pytest.raises(KeyboardInterrupt):
        mine(miner, second, cut)
    assert len(journal.read_text().splitlines()) == 6  # what it was read under, four whole lines, the cut one
    again: list[str] = []
    mine(miner, second, lambda commits, total: (again.append(c) or c for c in commits))
    assert not set(read) & set(again) and len(read) + len(again) == 11  # every config commit read once
    for name in ("demo.yaml", "demo.jsonl"):
        assert (second / name).read_bytes() == (first / name).read_bytes()
    assert not journal.exists()


def test_what_cannot_be_mined_is_refused_with_the_reason(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    done = run_mine(plain, tmp_path / "out")
    assert done.returncode == 1 and "not a git repository" in done.stderr

    done = run_mine(repo, tmp_path / "out", "--branch", "nowhere")
    assert done.returncode == 1 and "no branch or revision 'nowhere'" in done.stderr

    done = run_mine(repo, tmp_path / "out", "--since", "2024-03-11T00:00:00+01:00")
    assert done.returncode == 1 and "2 fact change(s) on HEAD since 2024-03-11T00:00:00+01:00" in done.stderr

    catalog = tmp_path / "slots.yaml"
    catalog.write_text(
        "catalog:\n  - {entity: python, slot: versions, description: the versions}\n"
        "read_from:\n  python.versions: {reader: guess, files: [setup.py]}\n"
    )
    with pytest.raises(DataError) as caught:
        load_read_from(catalog)
    assert f"{catalog}:4: read_from.python.versions.reader: unknown reader 'guess'" in str(caught.value)
    done = subprocess.run(
        [sys.executable, "-m", "memops", "mine", str(repo), "--catalog", str(catalog)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 1 and "unknown reader 'guess'" in done.stderr
    assert not (tmp_path / "outputs").exists()

    with pytest.raises(MineError, match="needs at least 5"):
        mine(
            Miner(repo, "demo", *load_read_from("python-project"), since="2024-03-10T00:00:00+01:00"),
            tmp_path / "x",
        )


def test_a_shipped_catalog_without_read_from_cannot_be_mined(tmp_path: Path) -> None:
    catalog = tmp_path / "slots.yaml"
    catalog.write_text("catalog:\n  - {entity: python, slot: versions, description: the versions}\n")
    with pytest.raises(DataError, match="no read_from"):
        load_read_from(catalog)


def test_a_resume_under_another_catalog_reads_again(repo: Path, tmp_path: Path) -> None:
    """Probe 1: a run refused under a catalog of two slots left its journal; a run under the whole
    catalog must not take those facts as read (it credited hatchling.build to a later commit)."""
    two = tmp_path / "two.yaml"
    two.write_text(
        "catalog:\n"
        '  - {entity: project, slot: license, description: "the licence"}\n'
        '  - {entity: lint, slot: linter, description: "the linter"}\n'
        "read_from:\n"
        "  project.license: {reader: licence, files: [pyproject.toml, setup.cfg, setup.py, LICENSE*]}\n"
        "  lint.linter: {reader: linters, files: [.pre-commit-config.yaml, pyproject.toml, setup.cfg]}\n"
    )
    out = tmp_path / "out"
    refused = run_mine(repo, out, "--catalog", str(two), "--name", "demo")
    assert refused.returncode == 1, refused.stderr
    assert list(out.glob(".demo.mined.jsonl")), "the refused run keeps its journal"
    done = run_mine(repo, out, "--name", "demo")
    assert done.returncode == 0, done.stderr
    clean = run_mine(repo, tmp_path / "clean", "--name", "demo")
    assert clean.returncode == 0, clean.stderr
    assert (out / "demo.yaml").read_text() == (tmp_path / "clean" / "demo.yaml").read_text()


def test_mine_runs_none_of_the_repositorys_programs(tmp_path: Path) -> None:
    """Probe 4: a textconv driver named by .gitattributes and the repository's config would run
    on every git diff; nor may an external diff or a --branch that is an option run."""
    path = tmp_path / "evil"
    make_repo(path)
    ran = tmp_path / "ran"
    git(path, "config", "diff.evil.textconv", f"sh -c 'touch {ran}; cat \"$0\"'")
    git(path, "config", "diff.external", f"sh -c 'touch {ran}'")
    (path / ".gitattributes").write_text("* diff=evil\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "attributes", date="2024-03-30T10:00:00+01:00")
    done = run_mine(path, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    from memops.track.git import commits

    assert commits(path)[-1].subject == "attributes"
    assert not ran.exists()
    wrote = tmp_path / "written"
    done = run_mine(path, tmp_path / "out2", f"--branch=--output={wrote}")
    assert done.returncode != 0 and not wrote.exists()


@pytest.mark.parametrize(
    "name, text",
    [
        ("pyproject.toml", 'build-system = "x"\n'),
        ("pyproject.toml", "[tool.poetry]\ndependencies = ['a', 'b']\n"),
        ("pyproject.toml", f"[project]\nversion = {'9' * 5000}\n"),
        (
            "setup.py",
            "from setuptools import setup\nsetup(python_requires="
            + "(" * 400
            + "'>=3.8'"
            + ")" * 400
            + ")\n",
        ),
    ],
    ids=["build-system-a-string", "poetry-dependencies-a-list", "5000-digit-integer", "deep-setup-py"],
)
def test_a_file_no_reader_can_take_states_nothing_and_the_mine_goes_on(name: str, text: str) -> None:
    """Probe 8: each aborted the whole mine, on every rerun."""
    from memops.data.mine import facts_at

    _, read_from = load_read_from("python-project")
    facts, _ = facts_at({name: text}, read_from)
    assert set(facts) == {r.pair for r in read_from}
    assert all(v is None or isinstance(v, str) for v in facts.values())


MIT_TEXT = "Permission is hereby granted, free of charge, to any person obtaining a copy\n"
RESPELLED: list[tuple[str, dict[str, str | None]]] = [
    (
        "Start",
        {
            "pyproject.toml": PYPROJECT.format(description="d", python=">=3.8", licence="MIT"),
            "LICENSE": MIT_TEXT,
        },
    ),
    (
        "Respell",
        {"pyproject.toml": PYPROJECT.format(description="d", python=">= 3.8.0", licence="MIT License")},
    ),
    ("Break the TOML", {"pyproject.toml": "[project\nname = 'demo'\n"}),
    ("Mend it", {"pyproject.toml": PYPROJECT.format(description="d", python=">=3.8", licence="MIT")}),
    (
        "Relicense the metadata only",
        {"pyproject.toml": PYPROJECT.format(description="d", python=">=3.9", licence="GPLv3")},
    ),
]


def test_a_respelling_an_unreadable_file_and_a_disputed_licence_are_no_change(tmp_path: Path) -> None:
    """Issue 84: a respelled licence or specifier, a pyproject.toml that went unparsable and came
    back, each made a claim (``supersede`` or ``merge`` in the cases); a licence the metadata and
    the LICENSE text disagree on is left out and reported, not picked."""
    path = tmp_path / "respelled"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for day, (subject, files) in enumerate(RESPELLED, start=1):
        for name, text in files.items():
            (path / name).write_text(text)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", subject, date=f"2024-03-{day:02d}T10:00:00+01:00")
    catalog, read_from = load_read_from("python-project")
    miner = Miner(path, "respelled", catalog, read_from)
    start, facts, disputes = miner.read_all(tmp_path / "journal.jsonl", lambda it, n: it)
    subjects = dict(zip(facts, (s for s, _ in RESPELLED), strict=True))
    found = [(subjects[c.commit], c.pair, c.value) for c in miner.changes(start, facts)]
    assert found == [
        ("Start", "python.supported_versions", ">=3.8"),
        ("Start", "build.backend", "hatchling.build"),
        ("Start", "project.license", "MIT"),
        ("Start", "dependencies.minimums", "click>=8.0"),
        ("Relicense the metadata only", "python.supported_versions", ">=3.9"),
    ]
    assert [(subjects[d.commit], d.pair) for d in disputes] == [
        ("Relicense the metadata only", "project.license")
    ]
    assert "pyproject.toml says GPL-3.0; LICENSE says MIT" in disputes[0].what


def test_the_audit_passes_every_mined_claim_and_names_what_a_wrong_gold_gets_wrong(
    repo: Path, tmp_path: Path
) -> None:
    from memops.data.audit import audit
    from memops.data.problems import yaml_with_lines
    from memops.data.trajectory import Annotation, read_export

    assert run_mine(repo, tmp_path).returncode == 0
    annotation = Annotation.model_validate(yaml_with_lines(tmp_path / "demo.yaml")[0])
    records = [r for _, r in read_export(tmp_path / "demo.jsonl")[0]]
    _, read_from = load_read_from("python-project")
    findings = audit(repo, annotation, records, read_from)
    assert len(findings) == 15 and not [f.problems for f in findings if f.problems]

    # One gold value made wrong (the licence of the first commit), one credited to the wrong commit.
    first, second = annotation.commits[0], annotation.commits[1]
    wrong = first.model_copy(
        update={
            "claims": (
                first.claims[0],
                first.claims[1].model_copy(update={"value": "Apache-2.0"}),
                first.claims[2],
            )
        }
    )
    late = second.model_copy(update={"commit": annotation.commits[2].commit})
    broken = annotation.model_copy(update={"commits": (wrong, late, *annotation.commits[2:])})
    problems = {(f.pair, f.value): f.problems for f in audit(repo, broken, records, read_from) if f.problems}
    assert problems[("project.license", "Apache-2.0")] == [
        "value: the files give 'MIT'",
        "evidence: apache not in the files",
    ]
    assert problems[("tests.runner", "pytest")] == ["unchanged: the parent states the same value"]


def test_a_note_another_trajectory_repeats_is_left_out(repo: Path, tmp_path: Path) -> None:
    """A benchmark's training side leaves out the notes its held-out side holds (issue 84: 54 of
    195 held-out notes quoted the changed lines of a training note)."""
    catalog, read_from = load_read_from("python-project")
    mine(Miner(repo, "demo", catalog, read_from), tmp_path / "all")
    whole = load_trajectory("demo", Sources.of([tmp_path / "all"], [tmp_path / "all"]))
    drop = next(s for s in whole.sessions if s.title == "Drop Python 3.8")
    quoted = drop.text.split("\n\n")[1]
    assert quoted.startswith("Changed lines:")
    mine(Miner(repo, "demo", catalog, read_from), tmp_path / "left", leave_out={quoted})
    left = load_trajectory("demo", Sources.of([tmp_path / "left"], [tmp_path / "left"]))
    assert [s.title for s in left.sessions if s.commit] == [
        s.title for s in whole.sessions if s.commit and s.title != "Drop Python 3.8"
    ]
    assert "# Left out: 1 note(s)" in (tmp_path / "left" / "demo.yaml").read_text()


def test_a_mined_note_reads_back_the_lines_its_commit_added(repo: Path, tmp_path: Path) -> None:
    """``added_lines`` reads the paragraph ``changed_summary`` writes: the new specifier is on an
    added line, the old one on a removed line only."""
    catalog, read_from = load_read_from("python-project")
    mine(Miner(repo, "demo", catalog, read_from), tmp_path)
    episode = load_trajectory("demo", Sources.of([tmp_path], [tmp_path]))
    drop = next(s for s in episode.sessions if s.title == "Drop Python 3.8")
    versions = catalog.value_type("python.supported_versions")
    [claim] = [c for c in drop.claims if c.pair == "python.supported_versions"]
    assert candidates(versions, "\n".join(line for _, line in added_lines(drop.text) or [])) == [claim.value]
    assert len(candidates(versions, drop.text)) == 2  # the old value, on its removed line
    assert added_lines("Drop Python 3.8\n\nChanged files: setup.cfg") == []
    assert added_lines("Drop Python 3.8\n\nTouched files: setup.cfg.") is None  # says nothing of lines


def test_a_spread_excerpt_takes_a_slots_lines_a_file_at_a_time() -> None:
    """keyring's ``pytest.ini`` holds four lines naming pytest before ``tox.ini`` names it: an
    excerpt in diff order shows that pytest is run by tox only when spread over the files."""
    lines = [("pytest.ini", f"+pytest option {i}") for i in range(4)] + [("tox.ini", "+pytest {posargs}")]
    marks = ["pytest", "tox"]
    assert "tox.ini: +pytest {posargs}" not in excerpt(lines, marks, ())
    spread = excerpt(lines, marks, (), spread=True)
    assert spread == [*(f"pytest.ini: +pytest option {i}" for i in range(3)), "tox.ini: +pytest {posargs}"]
