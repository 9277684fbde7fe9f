"""The CPU pipeline is reproducible: the tiny model's build, training and greedy decoding give
the same bits on every run on one machine. Two things make that so, and every torch entry point
asks for them here: a thread count fixed by the machine (not by whoever exported
``OMP_NUM_THREADS``: ``accelerate launch`` sets it to 1 on CPU, which changes the reduction order
of every matmul) and torch's deterministic kernels. GPU runs are left as they are."""

from __future__ import annotations

import os


def deterministic_cpu() -> int:
    """Fix the thread count and ask for deterministic kernels on a single-process CPU run;
    returns the threads torch uses: every core this process may run on. Multi-process and GPU
    runs are left alone."""
    import torch

    if not torch.cuda.is_available() and int(os.environ.get("WORLD_SIZE", "1")) == 1:
        torch.set_num_threads(len(os.sched_getaffinity(0)))
        torch.use_deterministic_algorithms(True)
    return torch.get_num_threads()
