"""The CPU pipeline is reproducible: the tiny model's build, training and greedy decoding give
the same bits on every run on one machine. Two things make that so, and every torch entry point
asks for them here: a thread count fixed by the machine (not by whoever exported
``OMP_NUM_THREADS``: ``accelerate launch`` sets it to 1 on CPU, which changes the reduction order
of every matmul) and torch's deterministic kernels. GPU runs are left as they are."""

from __future__ import annotations

import os


def deterministic_cpu() -> int:
    """Fix the thread count and ask for deterministic kernels on a single-process CPU run;
    returns the threads torch uses: every core this process may run on, or as many as Slurm
    granted the task where that is fewer. A cluster that does not bind tasks to their cores
    (``TaskPlugin=task/none``) leaves every core in each task's affinity, and two one-core tasks
    each running a thread per core of the node would share the node at a third of the speed.
    Multi-process and GPU runs are left alone."""
    import torch

    if not torch.cuda.is_available() and int(os.environ.get("WORLD_SIZE", "1")) == 1:
        torch.set_num_threads(cpu_threads())
        torch.use_deterministic_algorithms(True)
    return torch.get_num_threads()


def cpu_threads() -> int:
    """The cores this process may run on, capped at Slurm's ``SLURM_CPUS_PER_TASK``."""
    cores = len(os.sched_getaffinity(0))
    granted = os.environ.get("SLURM_CPUS_PER_TASK", "")
    return min(cores, int(granted)) if granted.isdigit() and int(granted) > 0 else cores
