"""Preflight of a cluster run: what a profile needs, checked on this machine before the hours start.

Each check is a row: ``ok``, ``missing`` (the run cannot work; preflight exits non-zero naming
it) or ``note`` (worth knowing, not fatal, e.g. base weights that will be downloaded). The GPU
checks run real work on the GPU: a 4-bit matmul through bitsandbytes' CUDA kernels compared with
the same product in bf16.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memops.core.layout import ADAPTER_MANIFEST, OUTPUTS
from memops.core.models import ModelConfig, base_cached, hub_cache, on_hub
from memops.eval.plan import steps
from memops.operators.backends.serve import ServerFailed, serve_env
from memops.slurm.config import SubmitConfig

OK, MISSING, NOTE = "ok", "missing", "note"


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str


def needs_gpu(cfg: SubmitConfig) -> bool:
    return cfg.resources.train.gpus > 0 or cfg.resources.eval.gpus > 0


def cuda(cfg: SubmitConfig) -> list[Check]:
    import torch

    if not torch.cuda.is_available():
        status = MISSING if needs_gpu(cfg) else NOTE
        why = (
            "the profile's jobs ask for GPUs: run preflight on a GPU node (srun --gres=gpu:1 memops "
            "preflight ...) for the GPU checks, and install a CUDA torch there (make venv GPU=1)"
            if needs_gpu(cfg)
            else "this profile runs on CPUs"
        )
        return [Check("GPU", status, f"no GPU: CUDA is not available to torch {torch.__version__}; {why}")]
    props = torch.cuda.get_device_properties(0)
    gib = props.total_memory / 2**30
    rows = [Check("GPU", OK, f"{props.name}, {gib:.0f} GiB, CUDA {torch.version.cuda}")]
    return [*rows, bnb_matmul()]


def bnb_matmul() -> Check:
    """A real NF4 matmul on the GPU through bitsandbytes, against bf16 on the dequantized weight."""
    try:
        import bitsandbytes as bnb
        import torch

        layer = bnb.nn.Linear4bit(4096, 4096, bias=False, compute_dtype=torch.bfloat16, quant_type="nf4")
        layer = layer.cuda()
        x = torch.randn(64, 4096, dtype=torch.bfloat16, device="cuda")
        got = layer(x)
        weight = bnb.functional.dequantize_4bit(layer.weight.data, layer.weight.quant_state)
        want = x @ weight.to(torch.bfloat16).t()
        error = ((got - want).norm() / want.norm()).item()
    except Exception as exc:  # any failure here is the finding: report it, do not crash the table
        return Check("4-bit matmul", MISSING, f"bitsandbytes NF4 on CUDA failed: {type(exc).__name__}: {exc}")
    status = OK if error < 1e-2 else MISSING
    return Check("4-bit matmul", status, f"bitsandbytes {bnb.__version__} NF4, relative error {error:.1e}")


def serving(cfg: SubmitConfig) -> Check:
    if cfg.backend.kind != "vllm":
        return Check("serving env", NOTE, f"backend={cfg.backend.kind}: no vLLM server needed")
    try:
        env = serve_env(cfg.backend.serve.python)
    except ServerFailed as exc:
        return Check("serving env", MISSING, str(exc))
    want_gpu = cfg.resources.eval.gpus > 0
    if want_gpu and env.get("device") != "cuda":
        build = f"vLLM {env['vllm']} is the {env['device']} build"
        detail = f"{build}; the eval jobs run on GPUs (make serve-env there)"
        return Check("serving env", MISSING, detail)
    return Check("serving env", OK, f"vLLM {env['vllm']} ({env['device']}) at {cfg.backend.serve.python}")


def local_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def base_weights(model: ModelConfig, hf_home: str | None = None) -> tuple[Check, int]:
    """Where the base will be read from, and the bytes it still needs on disk."""
    path = Path(model.path)
    planned = int((model.weights_gib or 0) * 2**30)
    if path.is_dir():
        if not any(path.glob("*.safetensors")):
            return Check("base weights", MISSING, f"{path} holds no safetensors weights"), 0
        return Check("base weights", OK, f"{path} ({local_size(path) / 2**30:.1f} GiB on disk)"), 0
    if model.build:
        return Check("base weights", NOTE, f"{path} is built by the project on first use ({model.build})"), 0
    if base_cached(model, hf_home):
        where = f"{model.path} is in the Hugging Face cache at {hub_cache(hf_home)}"
        return Check("base weights", OK, where), 0
    size = f"{model.weights_gib} GiB" if model.weights_gib else "size unknown"
    detail = (
        f"{model.path} is not in the cache at {hub_cache(hf_home)}: the prepare job downloads it once "
        f"({size}; it needs the Hub), or give model.path=<a local folder>"
    )
    return Check("base weights", NOTE, detail), planned


ADAPTER_GIB = {"qwen2.5-14b-instruct": 0.26}
"""One LoRA adapter (r=16 on every linear layer) as saved, per base; checkpoints add the Adam
state (twice the adapter in fp32) on top."""


def disk(cfg: SubmitConfig, base_bytes: int) -> Check:
    plan = steps(cfg)
    per_adapter = ADAPTER_GIB.get(cfg.model.name, 0.05) * 2**30
    kept = cfg.save_total_limit if cfg.save_total_limit is not None else 10
    need = base_bytes + len(plan.untrained) * per_adapter * (1 + 3 * kept)
    root = Path(cfg.adapters_dir)
    probe = next(p for p in (root, *root.parents, Path(OUTPUTS).resolve()) if p.exists())
    free = shutil.disk_usage(probe).free
    status = OK if free > need else MISSING
    detail = (
        f"{free / 2**30:.0f} GiB free at {probe}; the run needs about {need / 2**30:.1f} GiB "
        f"({len(plan.untrained)} adapters with {kept} checkpoints each"
        + (f", the base {base_bytes / 2**30:.1f} GiB" if base_bytes else "")
        + ")"
        + ("" if status == OK else "; free space there, or set adapters_dir to a larger disk")
    )
    return Check("disk", status, detail)


def slurm(cfg: SubmitConfig) -> Check:
    sbatch = shutil.which(cfg.sbatch)
    if sbatch is None:
        return Check("Slurm", MISSING, f"no {cfg.sbatch} on PATH: run preflight where jobs are submitted")
    sinfo = str(Path(sbatch).with_name("sinfo"))
    try:
        done = subprocess.run([sinfo, "-h", "-o", "%P %a %D"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("Slurm", MISSING, f"{sinfo} did not answer: {exc}")
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        fix = "run preflight on the cluster's login node, where SLURM_CONF points at its controller"
        return Check("Slurm", MISSING, f"sinfo failed: {first[:160]}; {fix}")
    partitions = ", ".join(done.stdout.split("\n")[:4]).strip(", ")
    return Check("Slurm", OK, f"{sbatch}; partitions: {partitions}")


def hours(limit: str) -> float:
    days, _, clock = limit.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    h, m, s = ([0] * (3 - len(parts)) + parts) if len(parts) > 1 else (0, parts[0], 0)
    return (int(days) if days else 0) * 24 + h + m / 60 + s / 3600


def gpu_hours(cfg: SubmitConfig) -> Check:
    """The GPU-hours the jobs book (their time limits), and the hours expected from adapters this
    model already trained on the same GPU, where the manifests record one."""
    plan = steps(cfg)
    train, evaluate = cfg.resources.train, cfg.resources.eval
    eval_jobs = len(cfg.folds or [])
    booked = len(plan.untrained) * train.gpus * hours(train.time) + eval_jobs * evaluate.gpus * hours(
        evaluate.time
    )
    import torch

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    seconds: dict[str, float] = {}
    for manifest in Path(cfg.adapters_dir, cfg.model.name).glob(f"*/*/{ADAPTER_MANIFEST}"):
        m = json.loads(manifest.read_text())
        if device and m.get("device", {}).get("device") == device:
            seconds.setdefault(manifest.parent.name, m["wall_seconds"])
    known = [seconds[op] for _, op in plan.untrained if op in seconds]
    if plan.untrained and len(known) == len(plan.untrained):
        expected = (
            f"expected {sum(known) * train.gpus / 3600:.1f} GPU-h of training from runs recorded on {device}"
        )
    else:
        expected = (
            f"no {cfg.model.name} training recorded on {device or 'a GPU'} here to estimate from "
            "(benchmarks/bench_train.py measures the throughput)"
        )
    return Check("GPU-hours", NOTE, f"{booked:.0f} GPU-h booked by the jobs' time limits; {expected}")


SHAPES = {"Qwen/Qwen2.5-14B-Instruct": (48, 8, 128)}
"""Decoder layers, key/value heads and head size of the bases a profile names, from their
``config.json``, for the KV cache while that file is not on this machine yet."""
TRAIN_PEAK_GIB = {("qwen2.5-14b-instruct", 2048): 11.6}
"""Peak GPU memory of one adapter's training, measured (``benchmarks/bench_train.py
--model-shape``, docs/results.md), by base and row length."""
SERVE_OVERHEAD_GIB = 2.0
"""vLLM's own share beside the weights and the KV cache (CUDA graphs, activations), an estimate."""


