"""One interface for every way of running an operator: a batch of requests in, texts out.

A backend never parses: it returns the text a model produced, and the operator layer turns
text into a validated output or a recorded failure. That keeps a malformed answer from ever
looking like a transport problem, so only transport problems are retried.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Completion:
    text: str
    latency_s: float
    """Wall time of the call that produced it; in a batched call, an even share of the batch's."""
    completion_tokens: int
    refused: str | None = None
    """Why the backend refused this one request (vLLM's HTTP 400, or the hf backend's own check:
    a prompt longer than the model's context): the sample fails with it and the run goes on."""
    top_logprobs: dict[str, float] | None = None
    """Log-probabilities at the first position, by token (``token_id:<n>``), when a probe asked
    the server for them."""


@dataclass(frozen=True)
class Probe:
    """A question whose answer is one of a few ``options``: its answer is read, not generated."""

    adapter: str
    messages: Messages
    options: tuple[str, ...]
    """The answers to weigh; each is scored by its first token after the generation prompt, so
    their first tokens must differ."""


@dataclass(frozen=True)
class Odds:
    probs: tuple[float, ...]
    """One per option: its first token's probability, renormalized over the options."""
    latency_s: float
    """As ``Completion.latency_s``."""
    refused: str | None = None


class BackendError(RuntimeError):
    """The backend could not answer at all (server unreachable, retries spent, bad adapter)."""


def first_tokens(prompt: list[int], begun: Sequence[list[int]], options: Sequence[str]) -> list[int]:
    """Each option's first token: where ``begun`` (the prompt's tokens with that option started
    after it) leaves ``prompt``. Refused when an option does not start a token of its own, or
    two options start with the same token, since a probe could not tell them apart."""
    firsts = []
    for option, ids in zip(options, begun, strict=True):
        if ids[: len(prompt)] != prompt or len(ids) == len(prompt):
            raise BackendError(f"the option {option!r} does not start a new token after the prompt")
        firsts.append(ids[len(prompt)])
    if len(set(firsts)) != len(firsts):
        raise BackendError(
            f"the options {list(options)} share their first token: a probe cannot tell them apart"
        )
    return firsts


class Backend(Protocol):
    def complete(self, requests: Sequence[Request]) -> list[Completion]: ...

    def probe(self, probes: Sequence[Probe]) -> list[Odds]:
        """The options' probabilities at the answer's first token, from one forward pass each
        (no decoding): how a selection scores every catalog pair."""
        ...
