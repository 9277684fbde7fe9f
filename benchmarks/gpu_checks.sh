#!/usr/bin/env bash
# The GPU checks, most telling first, so a short GPU lease that ends early still answers the
# questions that matter: the varlen kernel against sdpa, Qwen2.5-14B's shape in NF4 through
# train.py, the saved adapter on a fresh base, then the training throughput of the candidates.
#
#   bash benchmarks/gpu_checks.sh [weights folder]     # default outputs/bench/qwen2.5-14b-shape
#
# Needs CUDA and the train extras (make venv GPU=1); random weights, no download. 508 s on an H200,
# most of it loading the 28 GB of bf16 weights into NF4, once per run.
set -euo pipefail
PYTHON=${PYTHON:-python}
WEIGHTS=${1:-outputs/bench/qwen2.5-14b-shape}
ADAPTERS=outputs/bench/gpu-checks/adapters

"$PYTHON" -m pytest -q -p no:cacheprovider tests/train/test_attention_cuda.py
"$PYTHON" - "$WEIGHTS" <<'PY'  # the bench's own random weights, which train.py trains on first
import sys
from pathlib import Path

sys.path.insert(0, "benchmarks")
from bench_train import random_14b
from memops.core.layout import MODELS

random_14b(Path(sys.argv[1]), f"{MODELS}/tiny")
PY
"$PYTHON" -m accelerate.commands.launch --num_processes 1 train.py op=compare \
    model=qwen2.5-14b-instruct "model.path=$WEIGHTS" recipe=gpu max_steps=2 "adapters_dir=$ADAPTERS"
"$PYTHON" benchmarks/reload_adapter.py --model qwen2.5-14b-instruct --model-path "$WEIGHTS" \
    --adapter "$ADAPTERS/qwen2.5-14b-instruct/all/compare"
"$PYTHON" benchmarks/bench_train.py --model-shape qwen2.5-14b --shape-dir "$WEIGHTS" --steps 4
