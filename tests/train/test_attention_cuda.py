"""torch's flash-attention varlen kernel against sdpa per example, on a GPU only: the kernel has
no CPU implementation, so CI (no GPU) skips this file; it ran on an H200 (docs/results.md)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch's varlen kernel needs CUDA")


def test_varlen_attention_gives_the_outputs_and_gradients_of_sdpa_per_example() -> None:
    """One packed row of seven examples with Qwen2.5-14B's heads (40 query, 8 key/value, grouped):
    the same outputs and gradients as each example on its own, to bf16 rounding."""
    from memops.train.attention import segments_attention, varlen_attention

    lengths = [300, 251, 180, 412, 260, 330, 315]
    positions = torch.cat([torch.arange(n) for n in lengths])[None].cuda()
    bounds = torch.tensor([0, *lengths], device="cuda").cumsum(0).to(torch.int32)
    row = {"position_ids": positions, "cu_seq_lens_q": bounds, "cu_seq_lens_k": bounds}
    torch.manual_seed(0)
    inputs = [torch.randn(1, h, sum(lengths), 128, device="cuda", dtype=torch.bfloat16) for h in (40, 8, 8)]
    results = []
    for attend in (segments_attention, varlen_attention):
        q, k, v = (t.clone().requires_grad_() for t in inputs)
        out, _ = attend(None, q, k, v, None, scaling=128**-0.5, **row)
        out.float().square().sum().backward()
        results.append([out.detach().float(), q.grad.float(), k.grad.float(), v.grad.float()])
    for name, want, got in zip(["output", "dq", "dk", "dv"], *results, strict=True):
        worst = (got - want).abs().max().item()
        assert worst <= 0.01 * want.abs().max().item(), (name, worst)
