"""Two tables of the dataset card: how much the training data look like real project state, and
what a decision label gives away on its own.

- ``realism``: per source (the synthetic scenarios, then each trajectory), the shape of names,
  values, notes and times that a model trained on one and tested on the other meets, and the
  label mix of the decision operators, side by side.
- ``one_input``: how well each decision label is guessed from one input alone (one claim of a
  compare pair, the entry or the claim of an update) or from surface features of the pair, by
  a naive Bayes classifier fit on the synthetic train split and scored on the synthetic
  validation split and on the trajectories. The real decision needs both inputs (``add`` aside,
  which the rule decides from the entry alone), so a label guessed well from one is a template
  artifact of the generator.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from memops.core.sessions import Episode, is_real
from memops.memory import norm
from memops.operators.examples import Example
from memops.operators.prompts import INCOMING_HEADER, SECOND_HEADER

WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return WORD.findall(norm(text))


def _share(part: float, whole: float) -> float | None:
    return round(part / whole, 3) if whole else None


def _near_misses(episode: Episode) -> tuple[int, int]:
    """Pairs of distinct keys of one episode that share their entity or a word of their slot
    name (``retry`` and ``retry_backoff``), and all pairs."""
    keys = sorted({(c.entity, c.slot) for s in episode.sessions for c in s.claims})
    pairs = list(itertools.combinations(keys, 2))
    near = sum(a[0] == b[0] or bool(set(a[1].split("_")) & set(b[1].split("_"))) for a, b in pairs)
    return near, len(pairs)


def source_realism(episodes: list[Episode], labels: dict[str, list[str]]) -> dict[str, Any]:
    """The realism row of one source: its episodes, and its decision labels per operator."""
    claims = [(s, c) for e in episodes for s in e.sessions for c in s.claims]
    lengths = [len(c.value.split()) for _, c in claims]
    overlap = []
    for s, c in claims:
        note, value = set(words(s.text)), words(c.value)
        overlap.append(sum(w in note for w in value) / len(value) if value else 1.0)
    near = [_near_misses(e) for e in episodes]
    steps = [(a.at, b.at) for e in episodes for a, b in itertools.pairwise(e.sessions)]
    notes = [s for e in episodes for s in e.sessions]
    return {
        "episodes": len(episodes),
        "claims": len(claims),
        "catalog_pairs": len({p for e in episodes for p in e.catalog.pairs()}),
        "near_miss_key_pairs": _share(sum(n for n, _ in near), sum(t for _, t in near)),
        "value_words_mean": round(sum(lengths) / len(lengths), 2) if lengths else None,
        "value_words_max": max(lengths, default=None),
        "value_verbatim_in_note": _share(sum(norm(c.value) in norm(s.text) for s, c in claims), len(claims)),
        "value_token_overlap": round(sum(overlap) / len(overlap), 3) if overlap else None,
        "note_words_mean": round(sum(len(words(s.text)) for s in notes) / len(notes), 1) if notes else None,
        "notes_with_files": _share(sum(bool(s.files) for s in notes), len(notes)),
        "utc_offsets": len({s.at.utcoffset() for s in notes}),
        "time_string_order_inverted": _share(
            sum(a.isoformat() > b.isoformat() for a, b in steps), len(steps)
        ),
        **{
            op: {k: _share(v, len(found)) for k, v in sorted(Counter(found).items())}
            for op, found in labels.items()
        },
    }


def realism(
    episodes: list[Episode], examples: Callable[[str, list[Episode]], list[Example]], ops: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """Source -> its realism row: ``synthetic`` (every scenario), then each trajectory."""
    synthetic = [e for e in episodes if e.source == "synthetic"]
    groups = {"synthetic": synthetic} if synthetic else {}
    groups |= {e.id: [e] for e in episodes if is_real(e.source)}
    ops = tuple(ops)
    return {
        name: source_realism(group, {op: [r["label"] for r in examples(op, group)] for op in ops})
        for name, group in groups.items()
    }


class NaiveBayes:
    """Multinomial naive Bayes over tokens with add-one smoothing: small, exact and seedless."""

    def __init__(self, rows: list[tuple[list[str], str]]) -> None:
        self.prior = Counter(label for _, label in rows)
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        for tokens, label in rows:
            self.counts[label].update(tokens)
        self.vocab = {t for c in self.counts.values() for t in c}
        self.totals = {label: sum(c.values()) for label, c in self.counts.items()}

    def predict(self, tokens: list[str]) -> str:
        n, v = sum(self.prior.values()), len(self.vocab) + 1

        def score(label: str) -> float:
            total, counts = self.totals[label], self.counts[label]
            return math.log(self.prior[label] / n) + sum(
                math.log((counts[t] + 1) / (total + v)) for t in tokens if t in self.vocab
            )

        return max(sorted(self.prior), key=score)


def _user(example: Example) -> str:
    return next(m["content"] for m in example["prompt"] if m["role"] == "user")


def _form(first: str, second: str) -> str:
    """How the second value's spelling relates to the first's, apart from what it says."""
    if first == second:
        return "same"
    if first.lower() == second.lower():
        return "case"
    if norm(first) == norm(second):
        return "padding-or-punctuation"
    return "other"


def _compare_surface(example: Example) -> list[str]:
    pair = json.loads(example["inputs"])
    first, second = pair["first"], pair["second"]
    return [f"entity:{first['entity'] == second['entity']}", f"form:{_form(first['value'], second['value'])}"]


def _update_surface(example: Example) -> list[str]:
    entry, claim = _user(example).split(INCOMING_HEADER)
    value = claim.splitlines()[0].split(" = ", 1)[-1]
    return [f"contested:{entry.count('contested:')}", f"value-words:{min(len(value.split()), 8)}"]


VIEWS: dict[str, dict[str, Callable[[Example], list[str]]]] = {
    "compare": {
        "first claim alone": lambda ex: words(_user(ex).split(SECOND_HEADER)[0]),
        "second claim alone": lambda ex: words(_user(ex).split(SECOND_HEADER)[1]),
        "surface (first token of the keys, value spelling)": _compare_surface,
    },
    "update": {
        "entry alone": lambda ex: words(_user(ex).split(INCOMING_HEADER)[0]),
        "claim alone": lambda ex: words(_user(ex).split(INCOMING_HEADER)[1]),
        "surface (contested count, value length)": _update_surface,
    },
}
"""The one-input views of each decision operator: what the classifier may read of an example."""


def _scored(model: NaiveBayes, view: Callable[[Example], list[str]], rows: list[Example]) -> dict[str, Any]:
    hits: Counter[str] = Counter()
    seen = Counter(r["label"] for r in rows)
    for r in rows:
        hits[r["label"]] += model.predict(view(r)) == r["label"]
    majority = max(model.prior, key=lambda label: (model.prior[label], label))
    return {
        "n": len(rows),
        "accuracy": _share(sum(hits.values()), len(rows)),
        "majority_label_accuracy": _share(seen[majority], len(rows)),
        "recall": {label: _share(hits[label], n) for label, n in sorted(seen.items())},
    }


def one_input_baseline(
    train: list[Example], tests: dict[str, list[Example]], op: str
) -> dict[str, dict[str, dict[str, Any]]]:
    """View -> test set -> accuracy, the majority label's accuracy and recall per label."""
    out = {}
    for name, view in VIEWS[op].items():
        model = NaiveBayes([(view(r), r["label"]) for r in train])
        out[name] = {where: _scored(model, view, rows) for where, rows in tests.items() if rows}
    return out


