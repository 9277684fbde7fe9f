"""memops track over a git repository nobody annotated, on the tiny model's adapters: a dozen
commits that change the facts of the shipped python-project catalog, with messages as people
write them. The plumbing, not the quality: every commit read once, state written with its
commits, a second run reads only what is new, a rewritten history and a malformed catalog are
refused with what to do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memops.core.locks import exclusive
from memops.core.records import Note, added_lines
from memops.data.export import ExportError
from memops.track.git import commits
from memops.track.memory import ProjectMemory
from tests.data.test_export import git

pytestmark = pytest.mark.slow

HISTORY = [
    ("pyproject.toml", 'requires-python = ">=3.8"\n', "Initial packaging with setuptools, Python 3.8+"),
    ("tox.ini", "[tox]\nenvlist = py38,py39\n", "Run the tests with pytest under tox"),
    (".github/workflows/ci.yml", "on: push\n", "Add a GitHub Actions workflow for Linux"),
    ("LICENSE", "MIT\n", "License the project under MIT"),
    (".pre-commit-config.yaml", "repos: [flake8]\n", "Lint with flake8 in pre-commit"),
    ("pyproject.toml", 'requires-python = ">=3.9"\n', "Drop Python 3.8, it is end of life"),
    (".pre-commit-config.yaml", "repos: [black]\n", "Format the code with black"),
    ("pyproject.toml", "[build-system]\nrequires = ['hatchling']\n", "Switch the build backend to hatchling"),
    (".pre-commit-config.yaml", "repos: [ruff]\n", "Replace flake8 with ruff"),
    (
        ".github/workflows/ci.yml",
        "on: push\nos: [ubuntu, windows, macos]\n",
        "CI: test on Windows and macOS too",
    ),
    ("pyproject.toml", "dependencies = ['numpy>=1.24']\n", "Require numpy 1.24 or newer"),
    ("LICENSE", "Apache-2.0\n", "Relicense under Apache 2.0"),
]


def make_repo(path: Path) -> None:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for day, (file, text, subject) in enumerate(HISTORY, start=1):
        (path / file).parent.mkdir(parents=True, exist_ok=True)
        (path / file).write_text(text)
        git(path, "add", ".")
        git(path, "commit", "-q", "-m", subject, date=f"2024-03-{day:02d}T10:00:00+01:00")


def track(work: Path, repo: Path, adapters: Path, tiny: Path, *extra: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "memops", "track", str(repo), "--catalog", "python-project"]
    argv += ["--adapters", str(adapters), *extra, f"model.path={tiny}"]
    return subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=900)


def test_track_reads_each_commit_once_and_resumes(
    trained_adapters: Path, tiny_model: Path, tmp_path: Path
) -> None:
    repo, work = tmp_path / "mylib", tmp_path / "work"
    make_repo(repo)
    work.mkdir()
    first = track(work, repo, trained_adapters, tiny_model)
    assert first.returncode == 0, first.stderr
    assert "mylib: 12 commits on HEAD, 12 new" in first.stdout
    (out,) = (work / "outputs" / "track").glob("mylib-*")  # the repository's name and root commit
    saved = json.loads((out / "memory.json").read_text())
    shas = git(repo, "rev-list", "--reverse", "HEAD").split()
    assert saved["seen"] == shas  # every commit, oldest first
    state = json.loads((out / "state.json").read_text())
    assert state["commits"] == 12
    assert all(k["commit"] in shas for k in state["keys"])  # every value names its commit
    assert (out / "state.md").read_text().startswith("# mylib")

    # Nothing new: the saved memory answers without its adapters (none here), so no model loads.
    again = track(work, repo, tmp_path / "no-adapters", tiny_model)
    assert again.returncode == 0 and "12 commits on HEAD, 0 new" in again.stdout, again.stderr
    assert json.loads((out / "state.json").read_text()) == state

    (repo / "LICENSE").write_text("BSD-3-Clause\n")
    git(repo, "commit", "-qam", "Relicense under BSD", date="2024-04-01T10:00:00+01:00")
    more = track(work, repo, trained_adapters, tiny_model)
    assert "13 commits on HEAD, 1 new" in more.stdout, more.stderr

    git(repo, "commit", "-q", "--amend", "-m", "Relicense under BSD-3", date="2024-04-01T10:00:00+01:00")
    rewritten = track(work, repo, trained_adapters, tiny_model)
    assert (
        rewritten.returncode != 0 and "its history was rewritten; --reset reads it again" in rewritten.stderr
    )
    assert "Traceback" not in rewritten.stderr


def test_track_refuses_a_malformed_catalog_naming_file_and_line(tmp_path: Path) -> None:
    catalog = tmp_path / "slots.yaml"
    catalog.write_text("- {entity: build, slot: backend, description: the build backend}\n- {entity: ci}\n")
    repo = tmp_path / "mylib"
    make_repo(repo)
    argv = [
        sys.executable,
        "-m",
        "memops",
        "track",
        str(repo),
        "--catalog",
        str(catalog),
        "--engine",
        "learned",
    ]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{catalog}:2: [1].slot: Field required" in done.stderr


def test_commits_are_read_in_landing_order_and_dated_when_they_landed(tmp_path: Path) -> None:
    """Probe 2: a commit written first and rebased onto the branch last is the newest; dated by
    its author, it lost to the older value (contested under it)."""
    repo = tmp_path / "lib"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for value, written, landed in [
        ("hatchling", "2024-03-01T10:00:00+01:00", "2024-03-01T10:00:00+01:00"),
        ("flit_core", "2024-02-15T10:00:00+01:00", "2024-03-05T10:00:00+01:00"),  # rebased
    ]:
        (repo / "backend.txt").write_text(value)
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", f"Build with {value}", date=written, landed=landed)
    found = commits(repo)
    assert [c.subject for c in found] == ["Build with hatchling", "Build with flit_core"]
    assert found[1].at == "2024-03-05T10:00:00+01:00"
    memory = ProjectMemory()
    for commit, value in zip(found, ["hatchling", "flit_core"], strict=True):
        claim = {"entity": "build", "slot": "backend", "value": value, "evidence": {"type": "code-change"}}
        memory.add_note(commit.text, commit.at, commit=commit.sha, claims=[claim])
    now = memory.get("build", "backend")
    assert now is not None and (now.value, now.status) == ("flit_core", "current")


def test_two_repositories_with_one_folder_name_keep_two_memories(tmp_path: Path) -> None:
    """Probe 3: both were outputs/track/mylib; the second was refused as rewritten, and --reset
    replaced the first one's memory."""
    from memops.cli.track import output_folder

    first, second = tmp_path / "a" / "mylib", tmp_path / "b" / "mylib"
    first.parent.mkdir()
    second.parent.mkdir()
    make_repo(first)
    second.mkdir()
    git(second, "init", "-q", "-b", "main")
    (second / "README").write_text("another project\n")
    git(second, "add", ".")
    git(second, "commit", "-q", "-m", "Start", date="2024-01-01T10:00:00+01:00")
    assert output_folder(first, "HEAD") != output_folder(second, "HEAD")
    assert output_folder(first, "HEAD").name.startswith("mylib-")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(first), str(clone))
    # The root commit tells them apart, whatever the checkout's folder is called.
    assert (
        output_folder(clone, "HEAD").name.rsplit("-", 1)[1]
        == output_folder(first, "HEAD").name.rsplit("-", 1)[1]
    )


