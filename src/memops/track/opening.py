"""Opening a memory: its store (in this process, or an SQLite file several processes share) and
its operators (none for the rules; the project's adapters on a local or served backend; or an
OpenAI-compatible endpoint), for the ``with`` block."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from memops.core.records import Catalog
from memops.data.catalog import load_catalog
from memops.operators.backends import BackendError
from memops.operators.backends.endpoint import EndpointBackend
from memops.operators.learned import DECODINGS, READ_MODES, Decoding, ExtractMode, LearnedOperators
from memops.track.memory import InputError, ProjectMemory, store_refusals
from memops.track.store import DEFAULT_NAMESPACE, Store


@contextmanager
def open_memory(
    engine: str = "symbolic",
    *,
    adapters: str | Path | None = None,
    backend: str = "hf",
    model: str = "tiny",
    extract: ExtractMode = "two-stage-overlap",
    decisions: Decoding = "decode",
    catalog: Catalog | str | Path | None = None,
    store: str | Path | Store | None = None,
    namespace: str = DEFAULT_NAMESPACE,
    load: str | Path | None = None,
    overrides: Sequence[str] = (),
    log: str | Path = "outputs/logs/memory-serve.log",
    endpoint: str | None = None,
    models: str | Mapping[str, str] | Sequence[str] = (),
) -> Iterator[ProjectMemory]:
    """A memory with its operators, for the ``with`` block: ``engine="symbolic"`` needs nothing;
    ``learned`` and ``hybrid`` start ``backend`` (``hf`` in this process, ``vllm`` as a server
    from ``.venv-serve``) on ``model`` with the adapters in ``adapters`` (a folder holding
    ``extract/``, ``compare/``, ``update/`` and, for the two-stage modes, ``extract-stages/``),
    and stop it on exit; ``decisions`` is how compare and update are answered
    (``LearnedOperators.decisions``: ``contract`` reads each among the answers the rules leave
    open, ``judged`` also asks update's judgment of values of the compare adapter, ``calibrated``
    applies the offsets in the adapters' manifests). Or, with
    ``endpoint`` (an OpenAI-compatible ``…/v1``, its key from ``OPENAI_API_KEY``), they ask
    that endpoint for ``models`` (one name for every operator, or one per operator:
    ``{"extract": ..., "compare": ..., "update": ...}``), under the same prompts and schemas,
    and no adapter or model loads here. ``store`` is where the state lives:
    ``sqlite:///memory.db`` (or a path) for a file that survives the process and that several
    processes share, in ``namespace``; in this process by default. ``load`` imports a memory
    ``save`` exported; ``overrides`` are Hydra overrides of the model and backend
    (``model.path=...``, ``backend.batch_size=16``)."""
    if isinstance(catalog, str | Path):
        catalog = load_catalog(catalog)
    if (endpoint is None) != (not models):
        raise InputError("an endpoint and its models are given together (--endpoint with --endpoint-model)")
    if engine == "symbolic" and endpoint is not None:
        raise InputError("engine=symbolic runs no model: an endpoint needs engine learned or hybrid")
    if decisions not in DECODINGS:
        raise InputError(f"decisions={decisions!r}: one of {', '.join(DECODINGS)}")
    if endpoint is not None and decisions != "decode":
        raise InputError(
            f"decisions={decisions} reads how likely each answer is, which an endpoint does not tell: "
            "decode instead"
        )
    held = open_store(store, namespace)
    if engine == "symbolic":
        yield ProjectMemory.load(load, store=held) if load else ProjectMemory(catalog=catalog, store=held)
        return
    if endpoint is not None:
        yield remembering(engine, endpoint_operators(endpoint, models, extract), extract, catalog, held, load)
        return
    from memops import schemas
    from memops.core.config import compose_config
    from memops.operators.adapters import calibration
    from memops.operators.backends.factory import open_backend
    from memops.operators.learned import decision_adapters, mode_adapter
    from memops.operators.registry import DECISIONS

    if adapters is None:
        raise InputError(f"engine={engine} needs adapters=<the folder of a fold's adapters>")
    schemas.register()  # the replay config's, whose model and backend groups this composes
    cfg = compose_config("replay", [f"model={model}", f"backend={backend}", *overrides])
    needs = list(dict.fromkeys([*decision_adapters(decisions), mode_adapter(extract)]))
    with open_backend(cfg.backend, cfg.model, adapters, [], Path(log), needs) as served:
        ops = LearnedOperators(served, decisions=decisions)
        if decisions == "calibrated":
            try:
                ops.calibrations = {op: calibration(op, Path(adapters) / op) for op in DECISIONS}
            except BackendError as exc:
                raise InputError(str(exc)) from exc
        yield remembering(engine, ops, extract, catalog, held, load)


def endpoint_operators(
    url: str, models: str | Mapping[str, str] | Sequence[str], extract: ExtractMode
) -> LearnedOperators:
    """The learned operators on an OpenAI-compatible endpoint; a mode it cannot run, or models
    that do not name one model per operator, refused before the first call."""
    if extract in READ_MODES:
        raise InputError(
            f"extract={extract} reads how likely each answer is, which an endpoint does not tell; "
            "use direct, two-stage or two-stage-overlap"
        )
    try:
        return LearnedOperators(EndpointBackend.at(url, models))
    except BackendError as exc:
        raise InputError(str(exc)) from exc


def remembering(
    engine: str,
    ops: LearnedOperators,
    extract: ExtractMode,
    catalog: Catalog | None,
    store: Store,
    load: str | Path | None,
) -> ProjectMemory:
    """The memory on ``ops``: new, or imported from ``load`` (read against ``catalog`` if given)."""
    if not load:
        return ProjectMemory(engine=engine, ops=ops, extract=extract, catalog=catalog, store=store)
    memory = ProjectMemory.load(load, ops, store=store)
    memory.catalog = catalog or memory.catalog
    return memory


def open_store(store: str | Path | Store | None, namespace: str = DEFAULT_NAMESPACE) -> Store:
    """The store a URL or path names (``None``: one in this process), its errors as ``InputError``."""
    if isinstance(store, Store):
        return store
    with store_refusals():
        return Store(store or ":memory:", namespace)
