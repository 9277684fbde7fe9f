"""The package as a user installs it: a wheel (not an editable install) in a fresh venv, used
from an empty directory outside the checkout, with nothing beside it.

The fresh venv gets the wheel alone; its dependencies are those of the test's own environment,
reached through a ``.pth`` path entry, which Python does not scan for further ``.pth`` files, so
the checkout's editable install stays out of reach and every import of ``memops`` is the wheel's.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, ROOT],
        check=True,
        timeout=600,
    )
    (built,) = out.glob("memops-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel; returns its bin folder."""
    env = tmp_path_factory.mktemp("venv")
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", wheel],
        check=True,
        timeout=600,
    )
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "memops-test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return env / "bin"


def run(bin_dir: Path, cwd: Path, *argv: str, timeout: int = 600) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    environ["PATH"] = f"{bin_dir}{os.pathsep}{environ['PATH']}"
    return subprocess.run(argv, cwd=cwd, env=environ, capture_output=True, text=True, timeout=timeout)


def test_the_wheel_holds_one_namespace_and_everything_the_package_reads(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"memops"}
    for shipped in (
        "memops/configs/loo.yaml",
        "memops/configs/smollm2-demo.yaml",
        "memops/configs/model/qwen2.5-14b-instruct.yaml",
        "memops/configs/hydra/job_logging/console.yaml",
        "memops/data/trajectories/patch-guardrails.yaml",
        "memops/data/trajectories/patch-guardrails.jsonl",
        "memops/data/trajectories/README.md",
        "memops/slurm/train.sbatch",
        "memops/slurm/accelerate/fsdp_qlora.yaml",
        "memops/slurm/local/start-slurm.sh",
    ):
        assert shipped in names, shipped
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "memops = memops.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_an_installed_wheel_runs_from_an_empty_directory(installed: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()

    where = run(installed, work, "python", "-c", "import memops; print(memops.__file__)")
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(installed.parent), where.stdout
    generic = run(installed, work, "python", "-c", "import data")
    assert generic.returncode != 0 and "No module named 'data'" in generic.stderr

    usage = run(installed, work, "memops", "--help")
    assert usage.returncode == 0 and "build-data" in usage.stdout and "export-merged" in usage.stdout

    small = ["scenarios_per_family=2", "noisy_per_family=0", "folds=[patch-guardrails]", "progress=false"]
    data = run(installed, work, "memops", "build-data", *small)
    assert data.returncode == 0, data.stderr
    assert (work / "outputs" / "datasets" / "patch-guardrails" / "compare" / "test.jsonl").is_file()

    symbolic = ["backend=symbolic", "folds=[patch-guardrails]", "progress=false"]
    loo = run(installed, work, "memops", "loo", *symbolic)
    assert loo.returncode == 0, loo.stderr
    summary = json.loads((work / "outputs" / "loo" / "tiny-symbolic" / "summary.json").read_text())
    assert summary["folds"]["patch-guardrails"]["symbolic"]["engine_queries"]["n"] > 0

    demo = run(installed, work, "memops", "demo", "dry_run=true")
    assert demo.returncode == 0, demo.stderr
    assert "smollm2-135m-instruct" in demo.stdout

    assert sorted(p.name for p in work.iterdir()) == ["outputs"]


def make_dry_run(*args: str) -> list[str]:
    done = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_gpu_1_installs_a_cuda_torch_into_a_venv_stamped_for_the_gpu(tmp_path: Path) -> None:
    """What ``make venv GPU=1`` would run, printed (no GPU here): CUDA torch from PyTorch's index
    without the CPU lock, the project under the lock (its pins carry no local label), and a stamp
    of its own, so a CPU venv is not silently kept."""
    venv_dir = f"VENV={tmp_path / 'venv'}"
    gpu, cpu = make_dry_run("venv", "GPU=1", venv_dir), make_dry_run("venv", venv_dir)
    gpu_torch = next(line for line in gpu if " install -q torch" in line)
    assert "torch==2.13.0+cu128 --index-url https://download.pytorch.org/whl/cu128" in gpu_torch
    assert "--constraint" not in gpu_torch
    assert any("install -q -e" in line and "--constraint requirements/cpu.lock" in line for line in gpu)
    cpu_torch = next(line for line in cpu if " install -q torch" in line)
    assert "torch==2.13.0 --constraint requirements/cpu.lock" in cpu_torch and "--index-url" not in cpu_torch
    stamps = [next(line for line in run if line.startswith("touch ")) for run in (gpu, cpu)]
    gpu_stamp, cpu_stamp = (stamp.rsplit("/", 1)[1] for stamp in stamps)
    assert gpu_stamp.startswith(".installed-gpu-") and cpu_stamp.startswith(".installed-cpu-")
    assert gpu_stamp.removeprefix(".installed-gpu-") == cpu_stamp.removeprefix(".installed-cpu-")
    assert all("/uv pip install -q" in line for line in (gpu_torch, cpu_torch))
    # uv compiles what it installs, as pip does: imports read bytecode where Python may not write it.
    uv_installs = [line for run in (gpu, cpu) for line in run if "uv pip install" in line]
    assert len(uv_installs) == 4 and all("--compile-bytecode" in line for line in uv_installs)
    with_pip = make_dry_run("venv", venv_dir, "UV=0")
    assert next(line for line in with_pip if " install -q torch" in line).split()[1:4] == [
        "-m",
        "pip",
        "install",
    ]
    serve = make_dry_run("serve-env", "GPU=1", f"SERVE_VENV={tmp_path / 'serve'}")
    assert any("make_serve_env.py" in line and "--vllm 'vllm==0.33.0'" in line for line in serve)


def test_the_locks_resolve_from_public_indexes() -> None:
    """No local version label (``+cpu``): PyPI has no such builds, so a pin with one cannot resolve."""
    for lock in sorted((ROOT / "requirements").glob("*.lock")):
        pins = [line for line in lock.read_text().splitlines() if line and not line.startswith("#")]
        assert pins and not [p for p in pins if "+" in p], lock.name
