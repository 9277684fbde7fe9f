"""How far stage 2's values are from what their notes hold, on the held-out folds.

    python benchmarks/value_spans.py [--config-name smollm2-cpu] [override ...]

The overrides are those of memops loo (``model.path``, ``adapters_dir``, ``runs_dir``,
``run``, ``folds``); the run's ``extract-stages`` adapter is read. For every gold claim, with
its gold pair given so that selection does not enter:

- ``ceiling``: some run of the note's words (``core.values.runs``) matches the gold value at the
  value level (``eval.metrics.value_match``): the most any decoder that copies one run of the
  note can reach;
- ``map``: the run the adapter finds most likely as the stage-2 answer's value, read
  teacher-forced (the summed log-probability of its tokens and the closing quote): decoding
  constrained to the note, searched exactly instead of greedily;
- ``mbr``: the run with the highest expected token F1 against the value under the adapter's
  distribution over the runs (minimum Bayes risk with the metric's own similarity): the mode can
  be an outlier of short runs while most of the probability sits on overlapping longer ones;
- ``greedy``: the value of the adapter's own stage-2 answer under its grammar, as the harness
  decodes it (held to the same runs, token by token).

One line per claim goes to ``<runs_dir>/<run>/value_spans.jsonl``, flushed as it is scored,
and a rerun skips the claims already there. The table prints at the end. On the hf backend,
whose probes read a note's thousand or so runs in a few packed forward passes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from pydantic_core import to_json
from tqdm import tqdm

from memops import schemas
from memops.core.config import compose_config
from memops.core.layout import run_dir
from memops.core.records import Catalog, ExtractedClaim, Note
from memops.core.values import runs
from memops.data.trajectory import load_trajectory
from memops.eval.config import LooConfig
from memops.eval.loo import adapters_of
from memops.eval.metrics import bootstrap_ci, token_f1, value_match
from memops.eval.scored import RecordsError, json_lines, mend_tail
from memops.eval.tables import cell
from memops.operators.backends.hf import HFBackend
from memops.operators.learned import LearnedOperators
from memops.operators.prompts import fill_messages
from memops.operators.registry import STAGES_ADAPTER

COLUMNS = ("ceiling", "map", "mbr", "greedy")
EVIDENCE = 200
"""The likeliest runs that the risk of each run is taken against (renormalized): their share
of the probability is near all of it, and the pairwise F1s stay a fraction of a probe's time."""
KEPT = 20
"""The likeliest runs written per claim with their probabilities, for reading without a rerun."""


def answer_start(claim: ExtractedClaim) -> str:
    """The stage-2 answer up to its value's opening quote, in the JSON the training answers
    were written in (pydantic's, in the schema's key order)."""
    text = claim.model_copy(update={"value": ""}).model_dump_json()
    return text[: text.index('"value":"') + len('"value":"')]


def span_odds(
    ops: LearnedOperators, note: Note, catalog: Catalog, claim: ExtractedClaim, spans: list[str]
) -> dict[str, float]:
    """The probability of each run of ``spans`` as the value of ``claim``'s pair, likeliest
    first (empty if the backend refused): each run is an option of one probe, the stage-2
    answer begun up to the value and closed after it."""
    start = answer_start(claim)
    options = tuple(start + to_json(s).decode()[1:] for s in spans)
    [odds] = ops.probe("spans", [(STAGES_ADAPTER, fill_messages(note, catalog, claim.pair), options)])
    if odds.refused:
        return {}
    return dict(sorted(zip(spans, odds.probs, strict=True), key=lambda sp: -sp[1]))


def least_risk(odds: dict[str, float]) -> str | None:
    """The run with the highest expected token F1 against the ``EVIDENCE`` likeliest runs,
    weighted by their renormalized probabilities; every run is a candidate."""
    evidence = list(odds.items())[:EVIDENCE]
    mass = sum(p for _, p in evidence)
    gain = {s: sum(p * token_f1(s, e) for e, p in evidence) / mass for s in odds}
    return max(gain, key=gain.__getitem__, default=None)


