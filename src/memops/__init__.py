"""memops: learned memory operators for a conflict-aware project-state memory.

``memops.memory`` is the symbolic engine, ``memops.operators`` the three operators (rules and
learned), ``memops.data`` the datasets, ``memops.train`` the QLoRA recipe, ``memops.eval`` the
leave-one-out harness and ``memops.slurm`` the cluster submitter; ``memops.cli`` is the
``memops`` command.
"""
