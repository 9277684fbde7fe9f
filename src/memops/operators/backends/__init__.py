"""One interface for every way of running an operator: a batch of requests in, texts out.

A backend never parses: it returns the text a model produced, and the operator layer turns
text into a validated output or a recorded failure. That keeps a malformed answer from ever
looking like a transport problem, so only transport problems are retried.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Messages = list[dict[str, str]]
BASE = "base"
"""The adapter name that means no adapter: the bare base model, prompted (the baseline)."""


@dataclass(frozen=True)
class Request:
    adapter: str
    """Adapter name (``extract``, ``compare``, ``update``), the served LoRA module of that name;
    ``BASE`` runs the base model alone."""
    messages: Messages
    json_schema: dict[str, Any] | None
    """Constrains decoding when given; ``None`` decodes freely."""
    max_tokens: int
    favour: str | None = None
    """A text whose tokens get ``favour_bias`` added to their logits at every step: decoding that
    leans toward copying it (a study of values worded as the note words them)."""
    favour_bias: float = 0.0
    stem: bool = False
    """Other calls will ask about the same note (the extraction steps): the hf backend keeps this
    prompt's stems for them (``prefixes.StemCache``). vLLM's prefix cache needs no hint."""


@dataclass(frozen=True)
class Completion:
    text: str
    latency_s: float
    """Wall time of the call that produced it; in a batched call, an even share of the batch's."""
    completion_tokens: int
    refused: str | None = None
    """Why the backend refused this one request (vLLM's HTTP 400, or the hf backend's own check:
    a prompt longer than the model's context): the sample fails with it and the run goes on."""


@dataclass(frozen=True)
class Probe:
    """A question whose answer is one of a few ``options``: its answer is read, not generated."""

    adapter: str
    messages: Messages
    options: tuple[str, ...]
    """The answers to weigh, each as the start of the reply after the generation prompt (a whole
    stage-1 answer, ``{"pairs":["a.b"]}``): scored by the probability of all its tokens,
    teacher-forced."""


@dataclass(frozen=True)
class Odds:
    probs: tuple[float, ...]
    """One per option: the probability of its tokens, renormalized over the options."""
    latency_s: float
    """As ``Completion.latency_s``."""
    refused: str | None = None


class BackendError(RuntimeError):
    """The backend could not answer at all (server unreachable, retries spent, bad adapter)."""


def parting(rows: Sequence[list[int]], options: Sequence[str]) -> int:
    """Where the token rows of one probe's options (the prompt with each option begun after it,
    tokenized in context) part: the length of the prefix they all share. Each option is scored
    by its tokens from there on, so the shared part, which every option has alike, drops out.
    Refused when an option has no token of its own there (two options tokenize alike, or one is
    the other's start), since a probe could not tell them apart."""
    part = min(map(len, rows))
    part = next((k for k in range(part) if len({row[k] for row in rows}) > 1), part)
    for option, row in zip(options, rows, strict=True):
        if len(row) == part:
            raise BackendError(
                f"the option {option!r} has no token of its own beside the options {list(options)}: "
                "a probe cannot tell them apart"
            )
    return part


def renormalized(logprobs: Sequence[float]) -> tuple[float, ...]:
    """Probabilities from per-option log-probabilities, over the options only."""
    peak = max(logprobs)
    weights = [math.exp(x - peak) for x in logprobs]
    return tuple(w / sum(weights) for w in weights)


class Backend(Protocol):
    def complete(self, requests: Sequence[Request]) -> list[Completion]: ...

    def probe(self, probes: Sequence[Probe]) -> list[Odds]:
        """The options' probabilities, read teacher-forced (no decoding): how a selection scores
        every catalog pair."""
        ...