def realism_markdown(table: dict[str, dict[str, Any]]) -> list[str]:
    sources = list(table)
    rows = (
        ("episodes", "episodes"),
        ("gold claims", "claims"),
        ("catalog pairs", "catalog_pairs"),
        ("key pairs sharing entity or a slot word", "near_miss_key_pairs"),
        ("value length, mean words", "value_words_mean"),
        ("value length, max words", "value_words_max"),
        ("value verbatim in its note", "value_verbatim_in_note"),
        ("value tokens found in its note", "value_token_overlap"),
        ("note length, mean words", "note_words_mean"),
        ("notes that list files", "notes_with_files"),
        ("UTC offsets", "utc_offsets"),
        ("next note's timestamp sorts first as text", "time_string_order_inverted"),
    )
    lines = [
        "## Realism: the synthetic scenarios beside each trajectory",
        "",
        "| | " + " | ".join(sources) + " |",
        "| --- |" + " ---: |" * len(sources),
    ]
    for label, key in rows:
        lines.append(f"| {label} | " + " | ".join(_fmt(table[s][key]) for s in sources) + " |")
    for op in ("compare", "update"):
        labels = sorted({k for s in sources for k in table[s].get(op, {})})
        for k in labels:
            lines.append(
                f"| {op}: {k} | " + " | ".join(_fmt(table[s].get(op, {}).get(k)) for s in sources) + " |"
            )
    return [*lines, ""]


def baseline_markdown(baseline: dict[str, dict[str, dict[str, dict[str, Any]]]]) -> list[str]:
    lines = [
        "## One-input baseline",
        "",
        "Naive Bayes fit on the synthetic train split, reading one input only. A label recalled well "
        "from one input is a template artifact (``add`` aside: no entry means add, by rule).",
        "",
    ]
    for op, views in baseline.items():
        lines += [f"### {op}", "", "| view | scored on | n | accuracy | majority label | recall per label |"]
        lines.append("| --- | --- | ---: | ---: | ---: | --- |")
        for view, by_set in views.items():
            for where, s in by_set.items():
                recall = ", ".join(f"{k} {_fmt(v)}" for k, v in s["recall"].items())
                lines.append(
                    f"| {view} | {where} | {s['n']} | {_fmt(s['accuracy'])} "
                    f"| {_fmt(s['majority_label_accuracy'])} | {recall} |"
                )
        lines.append("")
    return lines


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)
