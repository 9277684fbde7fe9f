"""memops: learned memory operators for a conflict-aware project-state memory.

The component: ``memops.open_memory`` yields a ``ProjectMemory`` (the engine with its operators:
the rules, or adapters on the ``hf`` or ``vllm`` backend) to feed notes and ask for state.
``memops.memory`` is the symbolic engine, ``memops.operators`` the three operators, ``memops.data``
the datasets, ``memops.train`` the QLoRA recipe, ``memops.eval`` the leave-one-out harness,
``memops.slurm`` the cluster submitter, ``memops.track`` the component and ``memops track``,
``memops.cli`` the ``memops`` command.
"""

from typing import Any

__all__ = ["Change", "KeyState", "NoteResult", "ProjectMemory", "load_catalog", "open_memory"]


def __getattr__(name: str) -> Any:
    """The component's names, imported on first use so that ``import memops`` stays light."""
    if name in __all__:
        import memops.track

        return getattr(memops.track, name)
    raise AttributeError(f"module 'memops' has no attribute {name!r}")
