"""The serving environment's LoRA plugin (``plugins/vllm-cpu-lora``) against the definition of
vLLM's CPU ops: every token's own adapter weights gathered and multiplied row by row. The
plugin imports vLLM only to install itself, so its ops are checked here without a server;
``test_real_vllm.py`` serves adapters with it installed."""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from tests.conftest import ROOT


def _load():
    path = ROOT / "plugins" / "vllm-cpu-lora" / "memops_cpu_lora.py"
    spec = importlib.util.spec_from_file_location("memops_cpu_lora", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("memops_cpu_lora", module)
    spec.loader.exec_module(module)
    return module


plugin = _load()


def gathered(inputs: torch.Tensor, weights: torch.Tensor, indices: torch.Tensor, dtype) -> torch.Tensor:
    """The stock ops' product: a [tokens, out, in] copy of each token's weights, then row by row."""
    picked = weights[indices].to(dtype)
    if picked.dim() == 4:
        picked = picked.squeeze(1)
    return torch.einsum("bi, boi -> bo", inputs.to(dtype), picked)


# A prefill of one adapter; a batch mixing adapters and tokens without one (-1, which indexes the
# last slot in the stock ops too); one decode row.
INDICES = [[2] * 9, [0, 0, 1, -1, 1, 3, 3, 0], [1]]


@pytest.mark.parametrize("indices", INDICES)
@pytest.mark.parametrize("stacked", [3, 4])  # weights with and without vLLM's singleton dimension
def test_shrink_matches_the_stock_definition(indices: list[int], stacked: int) -> None:
    g = torch.Generator().manual_seed(0)
    idx = torch.tensor(indices)
    x = torch.randn(len(indices), 24, generator=g, dtype=torch.bfloat16)
    w = torch.randn(4, 1, 8, 24, generator=g) if stacked == 4 else torch.randn(4, 8, 24, generator=g)
    out = torch.zeros(len(indices), 10)
    plugin.bgmv_shrink(x, w, out, idx, 0.5)
    want = 0.5 * gathered(x, w, idx, torch.float32)
    torch.testing.assert_close(out[:, :8], want, rtol=1e-5, atol=1e-5)
    assert not out[:, 8:].any()  # columns past the rank are left alone


@pytest.mark.parametrize("indices", INDICES)
@pytest.mark.parametrize("add", [True, False])
def test_expand_and_expand_slice_match_the_stock_definition(indices: list[int], add: bool) -> None:
    g = torch.Generator().manual_seed(1)
    idx = torch.tensor(indices)
    x = torch.randn(len(indices), 8, generator=g)
    w = torch.randn(4, 1, 20, 8, generator=g)
    start = torch.randn(len(indices), 30, generator=g)
    product = gathered(x, w, idx, torch.float32)

    out = start.clone()
    plugin.bgmv_expand(x, w, out, idx, add)
    want = start.clone()
    want[:, :20] = product + (start[:, :20] if add else 0)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)

    out = start.clone()
    plugin.bgmv_expand_slice(x, w, out, idx, 5, 20, add)
    want = start.clone()
    want[:, 5:25] = product + (start[:, 5:25] if add else 0)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)


def test_shapes_it_does_not_claim_go_to_the_stock_op() -> None:
    """An index per row is the contract; anything else is vLLM's own op's to handle."""
    seen = []
    plugin.STOCK["bgmv_shrink"] = lambda *args: seen.append(args)
    try:
        x, idx = torch.randn(3, 24), torch.tensor([0, 1])
        plugin.bgmv_shrink(x, torch.randn(2, 8, 24), torch.zeros(3, 8), idx, 1.0)
    finally:
        del plugin.STOCK["bgmv_shrink"]
    assert len(seen) == 1 and seen[0][0] is x