def run_track(work: Path, *args: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "memops", "track", *args]
    return subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=300)


def test_a_branch_is_never_an_option(tmp_path: Path) -> None:
    """Probe 5: ``--branch=--output=<path>`` reached git, which wrote the file."""
    repo = tmp_path / "mylib"
    make_repo(repo)
    wrote = tmp_path / "written"
    done = run_track(tmp_path, str(repo), "--catalog", "python-project", f"--branch=--output={wrote}")
    assert done.returncode == 2 and "not an option" in done.stderr
    assert not wrote.exists()
    with pytest.raises(ExportError, match="not an option"):
        commits(repo, f"--output={wrote}")
    assert not wrote.exists()


@pytest.mark.parametrize(
    "content",
    ["truncated", "[]", "no-seen", "seen-numbers", "binary", "a-directory"],
)
def test_a_broken_saved_memory_is_one_line(tmp_path: Path, content: str) -> None:
    """Probe 7: each was a traceback."""
    repo = tmp_path / "mylib"
    make_repo(repo)
    out = tmp_path / "out"
    out.mkdir()
    saved = out / "memory.json"
    good = {"version": 1, "engine": "learned", "extract": "two-stage-overlap", "catalog": None}
    good |= {"seen": [], "failures": {}, "state": {"version": 1, "entries": [], "transitions": []}}
    if content == "a-directory":
        saved.mkdir()
    elif content == "binary":
        saved.write_bytes(b"\x89PNG\x00\xff\xfe")
    else:
        text = {
            "truncated": json.dumps(good)[:40],
            "[]": "[]",
            "no-seen": json.dumps({k: v for k, v in good.items() if k != "seen"}),
            "seen-numbers": json.dumps({**good, "seen": [1, 2]}),
        }[content]
        saved.write_text(text)
    done = run_track(tmp_path, str(repo), "--catalog", "python-project", "--out", str(out))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "not a saved memory" in done.stderr


