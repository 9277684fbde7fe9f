"""Attention in a packed row, one example at a time.

TRL's padding-free packing lays several examples end to end in one row and hands their
boundaries to the model (``cu_seq_lens_q``, from ``position_ids``). With ``sdpa``, transformers
turns them into a block-diagonal mask over the whole row, and torch's kernels take a mask as
data: a 1,024-token row of four 250-token examples computes all 1,024² scores, forward and
backward, about nine times the causal work of its four blocks. On SmolLM2 and 2 CPU cores that
was a third of a training step (``torch.profiler``).

``segments`` (``packed_attention=segments``) runs sdpa on each example of the row, causal and
without a mask: the outputs of separate forward passes of the examples, to float rounding
(``tests/train/test_cpu_speed.py``).

``shared_prefix`` (``packed_attention=shared_prefix``) also runs the start the row's examples
share only once. Every prompt of an operator opens with the same tokens (the system text, and
for extraction the catalog: 828 of an extract example's 965 SmolLM2 tokens, 91 of a compare
example's 247), and a packed row repeated them for each of its examples. :class:`SharedPrefix`
keeps them in the row's first example and cuts them from the others; such an example keeps
its own positions, so it starts at position ``p > 0``, and it attends to the row's first ``p``
tokens and then causally to itself. The keys and values of the shared start are those each
copy would have had, and the gradients of all examples flow back into them, so the logits, the
loss and the gradient are those of the uncut row, to float rounding, on fewer tokens.

``varlen`` (``packed_attention=varlen``, CUDA only) hands the whole row to the flash-attention
varlen kernel that torch carries (``torch.nn.attention.varlen``), each example causal on its own,
in one call per layer rather than one per example; it does not read a shared start.

Anything else (a padded batch, a decoding step with a cache, a sliding window) goes to
transformers' own sdpa, so the same model still generates and evaluates as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

SEGMENTS = "sdpa_segments"
VARLEN = "torch_varlen"
"""The names these attentions are registered under in transformers' ``AttentionInterface``."""


def _segment_bounds(query: Any, key: Any, kwargs: dict[str, Any]) -> list[int] | None:
    """Where the row's examples start, and its end; ``None`` unless this is one packed row seen
    whole (no cache, no window), the only case in which per-example causal attention is exact.
    An example starts where the positions do not count on by one."""
    if query.shape[0] != 1 or query.shape[2] != key.shape[2] or kwargs.get("sliding_window"):
        return None
    bounds = kwargs.get("cu_seq_lens_q")
    if bounds is None:
        positions = kwargs.get("position_ids")
        if positions is None or positions.shape[-1] != query.shape[2] or positions[0, 0] != 0:
            return None
        row = positions[0]
        starts = [0, *((row[1:] != row[:-1] + 1).nonzero().flatten() + 1).tolist()]
        return [*starts, query.shape[2]]
    bounds = bounds.tolist()
    return bounds if bounds[0] == 0 and bounds[-1] == query.shape[2] else None


def _shared_start(kwargs: dict[str, Any], bounds: list[int]) -> list[int]:
    """Per example, the position it starts at: how many of the row's first tokens it continues
    (0 but in a :class:`SharedPrefix` row)."""
    positions = kwargs.get("position_ids")
    if positions is None:
        return [0] * (len(bounds) - 1)
    starts = positions[0, bounds[:-1]].tolist()
    if any(p > a for p, a in zip(starts, bounds, strict=False)):
        raise ValueError(f"a packed example continues more tokens than come before it: {starts} at {bounds}")
    return starts


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
    parts = []
    for (a, b), p in zip(pairwise(bounds), _shared_start(kwargs, bounds), strict=True):
        keys, values, mask = key[:, :, a:b], value[:, :, a:b], None
        if p:  # the row's first p tokens, then this example causally
            keys = torch.cat([key[:, :, :p], keys], dim=2)
            values = torch.cat([value[:, :, :p], values], dim=2)
            mask = torch.ones(b - a, p + b - a, dtype=torch.bool, device=query.device).tril(p)
        parts.append(
            F.scaled_dot_product_attention(
                query[:, :, a:b],
                keys,
                values,
                attn_mask=mask,
                dropout_p=dropout,
                is_causal=mask is None,
                scale=scaling,
                enable_gqa=grouped,
            )
        )
    return torch.cat(parts, dim=2).transpose(1, 2).contiguous(), None