def written(out: Path) -> dict[tuple[str, str, int], dict]:
    """The rows a run has written, by (fold, note, claim index); the file is then mended so that
    a row cut off mid-write (a run killed there) is gone (``eval.scored``)."""
    rows = {(row["fold"], row["note"], row["claim"]): row for _, row in json_lines(out)}
    mend_tail(out, len(rows))
    return rows


def study(cfg: LooConfig, out: Path) -> list[dict]:
    done = written(out)
    claims = []
    for fold in cfg.folds:
        episode = load_trajectory(fold, cfg.sources())
        for session in episode.sessions:
            note = session.note()
            claims += [((fold, note.id, k), note, episode.catalog, c) for k, c in enumerate(session.claims)]
    todo = [c for c in claims if c[0] not in done]
    operators: dict[Path, LearnedOperators] = {}  # one model per adapter, loaded when first needed
    with out.open("a") as sink:
        for key, note, catalog, claim in tqdm(todo, desc="claims", disable=not cfg.progress):
            path = adapters_of(cfg, key[0])[STAGES_ADAPTER]
            if path not in operators:
                operators[path] = LearnedOperators(HFBackend.load(cfg.model, {STAGES_ADAPTER: path}))
            ops = operators[path]
            fill = ops.fill([(note, catalog, claim.pair)], STAGES_ADAPTER)[0]
            greedy = fill.output.value if isinstance(fill.output, ExtractedClaim) else None
            spans = runs(note.paragraphs())
            odds = span_odds(ops, note, catalog, claim, spans)
            span, central = next(iter(odds), None), least_risk(odds)
            row = {
                "fold": key[0],
                "note": note.id,
                "claim": key[2],
                "pair": claim.pair,
                "gold": claim.value,
                "map_value": span,
                "mbr_value": central,
                "greedy_value": greedy,
                "ceiling": any(value_match(s, claim.value) for s in spans),
                "map": value_match(span, claim.value),
                "mbr": value_match(central, claim.value),
                "greedy": value_match(greedy, claim.value),
                "likeliest": {s: round(p, 6) for s, p in list(odds.items())[:KEPT]},
            }
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            done[key] = row
    return [done[key] for key, *_ in claims]


def table(rows: list[dict]) -> str:
    lines = ["| values matched | claims | share [95% CI] | words |", "| --- | ---: | --- | ---: |"]
    for column in COLUMNS:
        hits = [float(r[column]) for r in rows]
        said = [r[f"{column}_value"] for r in rows if column != "ceiling" and r[f"{column}_value"]]
        words = f"{sum(len(v.split()) for v in said) / len(said):.1f}" if said else "-"
        lines.append(f"| {column} | {int(sum(hits))}/{len(rows)} | {cell(bootstrap_ci(hits))} | {words} |")
    by_fold = Counter(r["fold"] for r in rows)
    lines.append("")
    lines.append("claims per fold: " + ", ".join(f"{f} {n}" for f, n in by_fold.items()))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config-name", default="smollm2-cpu")
    parser.add_argument("overrides", nargs="*", help="memops loo overrides: runs_dir=... run=...")
    args = parser.parse_args()
    schemas.register()
    cfg: LooConfig = compose_config(args.config_name, args.overrides)
    if cfg.backend.kind != "hf":
        parser.error(f"backend={cfg.backend.kind}: the study runs on hf (a thousand-option probe per claim)")
    out = run_dir(cfg.runs_dir, cfg.run) / "value_spans.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        rows = study(cfg, out)
    except RecordsError as e:  # a row edited by hand: named, and the file left as it is
        sys.exit(f"{e}; remove the file to start over")
    print(table(rows))
    print(f"per claim: {out}")


if __name__ == "__main__":
    main()
