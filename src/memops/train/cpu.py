"""Training on a CPU near its limit: what this machine's cores can do, and an LM head that scores
only the positions the loss reads.

Two costs dominated the SmolLM2 recipe on CPU (``benchmarks/bench_train.py``):

- **The LM head over every position.** The loss reads completion tokens only (a compare row: about
  15 of 235), but off Triton devices TRL's fused head projects every position onto the
  49,152-token vocabulary, forward and backward, so that a compiler sees the same tile shapes on
  every batch. An eager CPU run has no such compiler, so :func:`labelled_positions_only`
  turns on TRL's own compact path (the one it takes on CUDA): only positions whose next-token
  label is kept are projected. The loss is the same sum over the same positions.
- **fp32 matmuls.** A core with AVX-512-BF16 or AMX multiplies bf16 at about twice its fp32 rate;
  :func:`native_bf16` says whether this one does, and the recipe autocasts to bf16 only then
  (the LoRA weights, their gradients and the optimizer state stay fp32).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""CPU flags that mean native bf16 matmuls; without one, bf16 is emulated and slower than fp32."""
MATMUL_FLAGS = ("avx2", "avx512f", "avx512_vnni", *BF16_FLAGS)
"""The flags that decide how fast this CPU multiplies: what a manifest and a figure report."""


@functools.cache
def cpu_info() -> dict[str, str]:
    """The first processor's fields from ``/proc/cpuinfo`` (empty off Linux)."""
    info: dict[str, str] = {}
    path = Path("/proc/cpuinfo")
    if not path.exists():
        return info
    for line in path.read_text().splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    return info


def cpu_model() -> str:
    return cpu_info().get("model name", "unknown CPU")


def cpu_flags() -> set[str]:
    return set(cpu_info().get("flags", "").split())


def matmul_flags() -> list[str]:
    return sorted(cpu_flags() & set(MATMUL_FLAGS))


CAPPED_CAPABILITIES = ("default", "avx2")
"""Values of torch's ``ATEN_CPU_CAPABILITY`` that cap its kernels below AVX-512: with one, this
CPU runs as an AVX2 one would, so bf16 counts as emulated whatever the flags say."""


def native_bf16() -> bool:
    capped = os.environ.get("ATEN_CPU_CAPABILITY", "").lower() in CAPPED_CAPABILITIES
    return bool(cpu_flags() & set(BF16_FLAGS)) and not capped


@contextmanager
def labelled_positions_only() -> Iterator[None]:
    """While open, TRL's fused LM head takes its compact path on CPU too: it projects only the
    positions whose next-token label is not -100, as it already does on CUDA and XPU.

    TRL 1.16 decides this in ``trl.trainer.utils._fused_forward`` by calling
    ``trl.trainer.utils._use_triton(device)``; the kernel asks its own module's copy, which stays
    as it is, so on CPU the tiles are still folded by torch ops. Restored on exit, so a run with
    ``lm_head=all`` in the same process scores every position."""
    import trl.trainer.utils as trl_utils

    decide = trl_utils._use_triton

    def compact_on_cpu_too(device) -> bool:
        return device.type == "cpu" or decide(device)

    trl_utils._use_triton = compact_on_cpu_too
    try:
        yield
    finally:
        trl_utils._use_triton = decide