def varlen_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """As :func:`segments_attention`, with the row's examples in one call of torch's
    flash-attention varlen kernel (bf16 or fp16, no dropout); anything else goes to sdpa."""
    import torch
    from torch.nn.attention.varlen import varlen_attn
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    bounds = _segment_bounds(query, key, kwargs)
    if bounds is None or dropout or query.dtype not in (torch.bfloat16, torch.float16):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    groups = query.shape[1] // key.shape[1]  # grouped-query attention: each key head serves these
    key, value = key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
    q, k, v = (t[0].transpose(0, 1).contiguous() for t in (query, key, value))  # [tokens, heads, dim]
    cu = torch.tensor(bounds, dtype=torch.int32, device=query.device)
    longest = max(b - a for a, b in pairwise(bounds))
    out = varlen_attn(q, k, v, cu, cu, longest, longest, scale=scaling, window_size=(-1, 0))  # causal
    return out[None], None


ATTENTIONS = {"segments": (SEGMENTS, segments_attention), "varlen": (VARLEN, varlen_attention)}
"""Per ``packed_attention``: the name the model's attention is registered under, and the function.
``shared_prefix`` runs :func:`segments_attention`, the only one that reads a shared start."""


def attend_per_example(model: Any, packed_attention: str) -> None:
    """Switch a loaded sdpa model to the attention ``packed_attention`` names. Another
    implementation (a flash-attention kernel already attends per example) is refused rather
    than replaced, as is ``varlen`` without CUDA (the model itself may still be on the CPU here:
    FSDP places it later)."""
    import torch
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    name, attend = ATTENTIONS.get(packed_attention, ATTENTIONS["segments"])
    current = model.config._attn_implementation
    if current not in ("sdpa", name):
        raise ValueError(
            f"packed_attention={packed_attention} replaces sdpa, but the model loads with "
            f"attn_implementation={current}; set packed_attention=mask (a varlen kernel such as "
            f"flash attention already attends per example) or model.attn_implementation=sdpa"
        )
    if name == VARLEN and not torch.cuda.is_available():
        raise ValueError(
            "packed_attention=varlen runs torch's flash-attention kernel, which needs CUDA, and "
            "torch sees no GPU here (packed_attention=segments attends per example on a CPU)"
        )
    AttentionInterface.register(name, attend)
    # The masks sdpa takes, for what falls back to it: transformers hands an implementation it
    # has no mask builder for the bare 2-D padding mask.
    AttentionMaskInterface.register(name, sdpa_mask)
    model.set_attn_implementation(name)


@dataclass
class SharedPrefix:
    """A data collator around TRL's padding-free one: in each packed row, the start that all its
    examples share, up to the first labelled token of any, stays in the first example and is
    cut from the others. The positions (and so the boundaries :func:`segments_attention` reads)
    stay those of the uncut examples; ``cu_seq_lens`` are rebuilt for the shorter row. Only
    :func:`segments_attention` reads such a row right, so ``packed_attention=shared_prefix``
    switches the model to it too."""

    collate: Callable[[list[dict[str, Any]]], dict[str, Any]]

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        return cut_shared_prefix(self.collate(examples))


def shared_prefix_length(ids: Any, labels: Any, bounds: list[int]) -> int:
    """How many tokens every example of the row opens with, short of the first label any of them
    needs: an example's first kept token is read at the end of the one before it, so it must
    carry no label."""
    segments = list(pairwise(bounds))
    n = min(_first_label(labels[a:b]) for a, b in segments) - 1
    for a, _ in segments[1:]:
        differ = (ids[a : a + n] != ids[:n]).nonzero()
        if len(differ):
            n = int(differ[0])
    return max(n, 0)


def _first_label(labels: Any) -> int:
    labelled = (labels != -100).nonzero()
    return int(labelled[0]) if len(labelled) else len(labels)


def cut_shared_prefix(batch: dict[str, Any]) -> dict[str, Any]:
    """``batch`` with the shared start of its row's examples run once (see :class:`SharedPrefix`)."""
    import torch

    bounds = batch["cu_seq_lens_q"].tolist()
    if len(bounds) < 3:  # one example: nothing is repeated
        return batch
    p = shared_prefix_length(batch["input_ids"][0], batch["labels"][0], bounds)
    if p == 0:
        return batch
    keep = torch.ones(bounds[-1], dtype=torch.bool)
    for a in bounds[1:-1]:
        keep[a : a + p] = False
    lengths = torch.tensor(bounds).diff()
    lengths[1:] -= p
    cut = torch.cat([torch.zeros(1, dtype=torch.int32), lengths.cumsum(0).to(torch.int32)])
    out = dict(batch)
    for name in ("input_ids", "labels", "position_ids"):
        out[name] = batch[name][:, keep]
    out["cu_seq_lens_q"] = out["cu_seq_lens_k"] = cut
    out["max_length_q"] = out["max_length_k"] = int(lengths.max())
    if "seq_idx" in batch:
        out["seq_idx"] = torch.repeat_interleave(torch.arange(len(lengths), dtype=torch.int32), lengths)[None]
    return out
