"""Decoding along the token ids a request names (a vLLM logits-processor plugin).

The scoring selection reads the log-probability of each option's tokens, teacher-forced. Read a
token at a time, every token of every option is a request of its own, and each request computes
again the part of its prompt past the prefix cache's last whole block. A request that names its
option's tokens in ``vllm_xargs`` (``{"forced_tokens": [ids]}``) is decoded along them instead:
at its k-th generated token every logit but that of ``ids[k]`` is set to -inf, so greedy
decoding takes ``ids[k]``. vLLM computes the log-probabilities it returns from the raw logits,
before any logits processor (``logprobs_mode`` ``raw_logprobs``, its default), so each step's
sampled log-probability is the model's own for that token: one request reads a whole option.

vLLM loads the plugin in the engine (entry point ``vllm.logits_processors``); requests that do
not name ``forced_tokens`` are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

if TYPE_CHECKING:
    from vllm import SamplingParams
    from vllm.config import VllmConfig

KEY = "forced_tokens"


class ForcedTokens(LogitsProcessor):
    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool) -> None:
        self.forced: dict[int, tuple[Sequence[int], list[int]]] = {}
        """Batch index -> (the ids to decode, the request's output ids so far, vLLM's live list)."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        ids = (sampling_params.extra_args or {}).get(KEY)
        if ids is None:
            return
        if not isinstance(ids, list) or not ids or not all(isinstance(t, int) and t >= 0 for t in ids):
            raise ValueError(f"vllm_xargs.{KEY} must be a non-empty list of token ids, got {ids!r}")
        if sampling_params.max_tokens is not None and sampling_params.max_tokens > len(ids):
            raise ValueError(f"max_tokens {sampling_params.max_tokens} is past the {len(ids)} {KEY}")

    def is_argmax_invariant(self) -> bool:
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.forced.pop(index, None)
        for index, params, _, output_ids in batch_update.added:
            ids = (params.extra_args or {}).get(KEY) if params is not None else None
            if ids:
                self.forced[index] = (ids, output_ids)
            else:
                self.forced.pop(index, None)
        for a, b, direction in batch_update.moved:
            moving, there = self.forced.pop(a, None), self.forced.pop(b, None)
            if moving is not None:
                self.forced[b] = moving
            if there is not None and direction == MoveDirectionality.SWAP:
                self.forced[a] = there

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        rows, ids = [], []
        for index, (forced, output_ids) in self.forced.items():
            if len(output_ids) < len(forced):
                rows.append(index)
                ids.append(forced[len(output_ids)])
        if not rows:
            return logits
        at = torch.tensor(rows, device=logits.device), torch.tensor(ids, device=logits.device)
        kept = logits[at]
        logits[at[0]] = float("-inf")
        logits[at] = kept
        return logits
