"""Where a vLLM pass spends its time, from vLLM's own counters.

One fold's notes go through extraction on a LoRA adapter served by a real server (started from
``.venv-serve``), once per server setting given. Before and after, the bench reads the server's
``/metrics``; while the pass runs it samples the gauges twice a second. It prints, per setting:

- wall seconds and requests;
- prompt tokens, and how many of them the prefix cache answered (not computed again);
- the requests' summed prefill, decode and queue seconds (vLLM's per-request histograms);
- request-seconds spent ``deferred``: waiting on their grammar's compilation.

    python benchmarks/bench_serve.py                       # untrained r16 adapters, all seven projections
    python benchmarks/bench_serve.py --adapters outputs/bench/heldout/adapters/smollm2-135m-instruct/synthetic
    python benchmarks/bench_serve.py --settings "caching=" "no caching=--no-enable-prefix-caching"
    python benchmarks/bench_serve.py --settings "vLLM's binding=" "every core=cpu_reserved_cores=0"

A setting is a name, then ``=``, then server arguments; a leading ``field=value`` that names a
``ServeConfig`` field sets that field instead (its environment, for the CPU thread settings).

Untrained adapters cost what trained ones do: the LoRA kernels' work does not depend on the
weights' values, only on the rank and the projections they cover.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
import shutil
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from memops.core.models import ModelConfig, model_config
from memops.core.sources import ANNOTATIONS, EXPORTS, Sources
from memops.data.manifest import write_manifest
from memops.data.trajectory import load_trajectory
from memops.operators.backends.serve import ServeConfig, VLLMServer
from memops.operators.backends.vllm import VLLMBackend
from memops.operators.learned import EXTRACT_MODES, LearnedOperators, mode_adapter
from memops.operators.registry import EXTRACT, STAGES_ADAPTER
from memops.train.builds import ensure_model
from memops.train.recipe import lora_config

SAMPLE = re.compile(r"^(vllm:[a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$")
COUNTERS = {
    "prompt tokens": "vllm:prompt_tokens_total",
    "cached": "vllm:prompt_tokens_cached_total",
    "generated": "vllm:generation_tokens_total",
    "prefill s": "vllm:request_prefill_time_seconds_sum",
    "decode s": "vllm:request_decode_time_seconds_sum",
    "queue s": "vllm:request_queue_time_seconds_sum",
}


def metrics(root: str) -> dict[str, float]:
    """Every ``vllm:`` sample, summed over labels except a waiting reason, which stays apart."""
    import httpx

    out: dict[str, float] = defaultdict(float)
    for line in httpx.get(f"{root}/metrics", timeout=10.0).text.splitlines():
        if m := SAMPLE.match(line):
            name, labels, value = m.groups()
            if reason := re.search(r'reason="([a-z_]+)"', labels or ""):
                name = f"{name}[{reason.group(1)}]"
            out[name] += float(value)
    return out


class Gauges(threading.Thread):
    """Integrates the deferred-request gauge over time while a pass runs."""

    def __init__(self, root: str, every_s: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.root, self.every_s = root, every_s
        self.deferred_s = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.every_s):
            deferred = metrics(self.root).get("vllm:num_requests_waiting_by_reason[deferred]", 0.0)
            self.deferred_s += deferred * self.every_s


def untrained_adapters(model: ModelConfig, out: Path) -> dict[str, Path]:
    """One LoRA adapter as train.py would save it (the model's rank, alpha and projections),
    straight after initialisation, under the names extraction asks for."""
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model.path, use_safetensors=True, trust_remote_code=False)
    first, *others = (out / name for name in (EXTRACT.name, STAGES_ADAPTER))
    get_peft_model(base, lora_config(model.lora)).save_pretrained(str(first))
    write_manifest(first, untrained="saved straight after initialisation by benchmarks/bench_serve.py")
    for folder in others:
        shutil.copytree(first, folder)
    return {folder.name: folder for folder in (first, *others)}


def serve_setting(cfg: ServeConfig, words: list[str]) -> ServeConfig:
    """``cfg`` with a setting's leading ``field=value`` words applied (typed as the field's
    default, or int where it is None); the rest are the server's extra arguments."""
    fields = {f.name: f for f in dataclasses.fields(ServeConfig)}
    changes: dict[str, object] = {}
    while words and (key := words[0].partition("=")[0]) in fields and "=" in words[0]:
        value = words.pop(0).partition("=")[2]
        default = fields[key].default
        changes[key] = int(value) if default is None else type(default)(value)
    return dataclasses.replace(cfg, **changes, extra_args=words)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-instruct", help="a config name in configs/model/")
    ap.add_argument(
        "--adapters", help="a folder with the mode's adapter, extract/ or extract-stages/ (default untrained)"
    )
    ap.add_argument("--fold", default="patch-guardrails")
    ap.add_argument("--mode", choices=EXTRACT_MODES, default="two-stage-trained")
    ap.add_argument("--notes", type=int, default=0, help="notes per pass (0: all of the fold's)")
    ap.add_argument("--passes", type=int, default=1, help="passes on each server, each on the next notes")
    ap.add_argument(
        "--settings",
        nargs="+",
        default=["vLLM defaults="],
        help='"name=extra server arguments", one server each',
    )
    args = ap.parse_args()

    model = model_config(args.model)
    ensure_model(model)
    episode = load_trajectory(args.fold, Sources.of(ANNOTATIONS, EXPORTS))
    notes = [(s.note(), episode.catalog) for s in episode.sessions]
    size = args.notes or len(notes)
    print(f"{args.model}, {args.fold}: {args.passes} pass(es) of {size} notes, extraction {args.mode}")
    header = ["setting", "wall s", "requests", *COUNTERS, "deferred s"]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        used = mode_adapter(args.mode)
        if args.adapters:
            dirs = {used: Path(args.adapters) / used}
        else:
            dirs = {used: untrained_adapters(model, Path(scratch) / "adapters")[used]}
        for setting in args.settings:
            name, _, extra = setting.partition("=")
            cfg = serve_setting(ServeConfig(base=model.path, dtype=model.compute_dtype), shlex.split(extra))
            with VLLMServer(cfg, dirs, Path(scratch) / f"serve-{len(rows)}.log") as server:
                root = server.base_url.removesuffix("/v1")
                client = VLLMBackend(server.base_url, server.api_key, base_model=server.served_name)
                for n in range(args.passes):
                    before, gauges = metrics(root), Gauges(root)
                    gauges.start()
                    began = time.perf_counter()
                    ops = LearnedOperators(client)
                    ops.extract(notes[n * size : (n + 1) * size], args.mode)
                    wall = time.perf_counter() - began
                    gauges.done.set()
                    gauges.join()
                    after = metrics(root)
                    delta = [after.get(k, 0.0) - before.get(k, 0.0) for k in COUNTERS.values()]
                    rows.append(
                        [f"{name}, pass {n + 1}", wall, sum(ops.calls.values()), *delta, gauges.deferred_s]
                    )
                    shown = zip(header[1:], rows[-1][1:], strict=True)
                    print("  " + ", ".join(f"{h} {v:.0f}" for h, v in shown), flush=True)

    print("\n" + " | ".join(header))
    for row in rows:
        print(" | ".join(f"{v:,.0f}" if isinstance(v, float) else str(v) for v in row))


if __name__ == "__main__":
    main()
