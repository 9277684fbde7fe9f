"""Operators from any OpenAI-compatible chat endpoint: a vLLM server, a hosted model, a gateway.

The memory's learned operators need only one call of such an endpoint, a chat completion held
to a JSON schema, which the OpenAI API spells ``response_format={"type": "json_schema", ...}``
and vLLM, llama.cpp's server, Ollama and the hosted APIs accept. Each operator asks for a model
of its own name (one model for all, or one per operator), with the project's prompts and
schemas; nothing is trained or served here. What an endpoint cannot give is the likelihood of a
given answer, so the modes that read rather than decode (``READ_MODES``, ``decisions=read``) are
refused before the first call. The transport (bounded concurrency, retries on transport errors
only, a 400 failing one request) is the vLLM client's.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from memops.operators.backends import BASE, BackendError, Completion, Odds, Probe, Request
from memops.operators.backends.vllm import VLLMBackend
from memops.operators.registry import EXTRACT, OPS, STAGES_ADAPTER

KEY_VARIABLE = "OPENAI_API_KEY"
"""Where the endpoint's key is read from (never a command-line argument, which ``ps`` shows)."""


def endpoint_models(models: str | Mapping[str, str] | Sequence[str]) -> dict[str, str]:
    """The model each operator asks for: one name for every operator, a mapping of operator to
    name, or command-line words (``NAME`` for every operator, ``compare=NAME`` for one)."""
    if isinstance(models, str):
        models = [models]
    if isinstance(models, Mapping):
        named = dict(models)
    else:
        named = {}
        for word in models:
            op, _, name = word.rpartition("=")  # "NAME": op is ""
            for one in [op] if op else OPS:
                named[one] = name
    unknown = sorted(set(named) - set(OPS))
    if unknown:
        raise BackendError(f"endpoint models name {unknown}: the operators are {', '.join(OPS)}")
    if empty := [op for op, name in named.items() if not str(name).strip()]:
        raise BackendError(f"endpoint models: no model name for {', '.join(empty)}")
    if missing := [op for op in OPS if op not in named]:
        raise BackendError(f"endpoint models: no model for {', '.join(missing)} (NAME for every operator)")
    return {op: str(named[op]) for op in OPS}


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    """``--endpoint`` and ``--endpoint-model``, for the commands that run a memory's operators."""
    parser.add_argument(
        "--endpoint",
        metavar="URL",
        help=f"an OpenAI-compatible endpoint (…/v1, its key in {KEY_VARIABLE}) to run the operators "
        "instead of adapters",
    )
    parser.add_argument(
        "--endpoint-model",
        metavar="[OP=]NAME",
        action="append",
        default=[],
        help="the model the endpoint runs: NAME for every operator, OP=NAME for one (extract, "
        "compare, update)",
    )


@dataclass
class EndpointBackend(VLLMBackend):
    """Chat completions from ``base_url`` (up to and including ``/v1``), each operator's request
    asking for ``models[operator]``; the extract steps of every mode ask for the extract model."""

    models: Mapping[str, str] = field(default_factory=dict)
    concurrency: int = 8

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise BackendError(f"endpoint {self.base_url!r}: not an http(s) URL (…/v1)")
        self.models = endpoint_models(self.models)

    @classmethod
    def at(cls, url: str, models: str | Mapping[str, str] | Sequence[str], **kw: Any) -> EndpointBackend:
        """The endpoint at ``url``, its key from ``OPENAI_API_KEY`` (a local server takes any)."""
        return cls(url, os.environ.get(KEY_VARIABLE, "EMPTY"), models=models, **kw)

    def complete(self, requests: Sequence[Request]) -> list[Completion]:
        if any(r.favour for r in requests):
            raise BackendError(f"{self.base_url}: an endpoint cannot favour a note's tokens (favour_note=0)")
        return super().complete(requests)

    def probe(self, probes: Sequence[Probe]) -> list[Odds]:
        raise BackendError(
            f"{self.base_url}: an OpenAI-compatible endpoint generates answers; it cannot read how "
            "likely each of a few answers is (decisions=read, extract two-stage-scored, "
            "two-stage-read or two-stage-proposed): decode instead"
        )

    def _served(self, adapter: str) -> str:
        if adapter == BASE:
            raise BackendError(f"{self.base_url}: an endpoint has no bare base to prompt")
        return self.models[EXTRACT.name if adapter == STAGES_ADAPTER else adapter]

    @staticmethod
    def _constrained(request: Request, bias: dict[str, float] | None) -> dict[str, Any]:
        """The schema as the OpenAI API's ``response_format`` (not strict: the hosted APIs'
        strict mode wants every field required, which a field with a default is not)."""
        if request.json_schema is None:
            return {}
        schema = {"name": f"memops-{request.adapter}", "schema": request.json_schema}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}
