"""Merge a finished adapter into its base and save a plain safetensors model, for runtimes
without LoRA support (llama.cpp conversion, TGI without adapters, plain transformers).

    memops export-merged outputs/adapters/<model>/<fold>/<op> [--out DIR] [--overwrite]

Default ``--out``: ``outputs/export/merged/<model>/<fold>/<op>``. A 4-bit (QLoRA) base is
dequantized before the merge, so the merged model computes what the adapter computed; see
``train/export.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from memops.core.layout import OUTPUTS
from memops.train.export import export_merged


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("adapter", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args()
    adapter = args.adapter.resolve()
    out = args.out or Path(OUTPUTS) / "export" / "merged" / Path(*adapter.parts[-3:])
    began = time.perf_counter()
    try:
        written = export_merged(adapter, out, overwrite=args.overwrite)
    except (FileNotFoundError, FileExistsError) as exc:
        sys.exit(f"memops export-merged: {exc}")
    size = sum(p.stat().st_size for p in written.glob("*.safetensors"))
    took = time.perf_counter() - began
    print(f"merged {adapter} -> {written} ({size / 2**20:.1f} MiB of safetensors, {took:.0f} s)")


if __name__ == "__main__":
    main()
