"""Bring up the backend a run asks for: ``hf`` (local), ``vllm`` (served or given) or ``symbolic``.

Entry scripts share this so a replay and a LOO fold get their operators the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from memops.core.folds import Fold
from memops.core.layout import ALL, adapter_finished
from memops.core.models import ModelConfig
from memops.core.sessions import Episode
from memops.operators.backends import Backend, BackendError, Completion, Odds, Probe, Request
from memops.operators.backends.serve import ServeConfig, ServerFailed, VLLMServer
from memops.operators.backends.vllm import VLLMBackend
from memops.operators.registry import OPS, adapters

BACKENDS = ("hf", "vllm", "symbolic")
T = TypeVar("T")
R = TypeVar("R")


@dataclass
class BackendConfig:
    kind: str = "hf"
    """hf | vllm | symbolic."""
    batch_size: int = 8
    """hf: requests per generate call."""
    unquantized: bool = False
    """hf: load the base unquantized in the model's compute dtype, as vLLM serves it (adapters are
    trained on the 4-bit base; this is how the two backends are compared on the same weights)."""
    url: str | None = None
    """vllm: a running server's base URL (…/v1); unset starts one with ``serve``."""
    concurrency: int = 32
    timeout_s: float = 120.0
    dtype: str = ""
    """hf and vllm: the dtype the base computes in while scoring; empty: the model's
    ``compute_dtype``, as training loaded it. ``bfloat16`` on a CPU with native bf16 takes about a
    third off a held-out pass, but the two backends' kernels then round differently, so their
    raw text is no longer identical everywhere (docs/log/speed.md)."""
    serve: ServeConfig = field(default_factory=ServeConfig)

    def __post_init__(self) -> None:
        if self.kind not in BACKENDS:
            raise ValueError(f"backend.kind={self.kind!r}; expected one of {', '.join(BACKENDS)}")

    def compute_dtype(self, model: ModelConfig) -> str:
        """What the base computes in while scoring: ``dtype``, else the model's own."""
        return self.dtype or model.compute_dtype


def serving(cfg: BackendConfig, model: ModelConfig) -> ServeConfig:
    """The server to start: the run's base, computing in the dtype the ``hf`` backend would use.
    ``backend.dtype`` is the one setting for it (a run's settings record it), so a server dtype
    of its own that disagrees is refused rather than served unrecorded."""
    dtype = cfg.compute_dtype(model)
    if cfg.serve.dtype and cfg.serve.dtype != dtype:
        raise BackendError(
            f"backend.serve.dtype={cfg.serve.dtype} but the run scores in {dtype}; set backend.dtype, "
            "which both backends read"
        )
    return replace(cfg.serve, base=cfg.serve.base or model.path, dtype=dtype)


def adapter_dirs(root: str | Path | Mapping[str, Path], needs: Sequence[str] = OPS) -> dict[str, Path]:
    """``<root>/<adapter>`` (or the folder ``root`` maps it to) for every finished adapter;
    each of ``needs`` (every operator's, unless the run uses fewer) must be one."""
    if isinstance(root, Mapping):
        dirs = {name: Path(root[name]) for name in adapters(stages=True) if name in root}
    else:
        dirs = {name: Path(root) / name for name in adapters(stages=True)}
    missing = [str(dirs[op]) for op in needs if not adapter_finished(dirs[op])]
    if missing:
        raise BackendError(
            f"no finished adapter in: {', '.join(missing)} (train them with memops train: docs/training.md)"
        )
    return {name: d for name, d in dirs.items() if adapter_finished(d)}


@dataclass
class ServedBackend:
    """The vLLM client and the server it talks to. When a request fails because the server we
    launched has died, the error carries the end of the server's log."""

    client: VLLMBackend
    server: VLLMServer | None = None

    def complete(self, requests: Sequence[Request]) -> list[Completion]:
        return self._calling(self.client.complete, requests)

    def probe(self, probes: Sequence[Probe]) -> list[Odds]:
        return self._calling(self.client.probe, probes)

    def _calling(self, call: Callable[[Sequence[T]], list[R]], items: Sequence[T]) -> list[R]:
        try:
            return call(items)
        except BackendError as e:
            gone = self.server.died() if self.server else None
            if gone:
                raise ServerFailed(f"{e}\n{gone}") from e
            raise

    def describe(self) -> dict[str, object]:
        """What served the run, for its manifest: vLLM's own ``/version`` and, if we launched it,
        the device and the startup time."""
        import httpx

        root = self.client.base_url.removesuffix("/").removesuffix("/v1")
        info: dict[str, object] = {"url": self.client.base_url}
        try:
            info["vllm"] = httpx.get(f"{root}/version", timeout=5.0).json()["version"]
        except (httpx.HTTPError, KeyError, ValueError) as e:
            info["vllm"] = f"unknown ({type(e).__name__})"
        if self.server is not None:
            info |= {"device": self.server.device, "startup_s": round(self.server.ready_s, 1)}
        return info


