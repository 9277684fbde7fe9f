"""The five-way leave-one-out harness: per fold, score every operator on the held-out
trajectory's test examples and replay that trajectory through the engine.

Variants: ``direct``, ``two-stage`` and, when an ``extract-stages`` adapter was trained,
``two-stage-trained`` (learned operators; they differ in extraction only, so compare and
update are run once, as ``learned``), ``decisions`` (engine replay only: gold extraction with
the learned compare and update, so the engine rows show what the learned conflict logic does
to the memory apart from extraction), ``prompted`` (the base model without
adapters, the same prompts and grammar, two-stage extraction: the baseline of an instruct model
used as a judge) and ``symbolic`` (the rules and gold extraction, run on the same inputs: the
reference ceiling). Every sample becomes one record
the moment it is scored; a restarted run skips what is recorded.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memops.core.layout import test_file
from memops.core.sessions import Episode
from memops.eval.metrics import claim_f1, verbatim
from memops.eval.scored import Record, Records
from memops.memory.claims import norm
from memops.memory.reader import answer
from memops.operators.engine import ask_ahead, learned_writes, replay
from memops.operators.learned import Extraction, LearnedOperators, Outcome, mode_adapter
from memops.operators.registry import DECISIONS, EXTRACT, OPERATORS, OPS
from memops.operators.symbolic import prompt_key

BATCH = 32
"""Samples per operator call. A read in bf16 moves in its last bits with the samples batched
beside it, so whatever scores a fold or the contract suite (a run, ``eval.curve``) batches alike."""


def load_test(datasets_dir: Path, fold: str, op: str) -> list[dict[str, Any]]:
    path = test_file(datasets_dir, fold, op)
    if not path.exists():
        raise FileNotFoundError(f"no test split at {path}; build it with: memops build-data")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def chunks(rows: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _record(fold: str, op: str, variant: str, example: dict, **fields: Any) -> Record:
    return {"fold": fold, "op": op, "variant": variant, "id": example["id"], **fields}


def _check_prompt(example: dict, outcome: Outcome) -> str:
    """The prompt sent must be the dataset's prompt; drift would score a different task."""
    key = prompt_key(outcome.messages)
    if key != prompt_key(example["prompt"]):
        raise RuntimeError(f"{example['id']}: the operator's prompt differs from the dataset's")
    return key


def _dump(output: Any) -> Any:
    return None if output is None else output.model_dump(mode="json")


PROMPTED_EXTRACT = "two-stage"
"""The prompted baseline extracts in two stages: the grammar then guarantees a valid answer."""
DECISIONS_ONLY = "decisions"
"""The engine variant with gold extraction and the learned decisions."""


def decision_variants(prompted: bool = True) -> tuple[str, ...]:
    """The variants scored on compare and update: the adapters, the prompted base unless a run
    leaves it out (``LooConfig.prompted``), and the rules."""
    return ("learned", *(["prompted"] if prompted else []), "symbolic")


def extract_variants(modes: Sequence[str], prompted: bool = True) -> tuple[str, ...]:
    """The variants scored on extraction: the learned ``modes``, the prompted base and the
    rules. A decisions-only run (no mode) leaves the prompted base's extraction out too, so that
    its overall covers the same compare and update examples as the learned one it is set against."""
    return (*modes, *(["prompted"] if modes and prompted else []), "symbolic")


def engine_variants(modes: Sequence[str], prompted: bool = True) -> tuple[str, ...]:
    """The engine replays of a fold: one per learned extraction mode, the learned decisions on
    gold claims, then the other extracting variants (the prompted base replays its own)."""
    return (*modes, DECISIONS_ONLY, *extract_variants(modes, prompted)[len(modes) :])


def extract_mode(variant: str) -> str | None:
    """How a variant's engine replay extracts; None: it writes the gold claims."""
    if variant == DECISIONS_ONLY:
        return None
    return PROMPTED_EXTRACT if variant == "prompted" else variant


def adapter_of(op: str, variant: str) -> str | None:
    """The adapter that scores ``op`` under ``variant``; None: the bare base or the rules."""
    if variant in ("prompted", "symbolic"):
        return None
    return mode_adapter(variant) if op == EXTRACT.name else op