def test_bad_options_are_refused_before_any_commit_is_read(tmp_path: Path) -> None:
    """Probe 7: --budget 0 or -5 and --out an existing file failed after every commit was read."""
    repo = tmp_path / "mylib"
    make_repo(repo)
    for budget in ("0", "-5"):
        done = run_track(tmp_path, str(repo), "--catalog", "python-project", "--budget", budget)
        assert done.returncode == 2 and "not a positive number" in done.stderr
    (tmp_path / "a-file").write_text("x")
    done = run_track(tmp_path, str(repo), "--catalog", "python-project", "--out", str(tmp_path / "a-file"))
    assert done.returncode == 1 and "a file, not a folder" in done.stderr and "Traceback" not in done.stderr


def test_one_track_run_at_a_time_holds_a_memory(tmp_path: Path) -> None:
    """Probe 13: two runs on one repository at once read the same commits twice."""
    repo = tmp_path / "mylib"
    make_repo(repo)
    out = tmp_path / "out"
    with exclusive(out / ".lock", "memops track"):
        done = run_track(tmp_path, str(repo), "--catalog", "python-project", "--out", str(out))
    assert done.returncode == 1 and "another memops track is running" in done.stderr


def test_a_rerun_with_nothing_new_asks_git_a_fixed_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Probe 14: one ``git merge-base`` per commit already read (12.8 s on 2,000 commits)."""
    from memops.cli import track as track_cli

    repo = tmp_path / "mylib"
    make_repo(repo)
    out = tmp_path / "out"
    memory = ProjectMemory(engine="learned")
    for c in commits(repo):
        memory.skip(c.sha, "read")
    memory.save(out / "memory.json")
    calls: list[list[str]] = []
    real = subprocess.run

    def counting(argv, *args, **kwargs):
        if argv and argv[0] == "git":
            calls.append(argv)
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)
    argv = ["memops track", str(repo), "--catalog", "python-project", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    track_cli.main()
    assert "12 commits on HEAD, 0 new" in capsys.readouterr().out
    assert len(calls) <= 3, [c[5:7] for c in calls]  # the log and the branch's commits, whatever its length


def test_a_commit_that_cannot_be_a_note_is_skipped_and_the_run_goes_on(
    trained_adapters: Path, tiny_model: Path, tmp_path: Path
) -> None:
    """Probes 6 and 7: a tab or an escape sequence in a subject, a 0x1E byte, a message that is
    not UTF-8 and a date in 2099 each stopped the run for good, on every rerun."""
    repo, work = tmp_path / "mylib", tmp_path / "work"
    repo.mkdir()
    work.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "i18n.commitEncoding", "latin-1")
    messages: list[tuple[str | bytes, str]] = [
        ("Require\tPython 3.9", "2024-03-01T10:00:00+01:00"),
        ("\x1b[31mLint with ruff\x1b[0m", "2024-03-02T10:00:00+01:00"),
        ("Split\x1erecords", "2024-03-03T10:00:00+01:00"),
        ("Caf\xe9 licence: MIT".encode("latin-1"), "2024-03-04T10:00:00+01:00"),
        ("Release from the future", "2099-01-01T10:00:00+01:00"),
        ("Switch the build backend to hatchling", "2024-03-06T10:00:00+01:00"),
    ]
    for i, (message, date) in enumerate(messages):
        (repo / "f.txt").write_text(str(i))
        (tmp_path / "msg").write_bytes(message if isinstance(message, bytes) else message.encode())
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-F", str(tmp_path / "msg"), date=date)
    done = track(work, repo, trained_adapters, tiny_model)
    assert done.returncode == 0, done.stderr
    assert "6 commits on HEAD, 6 new" in done.stdout and "1 skipped" in done.stdout
    (out,) = (work / "outputs" / "track").glob("mylib-*")
    saved = json.loads((out / "memory.json").read_text())
    future = git(repo, "rev-parse", "HEAD~1").strip()
    assert list(saved["skipped"]) == [future] and "future" in saved["skipped"][future]
    assert saved["seen"][-1] == git(repo, "rev-parse", "HEAD").strip()  # read on past it
    assert (out / "state.md").exists()
    again = track(work, repo, trained_adapters, tiny_model)
    assert again.returncode == 0 and "6 commits on HEAD, 0 new" in again.stdout, again.stderr
    subjects = [c.subject for c in commits(repo)]
    assert subjects[:3] == ["Require Python 3.9", "[31mLint with ruff [0m", "Split records"]
    assert subjects[3] == "Café licence: MIT"


def test_a_commit_that_changes_a_file_a_slot_reads_is_noted_with_its_changed_lines(tmp_path: Path) -> None:
    """The note the extractor reads is the mined benchmark's form (subject, changed lines, files,
    message) where the commit changes a file the catalog reads, so a value it states is in the
    note to be read; a commit that changes none says so (no line of such a file changed); with a
    catalog that says where no slot is read from, a note is the subject and body."""
    from memops.data.catalog import slots_read
    from memops.track.git import note

    repo = tmp_path / "lib"
    make_repo(repo)
    (repo / "README.md").write_text("hello\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Say hello", "-m", "A readme.", date="2024-04-01T10:00:00+01:00")
    found = commits(repo)
    read_from = slots_read("python-project")
    drop = note(repo, found[5], read_from)
    assert drop.startswith("Drop Python 3.8, it is end of life\n\nChanged lines: ")
    assert 'pyproject.toml: +requires-python = ">=3.9"' in drop and "Touched files: pyproject.toml." in drop
    other = note(repo, found[-1], read_from)
    assert other.startswith("Say hello\n\nChanged files: README.md\n\n") and added_lines(other) == []
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.10"\n')
    git(repo, "commit", "-qam", "Require 3.10", date="2024-04-02T10:00:00+01:00")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "side", "-m", "Merge side", date="2024-04-03T10:00:00+01:00")
    merge = commits(repo)[-1]  # git log names no file of a merge: its changes are the side's
    assert merge.subject == "Merge side" and merge.files == ()
    assert added_lines(note(repo, merge, read_from)) == []  # so it proposes nothing
    own = tmp_path / "slots.yaml"
    own.write_text("- {entity: build, slot: backend, description: the build backend}\n")
    assert slots_read(own) == [] and note(repo, found[5], slots_read(own)) == found[5].text


def test_a_memory_that_starts_later_starts_from_the_files_as_they_stood(tmp_path: Path) -> None:
    """With ``--since`` a fact set before the window was never read: platformdirs, keyring and
    cookiecutter held nothing of 12 facts their files state. The start is the commit the branch
    stood at, noted as if it created the files a slot reads, so what they state is proposed."""
    from memops.data.catalog import load_catalog, slots_read
    from memops.data.mine import EMPTY_TREE
    from memops.operators.learned import proposals
    from memops.track.git import note, start

    repo = tmp_path / "lib"
    make_repo(repo)
    read_from, catalog = slots_read("python-project"), load_catalog("python-project")
    base = start(repo, "HEAD", "2024-03-06T00:00:00+01:00", read_from)
    assert base is not None and base.sha == git(repo, "rev-parse", "HEAD~7").strip()  # day 5's
    assert base.at == "2024-03-05T10:00:00+01:00"
    assert set(base.files) == {
        "pyproject.toml",
        "tox.ini",
        ".github/workflows/ci.yml",
        "LICENSE",
        ".pre-commit-config.yaml",
    }
    text = note(repo, base, read_from, catalog, parent=EMPTY_TREE)
    said = Note(id="start", at=base.at, commit=base.sha, title=base.subject, text=text)
    assert proposals(said, catalog) == {
        "python.supported_versions": [">=3.8"],
        "tests.runner": ["tox"],
        "lint.linter": ["flake8"],
        "project.license": ["MIT"],
    }
    assert start(repo, "HEAD", "2024-03-01T00:00:00+01:00", read_from) is None  # nothing before
    assert start(repo, "HEAD", "2024-03-06T00:00:00+01:00", []) is None  # no slot says where


def test_track_since_reads_the_start_once_then_the_window(
    trained_adapters: Path, tiny_model: Path, tmp_path: Path
) -> None:
    repo, work = tmp_path / "mylib", tmp_path / "work"
    make_repo(repo)
    work.mkdir()
    since = ("--since", "2024-03-06T00:00:00+01:00")
    first = track(work, repo, trained_adapters, tiny_model, *since)
    assert first.returncode == 0, first.stderr
    base = git(repo, "rev-parse", "HEAD~7").strip()
    assert f"7 commits on HEAD, 8 new (from the files at {base[:9]}, 2024-03-05)" in first.stdout
    (out,) = (work / "outputs" / "track").glob("mylib-*")
    seen = json.loads((out / "memory.json").read_text())["seen"]
    assert seen == git(repo, "rev-list", "--reverse", "HEAD").split()[4:]  # the start, then the window
    again = track(work, repo, trained_adapters, tiny_model, *since)
    assert again.returncode == 0 and "7 commits on HEAD, 0 new\n" in again.stdout, again.stderr


def test_a_commit_that_moves_one_runner_is_read_over_every_workflow(tmp_path: Path) -> None:
    """A list summed up over files: a commit that pins the release job's runner (platformdirs'
    ``runs-on: ubuntu-24.04``) adds a Linux line only, and was proposed as GitHub Actions on Linux
    alone; read over every workflow as the commit leaves them, it states the matrix's systems
    too. A line that sets a documentation theme names the site with it."""
    from memops.data.catalog import load_catalog, slots_read
    from memops.operators.learned import proposals
    from memops.track.git import note

    repo = tmp_path / "lib"
    (repo / ".github/workflows").mkdir(parents=True)
    (repo / "docs").mkdir()
    git(repo, "init", "-q", "-b", "main")
    files = {
        ".github/workflows/check.yml": "jobs:\n  test:\n    runs-on: ${{ matrix.os }}\n    strategy:\n"
        "      matrix:\n        os:\n"
        + "".join(f"          - {system}-latest\n" for system in ("ubuntu", "windows", "macos")),
        ".github/workflows/release.yml": "jobs:\n  release:\n    runs-on: ubuntu-latest\n",
        "docs/conf.py": 'extensions = ["sphinx.ext.autodoc"]\nhtml_theme = "furo"\n',
    }
    for path, text in files.items():
        (repo / path).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "CI and docs", date="2024-03-01T10:00:00+01:00")
    (repo / ".github/workflows/release.yml").write_text("jobs:\n  release:\n    runs-on: ubuntu-24.04\n")
    (repo / "docs/conf.py").write_text(
        'extensions = ["sphinx.ext.autodoc", "sphinx.ext.viewcode"]\nhtml_theme = "furo"\n'
    )
    git(repo, "commit", "-qam", "Pin the release runner", date="2024-03-02T10:00:00+01:00")
    read_from, catalog = slots_read("python-project"), load_catalog("python-project")
    first, pin = commits(repo)
    said = [
        Note(id=c.sha, at=c.at, commit=c.sha, title=c.subject, text=note(repo, c, read_from, catalog))
        for c in (first, pin)
    ]
    assert proposals(said[0], catalog) == {
        "ci.platforms": ["GitHub Actions on Linux, Windows, macOS"],
        "docs.builder": ["Sphinx (furo theme)"],
    }
    assert proposals(said[1], catalog) == {"ci.platforms": ["GitHub Actions on Linux, Windows, macOS"]}


def test_a_commit_that_bumps_one_requirement_is_read_over_the_whole_list(tmp_path: Path) -> None:
    """A list one file states: a commit that raises one dependency's floor adds that line alone,
    and a build's ``requires`` bound sits in the same file; read whole, the note shows every
    install requirement after the key that sets it, so the list is proposed whole (from those
    lines, not the diff's), and the build's bound, an extra's and an upper bound are in none of
    it."""
    from memops.data.catalog import load_catalog, slots_read
    from memops.operators.learned import proposals
    from memops.track.git import note

    repo = tmp_path / "lib"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")

    def pyproject(click: str) -> str:
        return (
            '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
            '[project]\nname = "lib"\ndependencies = [\n'
            f'  "click>={click}",\n  "Jinja2 >= 3.1.0",\n  \'tzdata>=2020.1; sys_platform == "win32"\',\n'
            '  "rich<14",\n]\n[project.optional-dependencies]\ndocs = ["sphinx>=7"]\n'
        )

    (repo / "pyproject.toml").write_text(pyproject("8.0"))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Package", date="2024-03-01T10:00:00+01:00")
    (repo / "pyproject.toml").write_text(pyproject("8.1"))
    git(repo, "commit", "-qam", "Raise click's floor", date="2024-03-02T10:00:00+01:00")
    read_from, catalog = slots_read("python-project"), load_catalog("python-project")
    whole = "click>=8.1, jinja2>=3.1, tzdata>=2020.1"
    bump = commits(repo)[1]
    text = note(repo, bump, read_from, catalog)
    assert "pyproject.toml: +dependencies = Jinja2>=3.1.0" in text  # beside the diff's own lines
    said = Note(id=bump.sha, at=bump.at, commit=bump.sha, title=bump.subject, text=text)
    assert proposals(said, catalog)["dependencies.minimums"] == [whole]
    truth = catalog.value_type("dependencies.minimums").normalise(whole)
    assert truth == whole  # the reader's spelling, which bench_track compares with


def test_a_commit_that_configures_pytest_is_read_with_the_tox_that_runs_it(tmp_path: Path) -> None:
    """Keyring's runners are pytest and tox; a diff that configures pytest names pytest alone.
    Read whole, the note shows a line for every runner the files set up, and the list is all of
    them, in the reader's spelling."""
    from memops.data.catalog import load_catalog, slots_read
    from memops.operators.learned import proposals
    from memops.track.git import note

    repo = tmp_path / "lib"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "tox.ini").write_text("[tox]\nenvlist = py3\n[testenv]\ncommands = python -m unittest\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "lib"\n')
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Package", date="2024-03-01T10:00:00+01:00")
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "lib"\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    )
    git(repo, "commit", "-qam", "Configure pytest", date="2024-03-02T10:00:00+01:00")
    read_from, catalog = slots_read("python-project"), load_catalog("python-project")
    configure = commits(repo)[1]
    text = note(repo, configure, read_from, catalog)
    assert "tox.ini: +[tox]" in text and "pyproject.toml: +[tool.pytest.ini_options]" in text
    said = Note(id=configure.sha, at=configure.at, commit=configure.sha, title=configure.subject, text=text)
    assert proposals(said, catalog)["tests.runner"] == ["pytest, tox"]