def check_given_server(cfg: BackendConfig, needs: Sequence[str], folds: Sequence[str]) -> None:
    """With ``backend.url``: what that server serves, checked before a run builds or trains
    anything for it (``check_served``)."""
    if cfg.kind == "vllm" and cfg.url:
        client = VLLMBackend(cfg.url, os.environ.get("VLLM_API_KEY", "EMPTY"), timeout_s=cfg.timeout_s)
        check_served(cfg.url, client.served_adapters(), needs, folds)


def check_served(url: str, served: Mapping[str, str], needs: Sequence[str], folds: Sequence[str]) -> None:
    """A server someone else started serves what it serves: refuse it unless it lists every
    adapter the run needs and none of them was trained on a fold it is about to score. The fold
    an adapter was trained on comes from its manifest, or from its folder's place in the
    adapters layout (``<model>/<fold>/<op>``)."""
    missing = [name for name in needs if name not in served]
    if missing:
        raise BackendError(
            f"{url} does not serve the adapters {missing} (it serves {sorted(served) or 'none'}): "
            "start it with --lora-modules " + " ".join(f"{n}=<dir>" for n in needs)
        )
    for name in needs:
        if not served[name] or Fold.of_adapter(served[name]) is None:
            raise BackendError(
                f"{url} serves adapter {name} from {served[name] or 'an unnamed path'}: cannot tell which "
                "fold it was trained on; serve the adapters from the folders memops train writes"
            )
    check_unseen({name: served[name] for name in needs}, folds)


def check_unseen(adapters: Mapping[str, str | Path], folds: Sequence[str]) -> None:
    """Refuse to score a fold with an adapter whose training data held it (``Fold.saw``, as its
    manifest lists them where it can be read here, else as its fold's name says)."""
    for name, path in adapters.items():
        trained = Fold.of_adapter(path) or Fold(ALL)  # a fold that cannot be told saw them all
        for fold in folds:
            if trained.saw(fold):
                raise BackendError(
                    f"fold {fold}: the served adapter {name} ({path}) was trained on fold "
                    f"{trained.name}, whose training data hold {fold}; serve fold {fold}'s own adapters "
                    "(or the synthetic fold's) to score it"
                )


@contextmanager
def open_backend(
    cfg: BackendConfig,
    model: ModelConfig,
    adapters: str | Path | Mapping[str, Path] | None,
    episodes: Sequence[Episode],
    log: Path,
    needs: Sequence[str] = OPS,
) -> Iterator[Backend]:
    """``adapters``: a folder holding one adapter per name, or each name's folder (a LOO run whose
    adapters come from more than one fold). ``needs``: the adapters that must be finished (every
    other finished one is loaded too)."""
    if cfg.kind == "symbolic":
        from memops.operators.backends.symbolic import SymbolicBackend

        oracle = SymbolicBackend()
        for episode in episodes:
            oracle.merge(SymbolicBackend.for_episode(episode))
        yield oracle
        return
    if adapters is None:
        raise BackendError(f"backend={cfg.kind} needs adapters=<dir holding extract/, compare/, update/>")
    dirs = adapter_dirs(adapters, needs)
    if cfg.kind == "hf":
        from memops.operators.backends.hf import HFBackend

        base = replace(
            model,
            compute_dtype=cfg.compute_dtype(model),
            load_in_4bit=model.load_in_4bit and not cfg.unquantized,
        )
        yield HFBackend.load(base, dirs, batch_size=cfg.batch_size)
        return
    if cfg.url:
        key = os.environ.get("VLLM_API_KEY", "EMPTY")
        client = VLLMBackend(cfg.url, key, cfg.concurrency, cfg.timeout_s)
        check_served(cfg.url, client.served_adapters(), needs, [e.id for e in episodes])
        yield ServedBackend(client)
        return
    with VLLMServer(serving(cfg, model), dirs, log) as server:
        client = VLLMBackend(
            server.base_url, server.api_key, cfg.concurrency, cfg.timeout_s, base_model=server.served_name
        )
        yield ServedBackend(client, server)
