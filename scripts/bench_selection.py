"""How well stage 1 of the two-stage extractor ranks a held-out note's catalog pairs, read two
ways from one ``extract-stages`` adapter (issue 28), on the hf backend:

- ``yes/no``: each pair asked on its own ("does this note state the value of entity.slot?"),
  scored by its "yes": the probe two-stage-scored sends;
- ``list``: the stage-1 prompt once per note, each pair scored by the probability that the
  answer is that pair alone (``{"pairs":["entity.slot"]}``, every token teacher-forced), beside
  the empty answer: what the trained selection itself believes.

    python scripts/bench_selection.py --adapter outputs/adapters/<model>/synthetic/extract-stages
        [--datasets outputs/datasets] [--model smollm2-135m-instruct] [--model-path DIR]

For each way, pooled over the trajectories' test notes: the pair AUC, how often the top pair is
stated, and precision and recall at several thresholds. No threshold here is chosen on these
notes: the table shows the whole curve.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from core.layout import DATASETS
from core.models import model_config
from core.sources import SHIPPED
from eval.harness import load_test
from eval.report import pair_auc
from operators.backends import Probe
from operators.backends.hf import HFBackend
from operators.prompts import SCORE_OPTIONS, SELECT_TASK, catalog_pairs, score_task, with_task
from operators.registry import EXTRACT, STAGES_ADAPTER
from operators.schemas import Selection
from train.builds import ensure_model

THRESHOLDS = (0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01)


def list_probe(prompt: list[dict[str, str]], pairs: list[str]) -> Probe:
    """Every one-pair answer of the stage-1 prompt, and the empty one, as the adapter was trained
    to write them (``Selection`` dumped as the stage examples are)."""
    answers = [Selection(pairs=one).model_dump_json() for one in [*([p] for p in pairs), []]]
    return Probe(STAGES_ADAPTER, with_task(prompt, SELECT_TASK), tuple(answers))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--adapter", type=Path, required=True, help="an extract-stages adapter folder")
    ap.add_argument("--datasets", type=Path, default=Path(DATASETS))
    ap.add_argument("--model", default="smollm2-135m-instruct", help="a config name in configs/model/")
    ap.add_argument("--model-path", help="the base's folder, if not the config's")
    args = ap.parse_args()

    model = model_config(args.model)
    model = replace(model, path=args.model_path) if args.model_path else model
    ensure_model(model)
    backend = HFBackend.load(model, {STAGES_ADAPTER: args.adapter})
    notes = [row for fold in SHIPPED for row in load_test(args.datasets, fold, EXTRACT.name)]
    stated = [
        {f"{c['entity']}.{c['slot']}" for c in json.loads(row["completion"][0]["content"])["claims"]}
        for row in notes
    ]
    catalogs = [catalog_pairs(row["prompt"]) for row in notes]
    print(f"{args.model} + {args.adapter}: {len(notes)} test notes, {sum(map(len, catalogs))} pairs")

    scores: dict[str, list[list[float]]] = {}
    began = time.perf_counter()
    asks = [
        Probe(STAGES_ADAPTER, with_task(row["prompt"], score_task(p)), SCORE_OPTIONS)
        for row, pairs in zip(notes, catalogs, strict=True)
        for p in pairs
    ]
    read = iter(backend.probe(asks))
    scores["yes/no"] = [[next(read).probs[0] for _ in pairs] for pairs in catalogs]
    seconds = {"yes/no": time.perf_counter() - began}
    began = time.perf_counter()
    lists = backend.probe([list_probe(r["prompt"], pairs) for r, pairs in zip(notes, catalogs, strict=True)])
    scores["list"] = [list(odds.probs[:-1]) for odds in lists]
    seconds["list"] = time.perf_counter() - began

    positives = sum(len(s & set(pairs)) for s, pairs in zip(stated, catalogs, strict=True))
    for way, by_note in scores.items():
        flat = [
            (q, p in gold)
            for qs, pairs, gold in zip(by_note, catalogs, stated, strict=True)
            for q, p in zip(qs, pairs, strict=True)
        ]
        auc = pair_auc([q for q, s in flat if s], [q for q, s in flat if not s])
        top = sum(
            pairs[max(range(len(pairs)), key=qs.__getitem__)] in gold
            for qs, pairs, gold in zip(by_note, catalogs, stated, strict=True)
        )
        print(f"\n{way}: {seconds[way]:.0f} s; pair AUC {auc:.2f}; top pair stated in {top}/{len(notes)}")
        print(f"{'threshold':>10} {'kept':>6} {'precision':>10} {'recall':>8}")
        for t in THRESHOLDS:
            kept = [s for q, s in flat if q >= t]
            precision = sum(kept) / len(kept) if kept else 0.0
            print(f"{t:>10} {len(kept):>6} {precision:>10.2f} {sum(kept) / positives:>8.2f}")


if __name__ == "__main__":
    main()