def extract_records(fold: str, variant: str, examples: Sequence[dict], episode: Episode, ops) -> list[Record]:
    sessions = {s.id: s for s in episode.sessions}
    chosen = [sessions[json.loads(e["inputs"])["session"]] for e in examples]
    if variant == "symbolic":
        results = [
            Extraction(list(s.claims), [], list(dict.fromkeys(c.pair for c in s.claims))) for s in chosen
        ]
    else:
        results = ops.extract([(s.note(), episode.catalog) for s in chosen], extract_mode(variant))
    out = []
    for example, session, result in zip(examples, chosen, results, strict=True):
        gold = [c.model_dump(mode="json") for c in session.claims]
        pred = [c.model_dump(mode="json") for c in result.claims]
        out.append(
            _record(
                fold,
                EXTRACT.name,
                variant,
                example,
                prompt_hash=prompt_key(example["prompt"]),
                raw=[{"step": c.step, "text": c.raw} for c in result.calls],
                parsed=pred,
                selected=result.selected,
                pair_scores=result.scores,
                gold_verbatim=[verbatim(c["value"], f"{session.title}\n{session.text}") for c in gold],
                error=result.error,
                gold=gold,
                score=claim_f1(gold, pred, "schema"),
                value_score=claim_f1(gold, pred, "value"),
                latency_s=sum(c.latency_s for c in result.calls),
            )
        )
    return out


def decision_records(fold: str, op: str, variant: str, examples: Sequence[dict], ops) -> list[Record]:
    """A decision operator: exact match of the whole output against the label. ``symbolic``
    answers the same arguments with the operator's rule."""
    spec = OPERATORS[op]
    arguments = [spec.arguments(json.loads(e["inputs"])) for e in examples]
    if variant == "symbolic":
        answers = [spec.rule(*a) for a in arguments]
    else:
        outcomes = ops.decide(spec, arguments)
    out = []
    for n, example in enumerate(examples):
        if variant == "symbolic":
            fields = {"prompt_hash": prompt_key(example["prompt"]), "raw": answers[n].model_dump_json()}
            fields |= {"parsed": _dump(answers[n]), "error": None, "latency_s": 0.0}
        else:
            o = outcomes[n]
            fields = {"prompt_hash": _check_prompt(example, o), "raw": o.raw}
            fields |= {"parsed": _dump(o.output), "error": o.error, "latency_s": o.latency_s}
        gold = json.loads(example["completion"][0]["content"])
        score = float(fields["parsed"] == gold)
        out.append(
            _record(fold, op, variant, example, gold=gold, score=score, slot=_slot(arguments[n]), **fields)
        )
    return out


def _slot(arguments: tuple[Any, ...]) -> str:
    """The slot a decision is about: its incoming claim's (compare's second, update's claim),
    as ``entity.slot``, so a report can say where the misses lie (``summary.decision_misses``)."""
    claim = arguments[-1]
    return f"{claim.entity}.{claim.slot}"


def engine_records(
    fold: str, variant: str, episode: Episode, ops: LearnedOperators | None, asked_s: float = 0.0
) -> list[Record]:
    """Final-state key accuracy and query accuracy of the structured reader, one record each.
    ``asked_s``: the replay's share of the seconds its decisions took when asked ahead
    (``ask_replays``), counted in its ``replay_s``."""
    began = time.perf_counter()
    if variant == "symbolic":
        result = replay(episode)
    else:
        result = replay(episode, "learned", ops, extract_mode(variant))
    seconds = time.perf_counter() - began + asked_s
    mem = result.memory
    cost = {"calls": dict(result.calls), "failures": dict(result.failures), "replay_s": seconds}
    out = []
    for entry in episode.replay().entries():
        k, want = entry.key, entry.current.value if entry.current else None
        got = mem.entry(k)
        value = got.current.value if got and got.current else None
        hit = value is not None and want is not None and norm(value) == norm(want)
        example = {"id": f"{k.entity}.{k.slot}@{k.branch}/{k.env}"}
        out.append(
            _record(
                fold,
                "engine_state",
                variant,
                example,
                prompt_hash=None,
                raw=None,
                parsed=value,
                error=None,
                gold=want,
                score=float(hit),
                latency_s=0.0,
                **cost,
            )
        )
    for q in episode.queries:
        said = answer(mem, q.target.key, q.target.ask, q.target.at)
        gold = {"question": q.question, "required": q.required, "forbidden": q.forbidden, "any_of": q.any_of}
        out.append(
            _record(
                fold,
                "engine_queries",
                variant,
                {"id": q.id},
                prompt_hash=None,
                raw=None,
                parsed=said,
                error=None,
                gold=gold,
                score=float(q.accepts(said)),
                latency_s=0.0,
            )
        )
    return out


