"""The plain install (``pip install memops``): the wheel and its base dependencies alone, in a
fresh venv that borrows nothing from the test environment. The symbolic path runs there; every
command that needs an extra refuses in one line naming it.

The venv is made with uv where it is at hand (pip otherwise), under the CPU lock, as ``make``
installs; it needs PyPI, as every install here does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.data.test_export import git

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a venv holding the wheel with its base dependencies only."""
    where = tmp_path_factory.mktemp("base")
    wheels = where / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(ROOT)]
    subprocess.run(build, check=True, timeout=600)
    (wheel,) = wheels.glob("memops-*.whl")
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    lock = ["--constraint", str(ROOT / "requirements" / "cpu.lock")]
    if uv := shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv"):
        install = [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python")]
    else:
        subprocess.run([str(venv / "bin" / "python"), "-m", "ensurepip", "--upgrade"], check=True)
        install = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*install, str(wheel), *lock], check=True, timeout=900)
    return venv / "bin"


def memops(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(bin_dir / "memops"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_base_install_holds_no_extra(base: Path) -> None:
    found = subprocess.run(
        [
            str(base / "python"),
            "-c",
            "import importlib.util as u; print(u.find_spec('torch'), u.find_spec('memops').origin)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert found[0] == "None"
    assert str(ROOT / "src") not in found[1]  # the wheel's copy, not this checkout's


def test_the_symbolic_path_runs_on_the_base_install(base: Path, tmp_path: Path) -> None:
    for args in (
        ["--help"],
        ["engine-demo"],
        ["loo", "backend=symbolic", "folds=[patch-guardrails]", "progress=false"],
        ["report", "run=outputs/loo/tiny-symbolic"],
        ["replay", "trajectory=patch-guardrails"],
        ["submit", "dry_run=true"],
    ):
        done = memops(base, tmp_path, *args)
        assert done.returncode == 0, (args, done.stderr[-2000:])
    assert (tmp_path / "outputs" / "loo" / "tiny-symbolic" / "report.md").exists()
    assert (tmp_path / "outputs" / "datasets" / "patch-guardrails" / "update" / "test.jsonl").exists()


def test_the_git_commands_run_on_the_base_install(base: Path, tmp_path: Path) -> None:
    repo = tmp_path / "lib"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for day, (text, subject) in enumerate(
        [('requires-python = ">=3.9"\n', "Start"), ('requires-python = ">=3.10"\n', "Drop 3.9")], start=1
    ):
        (repo / "pyproject.toml").write_text(text)
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", subject, date=f"2024-03-0{day}T10:00:00+01:00")
    (tmp_path / "commits.txt").write_text("HEAD~1\nHEAD\n")
    exported = memops(
        base, tmp_path, "export-commits", "--repo", str(repo), "--commits", "commits.txt", "--name", "lib"
    )
    assert exported.returncode == 0, exported.stderr[-2000:]
    mined = memops(base, tmp_path, "mine", str(repo), "--catalog", "python-project")
    # Two commits state too little to make a trajectory: refused with the reason, not a traceback.
    assert mined.returncode == 1 and "a trajectory needs at least 5" in mined.stderr, mined.stderr[-2000:]
    assert "Traceback" not in mined.stderr

    # A saved memory with no new commit: track prints its state and loads no model.
    saved = tmp_path / "track" / "memory.json"
    shas = git(repo, "rev-list", "--reverse", "HEAD").split()
    save = (
        "from memops.track import ProjectMemory; m = ProjectMemory(engine='learned'); "
        f"[m.skip(sha, 'read') for sha in {shas!r}]; m.save({str(saved)!r})"
    )
    subprocess.run([str(base / "python"), "-c", save], check=True)
    tracked = memops(
        base, tmp_path, "track", str(repo), "--catalog", "python-project", "--out", str(saved.parent)
    )
    assert tracked.returncode == 0, tracked.stderr[-2000:]
    assert "2 commits on HEAD, 0 new" in tracked.stdout and (saved.parent / "state.md").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["preflight"],
        ["train", "op=compare", "model=tiny"],
        ["demo"],
        ["make-model", "tiny"],
        ["loo", "folds=[patch-guardrails]", "progress=false"],
        ["export-merged", "outputs/adapters/tiny/all/compare", "--out", "merged"],
    ],
    ids=lambda args: args[0],
)
def test_a_command_that_needs_an_extra_refuses_in_one_line(
    base: Path, tmp_path: Path, args: list[str]
) -> None:
    done = memops(base, tmp_path, *args)
    if args[0] == "export-merged":  # refuses the missing adapter before it needs torch
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
        return
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    assert last[-1].startswith(f"memops {args[0]}: this needs the train extra")
    assert "pip install 'memops[train]'" in last[-1]


def test_a_postgresql_store_names_its_extra_on_the_base_install(base: Path) -> None:
    code = (
        "from memops.track.database import StoreError\nfrom memops.track.store import Store\n"
        "try:\n    Store('postgresql://memops@127.0.0.1:1/db')\n"
        "except StoreError as exc:\n    print(exc)"
    )
    done = subprocess.run([str(base / "python"), "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "needs psycopg: pip install 'memops[postgres]'" in done.stdout
