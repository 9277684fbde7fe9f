"""The SmolLM2 demo: ``memops loo`` with ``--config-name smollm2-demo`` unless another is given.

A real pretrained model learning on CPU: SmolLM2-135M-Instruct's two decision adapters against
its prompted base, held out on the five trajectories (configs/smollm2-demo.yaml). Every ``memops
loo`` argument works here; ``memops demo --config-name tiny-demo`` runs the whole pipeline on
the tiny model instead.
"""

from __future__ import annotations

import sys

from memops.cli import loo, named_config

CONFIG = DEMO = "smollm2-demo"


def main() -> None:
    if named_config(sys.argv[1:])[0] is None:
        sys.argv[1:1] = ["--config-name", DEMO]
    loo.main()
