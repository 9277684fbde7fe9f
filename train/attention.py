"""Attention in a packed row, one example at a time.

TRL's padding-free packing lays several examples end to end in one row and hands their
boundaries to the model (``cu_seq_lens_q``, from ``position_ids``). With ``sdpa``, transformers
turns them into a block-diagonal mask over the whole row, and torch's kernels take a mask as
data: a 1,024-token row of four 250-token examples computes all 1,024² scores, forward and
backward, about nine times the causal work of its four blocks. On SmolLM2 and 2 CPU cores that
was a third of a training step (``torch.profiler``, issue 26).

``segments`` (``packed_attention=segments``) runs sdpa on each example of the row, causal and
without a mask: the outputs of separate forward passes of the examples, to float rounding
(``tests/train/test_cpu_speed.py``).
Anything else (a padded batch, a decoding step with a cache, a sliding window) goes to
transformers' own sdpa, so the same model still generates and evaluates as before.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

SEGMENTS = "sdpa_segments"
"""The name this attention is registered under in transformers' ``AttentionInterface``."""


def _segment_bounds(query: Any, key: Any, kwargs: dict[str, Any]) -> list[int] | None:
    """Where the row's examples start, and its end; ``None`` unless this is one packed row seen
    whole (no cache, no window), the only case in which per-example causal attention is exact."""
    if query.shape[0] != 1 or query.shape[2] != key.shape[2] or kwargs.get("sliding_window"):
        return None
    bounds = kwargs.get("cu_seq_lens_q")
    if bounds is None:
        positions = kwargs.get("position_ids")
        if positions is None or positions.shape[-1] != query.shape[2]:
            return None
        starts = (positions[0] == 0).nonzero().flatten().tolist()
        if not starts or starts[0] != 0:
            return None
        return [*starts, query.shape[2]]
    bounds = bounds.tolist()
    return bounds if bounds[0] == 0 and bounds[-1] == query.shape[2] else None


def segments_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """A transformers attention function: ``query``, ``key`` and ``value`` are ``[batch, heads,
    tokens, dim]`` (fewer key/value heads under grouped-query attention), the output is ``[batch,
    tokens, heads, dim]`` as sdpa's."""
    import torch
    import torch.nn.functional as F
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    bounds = _segment_bounds(query, key, kwargs)
    if bounds is None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    grouped = query.shape[1] != key.shape[1]
    parts = [
        F.scaled_dot_product_attention(
            query[:, :, a:b],
            key[:, :, a:b],
            value[:, :, a:b],
            dropout_p=dropout,
            is_causal=True,
            scale=scaling,
            enable_gqa=grouped,
        )
        for a, b in pairwise(bounds)
    ]
    return torch.cat(parts, dim=2).transpose(1, 2).contiguous(), None


def attend_per_example(model: Any) -> None:
    """Switch a loaded sdpa model to :func:`segments_attention`. Another implementation (a
    flash-attention kernel already attends per example) is refused rather than replaced."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    current = model.config._attn_implementation
    if current not in ("sdpa", SEGMENTS):
        raise ValueError(
            f"packed_attention=segments runs sdpa per packed example, but the model loads with "
            f"attn_implementation={current}; set packed_attention=mask (a varlen kernel such as "
            f"flash attention already attends per example) or model.attn_implementation=sdpa"
        )
    AttentionInterface.register(SEGMENTS, segments_attention)
    # The masks sdpa takes, for what falls back to it: transformers hands an implementation it
    # has no mask builder for the bare 2-D padding mask.
    AttentionMaskInterface.register(SEGMENTS, sdpa_mask)
    model.set_attn_implementation(SEGMENTS)
