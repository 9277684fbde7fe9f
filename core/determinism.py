"""The CPU pipeline is reproducible: the tiny model's build, training and greedy decoding give
the same bits on every run on one machine. Two things make that so, and every torch entry point
asks for them here: a thread count fixed by the machine (not by whoever exported
``OMP_NUM_THREADS``: ``accelerate launch`` sets it to 1 on CPU, which changes the reduction order
of every matmul) and torch's deterministic kernels. GPU runs are left as they are."""

from __future__ import annotations

import os


def cpu_threads() -> int:
    """Every core this process may run on, for a single-process CPU run."""
    return len(os.sched_getaffinity(0))


def deterministic_cpu() -> int:
    """Fix the thread count and ask for deterministic kernels on a single-process CPU run;
    returns the threads torch uses. Multi-process and GPU runs are left alone."""
    import torch

    if not torch.cuda.is_available() and int(os.environ.get("WORLD_SIZE", "1")) == 1:
        torch.set_num_threads(cpu_threads())
        torch.use_deterministic_algorithms(True)
    return torch.get_num_threads()
