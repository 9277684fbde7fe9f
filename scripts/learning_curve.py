"""Held-out score against training steps: every checkpoint of one compare or update adapter,
scored on the pooled test examples of the five trajectories (or --folds) with the hf backend.

    python scripts/learning_curve.py outputs/curves/smollm2-135m-instruct/synthetic/compare

Step 0 is the base model without an adapter (the prompted baseline). Train the adapter with
``save_total_limit=null`` to keep every checkpoint. The op and the model, as trained, come from
the adapter's ``resolved_config.json``; the curve goes to ``learning_curve.json`` and
``learning_curve.png`` beside it. Exact match is the LOO harness's own score
(``eval/harness.py``), with bootstrap CIs, and per gold label (which relations a short budget
has not learned yet). ``--steps 80 160`` rescores only those steps in the curve on disk.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from omegaconf import OmegaConf

from core.models import ModelConfig
from data.sources import ANNOTATIONS, EXPORTS, Sources
from eval.harness import decision_records, load_test
from eval.metrics import bootstrap_ci
from operators.backends.hf import HFBackend
from operators.learned import LearnedOperators
from operators.registry import DECISIONS, OPERATORS


def checkpoints(adapter: Path) -> dict[int, Path | None]:
    """Step -> adapter directory; step 0 is the bare base."""
    found = {int(p.name.rsplit("-", 1)[1]): p for p in (adapter / "checkpoints").glob("checkpoint-*")}
    manifest = adapter / "manifest.json"
    if manifest.exists():
        found.setdefault(json.loads(manifest.read_text())["global_step"], adapter)
    return {0: None, **dict(sorted(found.items()))}


def plot(curve: list[dict], op: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [p["step"] for p in curve]
    means = [p["mean"] for p in curve]
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.fill_between(steps, [p["ci"][0] for p in curve], [p["ci"][1] for p in curve], alpha=0.2)
    ax.plot(steps, means, marker="o")
    ax.axhline(0.9, color="grey", linestyle="--", linewidth=1, label="target 0.90")
    ax.set(xlabel="training step", ylabel=f"{op} exact match (held out)", ylim=(0, 1.02))
    ax.set_title(f"{op}: held-out exact match, five trajectories pooled (95% CI)", fontsize=9)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adapter", type=Path, help="an adapter directory with checkpoints/ inside")
    parser.add_argument("--datasets-dir", type=Path, default=Path("outputs/datasets"))
    shipped = Sources.of(ANNOTATIONS, EXPORTS).names()
    parser.add_argument("--folds", nargs="+", choices=shipped, default=shipped)
    parser.add_argument("--steps", type=int, nargs="+", help="score only these steps (0: the base)")
    args = parser.parse_args()
    resolved = args.adapter / "resolved_config.json"
    if not resolved.exists():
        parser.error(f"no {resolved}: not an adapter directory train.py wrote")
    trained = json.loads(resolved.read_text())
    op = trained["op"]["name"]
    if op not in DECISIONS:
        parser.error(f"{args.adapter} is a {op} adapter; the curve scores a decision: {', '.join(DECISIONS)}")
    model = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ModelConfig), trained["model"]))
    tests = {fold: load_test(args.datasets_dir, fold, op) for fold in args.folds}

    curve = []
    for step, path in checkpoints(args.adapter).items():
        if args.steps and step not in args.steps:
            continue
        backend = HFBackend.load(model, {op: path} if path else {})
        ops = LearnedOperators(backend, adapters=path is not None)
        records = [r for f, ex in tests.items() for r in decision_records(f, op, "learned", ex, ops)]
        by_label: dict[str, list[int]] = {}
        for r in records:
            right_n = by_label.setdefault(OPERATORS[op].output(**r["gold"]).label, [0, 0])
            right_n[0] += int(r["score"])
            right_n[1] += 1
        point = {
            "step": step,
            "adapter": str(path) if path else None,
            **bootstrap_ci([r["score"] for r in records]),
            "by_label": dict(sorted(by_label.items())),
        }
        curve.append(point)
        lo, hi = point["ci"]
        print(f"step {step:>5}: {op} exact match {point['mean']:.3f} [{lo:.3f}, {hi:.3f}] (n={point['n']})")
        print("             " + ", ".join(f"{k} {right}/{n}" for k, (right, n) in point["by_label"].items()))
    out = args.adapter / "learning_curve.json"
    if args.steps and out.exists():  # a partial rescore replaces its steps in the curve on disk
        kept = [p for p in json.loads(out.read_text()) if p["step"] not in args.steps]
        curve = sorted([*kept, *curve], key=lambda p: p["step"])
    out.write_text(json.dumps(curve, indent=2) + "\n")
    plot(curve, op, args.adapter / "learning_curve.png")
    print(f"wrote {args.adapter / 'learning_curve.json'} and learning_curve.png")


if __name__ == "__main__":
    main()