def score_fold(
    fold: str,
    datasets_dir: Path,
    episode: Episode,
    ops: LearnedOperators,
    records: Records,
    modes: Sequence[str],
    batch: int = BATCH,
    progress: bool = True,
    missing: Collection[str] = (),
    prompted: bool = True,
) -> None:
    """Score every (op, variant) of one fold's test examples that is not recorded yet.

    ``ops`` runs the adapters; the prompted variant runs the same backend without them.
    ``modes``: the learned extraction variants (``two-stage-trained`` needs the backend to hold
    the ``extract-stages`` adapter). ``missing``: adapters still in training; what they would
    score is left for a later call."""
    on = variant_ops(ops)
    tests = {op: load_test(datasets_dir, fold, op) for op in OPS}
    # Decisions first: one short call per example, so a run cut short still has them.
    jobs: list[tuple[str, str, Callable[[Sequence[dict]], list[Record]]]] = []
    for op in DECISIONS:
        for variant in decision_variants(prompted):
            jobs.append((op, variant, lambda ex, op=op, v=variant: decision_records(fold, op, v, ex, on(v))))
    for variant in extract_variants(modes, prompted):
        jobs.append(
            (EXTRACT.name, variant, lambda ex, v=variant: extract_records(fold, v, ex, episode, on(v)))
        )
    for op, variant, score in jobs:
        if adapter_of(op, variant) in missing:
            continue
        todo = [e for e in tests[op] if not records.done(fold, op, variant, e["id"])]
        with tqdm(
            total=len(tests[op]),
            initial=len(tests[op]) - len(todo),
            desc=f"{fold} {op} {variant}",
            disable=not progress,
            leave=False,
        ) as bar:
            for chunk in chunks(todo, batch):
                records.add(score(chunk))
                bar.update(len(chunk))


def ask_replays(
    episodes: Mapping[str, Episode],
    ops: LearnedOperators,
    records: Records,
    modes: Sequence[str],
    progress: bool = True,
    prompted: bool = True,
) -> dict[tuple[str, str], float]:
    """Ask ahead the learned decisions of every engine replay still to run on ``ops``, every
    fold's and variant's in the same rounds (``ask_ahead``), so that a round is one batch of
    requests where a replay alone asked one at a time. Returns each (fold, variant)'s share of
    the seconds. The prompted base decides on its own operators and asks in its own replay."""
    pending = [
        (fold, variant)
        for fold, episode in episodes.items()
        for variant in engine_variants(modes, prompted)
        if variant not in ("symbolic", "prompted")
        and not records.done(fold, "engine_queries", variant, episode.queries[-1].id)
    ]
    streams = [learned_writes(episodes[fold], ops, extract_mode(variant))[0] for fold, variant in pending]
    return dict(zip(pending, ask_ahead(ops, streams, progress), strict=True))


def replay_fold(
    fold: str,
    episode: Episode,
    ops: LearnedOperators,
    records: Records,
    modes: Sequence[str],
    progress: bool = True,
    asked: Mapping[tuple[str, str], float] | None = None,
    prompted: bool = True,
) -> None:
    """Replay the held-out trajectory through the engine once per variant not recorded yet. It
    re-extracts every note (answered from ``ops.answers`` where the scoring asked the same), so
    it is the slowest part of a fold; a run scores every fold first. ``asked``: the seconds of
    the decisions ``ask_replays`` asked ahead, per (fold, variant)."""
    on = variant_ops(ops)
    for variant in engine_variants(modes, prompted):
        if not records.done(fold, "engine_queries", variant, episode.queries[-1].id):
            if progress:
                print(f"{fold}: engine replay ({variant})", flush=True)
            replay_ops = None if variant == "symbolic" else on(variant)
            records.add(
                engine_records(fold, variant, episode, replay_ops, (asked or {}).get((fold, variant), 0.0))
            )


def variant_ops(ops: LearnedOperators) -> Callable[[str], LearnedOperators]:
    """The operators a variant runs on: the adapters, or for ``prompted`` the bare base."""
    prompted = replace(ops, adapters=False, calls=Counter())
    return lambda variant: prompted if variant == "prompted" else ops