def shape(model: ModelConfig) -> tuple[int, int, int] | None:
    """Layers, KV heads and head size: from the base's ``config.json`` where it is here, else the
    table above."""
    path = Path(model.path) / "config.json"
    if not path.exists() and on_hub(model) and base_cached(model):
        from huggingface_hub import try_to_load_from_cache

        path = Path(str(try_to_load_from_cache(model.path, "config.json")))
    if path.exists():
        c = json.loads(path.read_text())
        heads = c.get("num_key_value_heads", c["num_attention_heads"])
        return c["num_hidden_layers"], heads, c.get("head_dim", c["hidden_size"] // c["num_attention_heads"])
    return SHAPES.get(model.path)


def gpu_memory(cfg: SubmitConfig) -> Check:
    """What one GPU must hold: training's peak (the NF4 base, LoRA and its optimizer, activations
    at the recipe's row length) and serving's (the bf16 base and one sequence's KV cache at the
    served length, under vLLM's memory share)."""
    import torch

    length = cfg.op.max_length or 2048
    train = TRAIN_PEAK_GIB.get((cfg.model.name, length))
    weights = cfg.model.weights_gib
    dims, served = shape(cfg.model), cfg.backend.serve.max_model_len or 32768
    if weights is None or dims is None:
        return Check("GPU memory", NOTE, f"no size known for {cfg.model.name}: set weights_gib in its config")
    layers, kv_heads, head = dims
    kv = 2 * layers * kv_heads * head * 2 * served / 2**30  # keys and values, bf16
    serve = weights + kv + SERVE_OVERHEAD_GIB
    train_said = f"training about {train:.1f} GiB (measured at {length}-token rows)" if train else ""
    need = f"{train_said}{', ' if train_said else ''}serving about {serve:.1f} GiB "
    need += f"({weights:.1f} bf16 base + {kv:.1f} KV cache at {served} tokens)"
    if not torch.cuda.is_available():
        return Check("GPU memory", NOTE, f"not checked without a GPU; the jobs need {need}")
    total = torch.cuda.get_device_properties(0).total_memory / 2**30
    share = total * cfg.backend.serve.gpu_memory_utilization
    fits = serve <= share and (train is None or train <= total)
    fix = "" if fits else "; raise resources.eval.gpus (tensor parallel) or lower backend.serve.max_model_len"
    return Check("GPU memory", OK if fits else MISSING, f"{total:.0f} GiB, {share:.0f} for vLLM; {need}{fix}")


def cache_disk(cfg: SubmitConfig, base_bytes: int) -> Check:
    """Free space where a Hub base lands: the Hugging Face cache (``hf_home``), often another
    filesystem than the outputs."""
    if not on_hub(cfg.model):
        return Check("cache disk", NOTE, f"{cfg.model.path} is not a Hub id: nothing is downloaded")
    cache = hub_cache(cfg.hf_home)
    probe = next(p for p in (cache, *cache.parents) if p.exists())
    free = shutil.disk_usage(probe).free
    fits = free > base_bytes
    fix = "" if fits else "; set hf_home=<a larger disk that every node sees>"
    detail = f"{free / 2**30:.0f} GiB free at {probe} for the base's {base_bytes / 2**30:.1f} GiB{fix}"
    return Check("cache disk", OK if fits else MISSING, detail)


def trajectories(cfg: SubmitConfig) -> Check:
    """The annotations and commit exports of every fold the run scores, found where the run looks."""
    sources = cfg.sources()
    lost = [f for f in cfg.folds or [] if not (sources.annotation(f).exists() and sources.export(f).exists())]
    if lost:
        fix = "memops export-commits writes an export; memops build-data validate=true lists every problem"
        return Check("trajectories", MISSING, f"no annotation or export for {', '.join(lost)}: {fix}")
    return Check("trajectories", OK, f"{len(cfg.folds or [])} folds, each with its annotation and export")


def attention(cfg: SubmitConfig) -> Check:
    """The attention kernel the recipe trains with: ``varlen`` needs torch's flash-attention
    varlen kernel, which only CUDA runs."""
    import torch

    if cfg.packed_attention != "varlen":
        return Check("attention", OK, f"packed_attention={cfg.packed_attention}")
    try:
        from torch.nn.attention.varlen import varlen_attn  # noqa: F401
    except ImportError:
        fix = (
            "install a torch with torch.nn.attention.varlen (2.9 or later), or set packed_attention=segments"
        )
        return Check("attention", MISSING, f"torch {torch.__version__} has no varlen attention: {fix}")
    if not torch.cuda.is_available():
        return Check(
            "attention", NOTE, "packed_attention=varlen is in torch here; its kernel runs on the GPU nodes"
        )
    return Check(
        "attention", OK, f"packed_attention=varlen: torch {torch.__version__}'s flash-attention kernel"
    )


def preflight(cfg: SubmitConfig) -> list[Check]:
    rows = cuda(cfg)
    rows += [gpu_memory(cfg), attention(cfg), serving(cfg)]
    weights, base_bytes = base_weights(cfg.model, cfg.hf_home)
    rows += [
        weights,
        cache_disk(cfg, base_bytes),
        disk(cfg, 0),
        trajectories(cfg),
        slurm(cfg),
        gpu_hours(cfg),
    ]
    return rows


def table(rows: list[Check]) -> str:
    width = max(len(r.name) for r in rows)
    return "\n".join(f"{r.name:<{width}}  {r.status:<7}  {r.detail}" for r in rows)
