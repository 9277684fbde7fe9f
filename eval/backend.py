"""Bring up the backend a run asks for: ``hf`` (local), ``vllm`` (served or given) or ``symbolic``.

Entry scripts share this so a replay and a LOO fold get their operators the same way.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from data.sessions import Episode
from eval.serve import OPS, ServeConfig, VLLMServer
from operators.backends import Backend, BackendError
from train.config import ModelConfig

BACKENDS = ("hf", "vllm", "symbolic")


@dataclass
class BackendConfig:
    kind: str = "hf"
    """hf | vllm | symbolic."""
    batch_size: int = 8
    """hf: requests per generate call."""
    url: str | None = None
    """vllm: a running server's base URL (…/v1); unset starts one with ``serve``."""
    concurrency: int = 32
    timeout_s: float = 120.0
    serve: ServeConfig = field(default_factory=ServeConfig)

    def __post_init__(self) -> None:
        if self.kind not in BACKENDS:
            raise ValueError(f"backend.kind={self.kind!r}; expected one of {', '.join(BACKENDS)}")


def adapter_dirs(root: str | Path) -> dict[str, Path]:
    """``<root>/{extract,compare,update}``; each must hold a trained adapter."""
    dirs = {op: Path(root) / op for op in OPS}
    missing = [str(d) for d in dirs.values() if not (d / "adapter_model.safetensors").exists()]
    if missing:
        raise BackendError(f"no trained adapter in: {', '.join(missing)} (train them with train.py)")
    return dirs


@contextmanager
def open_backend(
    cfg: BackendConfig,
    model: ModelConfig,
    adapters: str | Path | None,
    episodes: Sequence[Episode],
    log: Path,
) -> Iterator[Backend]:
    if cfg.kind == "symbolic":
        from operators.symbolic import SymbolicBackend

        oracle = SymbolicBackend()
        for episode in episodes:
            oracle.merge(SymbolicBackend.for_episode(episode))
        yield oracle
        return
    if adapters is None:
        raise BackendError(f"backend={cfg.kind} needs adapters=<dir holding extract/, compare/, update/>")
    dirs = adapter_dirs(adapters)
    if cfg.kind == "hf":
        from operators.backends.hf import HFBackend

        yield HFBackend.load(model, dirs, batch_size=cfg.batch_size)
        return
    from operators.backends.vllm import VLLMBackend

    if cfg.url:
        yield VLLMBackend(cfg.url, os.environ.get("VLLM_API_KEY", "EMPTY"), cfg.concurrency, cfg.timeout_s)
        return
    serve = replace(cfg.serve, base=cfg.serve.base or model.path)
    with VLLMServer(serve, dirs, log) as server:
        yield VLLMBackend(server.base_url, server.api_key, cfg.concurrency, cfg.timeout_s)
