"""Start ``vllm serve`` with the three operator adapters, wait until they are listed, tear down.

The server binds to 127.0.0.1 only and requires an API key, passed through the child's
environment (``VLLM_API_KEY``) so it never appears in a process listing. The process runs in
its own session, so the whole group (API server and engine workers) is stopped on exit or
failure.
"""

from __future__ import annotations

import contextlib
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

from operators.backends import BackendError

HOST = "127.0.0.1"
OPS = ("extract", "compare", "update")


@dataclass
class ServeConfig:
    base: str = ""
    """The bf16 base the adapters are served on, unmerged; empty means the model config's path."""
    port: int = 8000
    """0 picks a free port when the server starts: what jobs sharing a node need."""
    max_loras: int = 3
    max_lora_rank: int = 16
    max_model_len: int = 8192
    gpu_memory_utilization: float = 0.90
    tensor_parallel_size: int = 1
    dtype: str = "bfloat16"
    startup_timeout_s: float = 1200.0
    executable: str = "vllm"
    extra_args: list[str] = field(default_factory=list)


def vllm_command(cfg: ServeConfig, adapters: Mapping[str, str | Path]) -> list[str]:
    """The argument list of ``vllm serve``; it is executed directly, never through a shell."""
    modules = [f"{name}={Path(path).resolve()}" for name, path in adapters.items()]
    return [
        cfg.executable,
        "serve",
        cfg.base,
        "--host",
        HOST,
        "--port",
        str(cfg.port),
        "--dtype",
        cfg.dtype,
        "--max-model-len",
        str(cfg.max_model_len),
        "--gpu-memory-utilization",
        str(cfg.gpu_memory_utilization),
        "--tensor-parallel-size",
        str(cfg.tensor_parallel_size),
        "--enable-lora",
        "--max-loras",
        str(cfg.max_loras),
        "--max-lora-rank",
        str(cfg.max_lora_rank),
        "--lora-modules",
        *modules,
        "--generation-config",
        "vllm",
        *cfg.extra_args,
    ]


class ServerFailed(BackendError):
    pass


def free_port() -> int:
    """A port nothing listens on now; vLLM binds it moments later, so a collision is unlikely."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class VLLMServer:
    """``with VLLMServer(cfg, adapters, log) as server:`` yields a running, ready server."""

    def __init__(self, cfg: ServeConfig, adapters: Mapping[str, str | Path], log: Path) -> None:
        missing = [f"{n}={p}" for n, p in adapters.items() if not (Path(p) / "adapter_config.json").exists()]
        if missing:
            raise ServerFailed(f"adapter directories without adapter_config.json: {', '.join(missing)}")
        self.cfg = replace(cfg, port=cfg.port or free_port())
        self.adapters = dict(adapters)
        self.log = log
        self.api_key = os.environ.get("VLLM_API_KEY") or secrets.token_urlsafe(24)
        self.base_url = f"http://{HOST}:{self.cfg.port}/v1"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> VLLMServer:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "VLLM_API_KEY": self.api_key}
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                vllm_command(self.cfg, self.adapters),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        print(f"vllm serve started (pid {self.process.pid}); log: {self.log}", file=sys.stderr, flush=True)

    def listed(self) -> set[str]:
        import httpx

        reply = httpx.get(
            f"{self.base_url}/models", headers={"Authorization": f"Bearer {self.api_key}"}, timeout=5.0
        )
        reply.raise_for_status()
        return {m["id"] for m in reply.json()["data"]}

    def wait_ready(self) -> None:
        """Poll ``/v1/models`` until every adapter is listed; fail fast if the process dies."""
        import httpx

        assert self.process is not None
        deadline = time.monotonic() + self.cfg.startup_timeout_s
        want = set(self.adapters)
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerFailed(
                    f"vllm serve exited with code {self.process.returncode} before it was ready; "
                    f"last lines of {self.log}:\n{self.tail()}"
                )
            try:
                if want <= self.listed():
                    return
            except (httpx.HTTPError, KeyError, ValueError):
                pass
            time.sleep(1.0)
        raise ServerFailed(
            f"vllm serve did not list {sorted(want)} within {self.cfg.startup_timeout_s:.0f} s; "
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
