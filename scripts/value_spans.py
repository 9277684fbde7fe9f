"""How far stage 2's values are from what their notes hold (issue 28), on the held-out folds.

    python scripts/value_spans.py [--config-name smollm2-cpu] [override ...]

The overrides are those of scripts/loo.py (``model.path``, ``adapters_dir``, ``runs_dir``,
``run``, ``folds``); the run's ``extract-stages`` adapter is read. For every gold claim, with
its gold pair given so that selection does not enter:

- ``ceiling``: some run of the note's words (``note_spans``) matches the gold value at the
  value level (``eval.metrics.value_match``): the most any decoder that copies one run of the
  note can reach;
- ``map``: the run the adapter finds most likely as the stage-2 answer's value, read
  teacher-forced (the summed log-probability of its tokens and the closing quote): decoding
  constrained to the note, searched exactly instead of greedily;
- ``greedy``: the value of the adapter's own stage-2 answer under its grammar, as the harness
  decodes it.

One line per claim goes to ``<runs_dir>/<run>/value_spans.jsonl``, flushed as it is scored,
and a rerun skips the claims already there. The table prints at the end. On the hf backend,
whose probes read a note's thousand or so runs in a few packed forward passes.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from tqdm import tqdm

from core.config import compose_config
from core.files import write_atomic
from core.layout import run_dir
from core.records import MAX_VALUE_CHARS, Catalog, ExtractedClaim, Note
from data.replay import load_trajectory
from eval.config import LooConfig
from eval.loo import adapters_of
from eval.metrics import bootstrap_ci, value_match
from eval.report import cell
from operators.backends import Probe
from operators.backends.hf import HFBackend
from operators.learned import LearnedOperators
from operators.prompts import fill_messages
from operators.registry import STAGES_ADAPTER

LONGEST_SPAN = 12
"""Words in the longest run considered: gold values average 5.4 words, and few pass 12."""
COLUMNS = ("ceiling", "map", "greedy")


def note_spans(note: Note) -> list[str]:
    """Every run of 1 to ``LONGEST_SPAN`` words, within one paragraph of the note or its title,
    trimmed of edge punctuation and at most ``MAX_VALUE_CHARS`` long (the grammar's cap on a
    value). The paragraph of touched-file names is left out: no gold value comes from it."""
    paragraphs = [note.title, *(p for p in note.text.split("\n\n") if not p.startswith("Touched files"))]
    spans: set[str] = set()
    for paragraph in paragraphs:
        words = paragraph.split()
        for i in range(len(words)):
            for j in range(i + 1, min(len(words), i + LONGEST_SPAN) + 1):
                span = " ".join(words[i:j]).strip(".,;:")
                if span and len(span) <= MAX_VALUE_CHARS:
                    spans.add(span)
    return sorted(spans)


def answer_start(claim: ExtractedClaim) -> str:
    """The stage-2 answer up to its value's opening quote, as the schema's key order writes it."""
    return f'{{"entity":{json.dumps(claim.entity)},"slot":{json.dumps(claim.slot)},"value":"'


def likeliest_span(backend: HFBackend, note: Note, catalog: Catalog, claim: ExtractedClaim) -> str | None:
    """The note run with the highest probability as the value of ``claim``'s pair: each run is
    an option of one probe, the stage-2 answer begun up to the value and closed after it."""
    spans = note_spans(note)
    options = tuple(answer_start(claim) + json.dumps(s, ensure_ascii=False)[1:] for s in spans)
    odds = backend.probe([Probe(STAGES_ADAPTER, fill_messages(note, catalog, claim.pair), options)])[0]
    return None if odds.refused else spans[max(range(len(spans)), key=odds.probs.__getitem__)]


def written(out: Path) -> dict[tuple[str, str, int], dict]:
    """The rows a run has written, by (fold, note, claim index). A last line cut off mid-write
    (a run killed there) is dropped and the file cut back to the lines before it; any other
    line that does not parse is an error naming it."""
    if not out.exists():
        return {}
    lines = out.read_text().splitlines()
    rows = {}
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            if number < len(lines):
                said = f"{out}:{number}: not a JSON row ({e.msg}); remove the file to start over"
                raise SystemExit(said) from e
            write_atomic(out, "".join(f"{kept}\n" for kept in lines[:-1]))
            break
        rows[row["fold"], row["note"], row["claim"]] = row
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
    backends: dict[Path, HFBackend] = {}
    with out.open("a") as sink:
        for key, note, catalog, claim in tqdm(todo, desc="claims", disable=not cfg.progress):
            path = adapters_of(cfg, key[0]) / STAGES_ADAPTER
            if path not in backends:
                backends[path] = HFBackend.load(cfg.model, {STAGES_ADAPTER: path})
            backend = backends[path]
            fill = LearnedOperators(backend).fill([(note, catalog, claim.pair)], STAGES_ADAPTER)[0]
            greedy = fill.output.value if isinstance(fill.output, ExtractedClaim) else None
            span = likeliest_span(backend, note, catalog, claim)
            row = {
                "fold": key[0],
                "note": note.id,
                "claim": key[2],
                "pair": claim.pair,
                "gold": claim.value,
                "map_value": span,
                "greedy_value": greedy,
                "ceiling": any(value_match(s, claim.value) for s in note_spans(note)),
                "map": value_match(span, claim.value),
                "greedy": value_match(greedy, claim.value),
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
    parser.add_argument("overrides", nargs="*", help="scripts/loo.py overrides: runs_dir=... run=...")
    args = parser.parse_args()
    cfg: LooConfig = compose_config(args.config_name, args.overrides)
    if cfg.backend.kind != "hf":
        parser.error(f"backend={cfg.backend.kind}: the study runs on hf (a thousand-option probe per claim)")
    out = run_dir(cfg.runs_dir, cfg.run) / "value_spans.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    print(table(study(cfg, out)))
    print(f"per claim: {out}")


if __name__ == "__main__":
    main()
