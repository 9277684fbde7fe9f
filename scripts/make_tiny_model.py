"""Build the tiny local model (tokenizer + briefly pretrained Qwen2) at outputs/models/tiny/.

Usage: python scripts/make_tiny_model.py [--out outputs/models/tiny] [--force]
Rebuilds only when the spec or the code that shapes its corpus changed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from train.tiny import build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/models/tiny"))
    parser.add_argument("--force", action="store_true", help="rebuild even if an up-to-date build exists")
    args = parser.parse_args()
    build(args.out, force=args.force)


if __name__ == "__main__":
    main()
