"""Learned operators: prompts from ``operators.prompts``, decoding under ``operators.schemas``.

Every answer is parsed through the same pydantic model whose JSON schema constrained it. An
answer that does not parse or validate becomes an ``Outcome`` with ``error`` set and the raw
text kept; it never raises out of a batch. Only the backend raises, and only when it cannot
answer at all.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import astuple, dataclass, field, replace
from typing import Any, Literal, NamedTuple, get_args

from pydantic import BaseModel, ValidationError

from memops.core.records import Catalog, ExtractedClaim, Note, added_lines
from memops.core.values import MAX_VALUE_CHARS, candidates, change_says, one_of, run_grammar, states
from memops.memory.claims import Claim, norm, value_items
from memops.memory.compare import scope
from memops.memory.state import Entry, Item, Same, rule
from memops.operators.backends import BASE, Backend, Completion, Messages, Odds, Probe, Request
from memops.operators.offsets import Offsets
from memops.operators.prompts import (
    BLANKS,
    blank_notes,
    fill_messages,
    note_block,
    select_messages,
    selection_answers,
)
from memops.operators.registry import COMPARE, DECISIONS, EXTRACT, STAGES_ADAPTER, UPDATE, Operator
from memops.operators.schemas import (
    MAX_PAIRS,
    Selection,
    UpdateOutput,
    fill_model,
    held_to,
    json_schema,
    note_branches,
    note_evidence,
    select_model,
)

Decoding = Literal["decode", "read", "calibrated", "contract", "judged"]
DECODINGS: tuple[Decoding, ...] = get_args(Decoding)
JUDGING: tuple[Decoding, ...] = ("contract", "judged")
"""The readings in which the adapter judges only whether two values are one (``within_contract``)."""


class Judgment(NamedTuple):
    """Whether two claims' values are one value as read (``LearnedOperators.one_value``), the
    reads' time, and the backend's refusal where one refused."""

    one: bool
    latency_s: float
    refused: str | None


def decision_adapters(decisions: str) -> tuple[str, ...]:
    """The decision adapters a reading asks: ``judged`` asks update's judgment of values of the
    compare adapter (``LearnedOperators.judged_updates``), so its runs neither train nor serve an
    update adapter."""
    return (COMPARE.name,) if decisions == "judged" else DECISIONS


ExtractMode = Literal[
    "direct",
    "two-stage",
    "two-stage-trained",
    "two-stage-scored",
    "two-stage-overlap",
    "two-stage-mixed",
    "direct-trained",
    "two-stage-read",
    "two-stage-proposed",
]
Sourced = tuple[Note, Catalog]
"""A note with the catalog it is read against."""
Ask = tuple[str, Messages, type[BaseModel], Any, int]
"""One call to make: the adapter, the prompt, the output model, its JSON schema (or None), and
the token budget."""
EXTRACT_MODES: tuple[ExtractMode, ...] = get_args(ExtractMode)
"""``direct``: one call for every claim. ``two-stage``: select pairs, then fill each, under
grammars, on the extract adapter (trained on direct prompts only: the grammar alone carries the
procedure). ``two-stage-trained``: the same calls on the ``extract-stages`` adapter, trained on
the stage prompts too. ``two-stage-scored``: on the same adapter, stage 1 reads instead of
decoding: each stage-1 answer of one pair, and the empty answer, is scored by how much likelier
the note makes it than a note that says nothing does (``pair_scores``), and the likeliest answer
is kept (``likeliest``); stage 2 fills its pair as
``two-stage-trained`` does. ``two-stage-overlap``: no model in stage 1, the catalog pair whose
words the note uses most (``overlap_scores``), filled as ``two-stage-trained`` does: the floor a
learned selection has to clear. ``two-stage-mixed``: stage 1 reads as ``two-stage-scored`` does, and
each pair's score, standardised over the note's catalog, is mixed with its overlap score,
standardised alike, by a weight placed on validation notes (``mix_weight``; :func:`mixed_scores`);
the best pair is kept, filled as ``two-stage-trained`` does. ``direct-trained``: ``direct``'s one
call on the ``extract-stages`` adapter, whose data hold the direct examples beside the stage
ones: one extract adapter for every mode, so that a run trains one adapter fewer
(docs/log/speed.md). ``two-stage-read``:
``two-stage-trained``, then each typed value read again from the note: the value the fill wrote
and every value of the slot's type the note states (``core.values.candidates``), each weighed
as the fill's answer by the adapter, the likeliest kept (``LearnedOperators.read_values``).
``two-stage-proposed``: for a note that says what its commit changed, stage 1 is every pair whose
type a line the commit added holds a value of (:func:`proposals`), and such a pair's fill is
decoded with its value held to the values those lines state, then the likeliest of them, weighed
as ``two-stage-read`` weighs, kept; for any other note, stage 1 is the adapter's selection less
the worded pairs whose type the note holds no value of (:func:`stated`), and the pair whose
words the note uses most where it states a value of its type (:func:`quoted`), each filled
among the values of its type the note states, where it states any, as a proposed pair is."""
STAGED_MODES: tuple[ExtractMode, ...] = (
    "two-stage-trained",
    "two-stage-scored",
    "two-stage-overlap",
    "two-stage-mixed",
    "direct-trained",
    "two-stage-read",
    "two-stage-proposed",
)
"""The modes that run on the ``extract-stages`` adapter."""
READ_MODES: tuple[ExtractMode, ...] = (
    "two-stage-scored",
    "two-stage-mixed",
    "two-stage-read",
    "two-stage-proposed",
)
"""The modes that read how likely given answers are (probes) beside decoding: a backend that
only generates (an OpenAI-compatible endpoint) cannot run them."""
PLACED_MODES: tuple[ExtractMode, ...] = ("two-stage-scored", "two-stage-mixed")
"""The scoring selections, whose reading a run places on validation notes (``eval.calibration``)."""
NOTE_STEPS = frozenset({EXTRACT.name, "select", "fill"})
"""The calls about one note: their prompts are the same up to the task (``with_task``), and
each note is asked in several (``Request.stem``)."""
OPT_IN_MODES: tuple[ExtractMode, ...] = (
    "two-stage-overlap",
    "two-stage-mixed",
    "direct-trained",
    "two-stage-read",
    "two-stage-proposed",
)
"""The modes a run scores only when ``extract_modes`` names them: ``two-stage-overlap`` selects
with no model, and the symbolic oracle has no fill to give for a pair its note does not state;
``two-stage-mixed`` with the same rule beside the adapter;
``direct-trained`` is a study of the adapters a run needs; ``two-stage-read`` and
``two-stage-proposed`` studies of values read from the note."""


def add_decisions_argument(parser: argparse.ArgumentParser) -> None:
    """``--decisions``, for the commands that open a learned memory (``LearnedOperators.decisions``)."""
    parser.add_argument(
        "--decisions",
        default="decode",
        choices=DECODINGS,
        help="how compare and update answer: decode, or read the likeliest answer (calibrated: after "
        "the offsets the adapters fitted; contract: among the answers the rules leave open; judged: "
        "contract, update's judgment of values asked of the compare adapter)",
    )


def mode_adapter(mode: ExtractMode) -> str:
    """The adapter a learned extraction mode runs on."""
    return STAGES_ADAPTER if mode in STAGED_MODES else EXTRACT.name


def _round_up(n: int, step: int = 64) -> int:
    return -(-n // step) * step


def select_budget(pairs: Sequence[str]) -> int:
    """Room for the longest stage-1 answer the schema allows: six of the longest pair.

    Counted in characters, an upper bound on tokens for a BPE vocabulary over ASCII text; it
    is rounded up so that notes of one catalog batch together.
    """
    return _round_up(len('{"pairs":[]}') + MAX_PAIRS * (max(map(len, pairs)) + 3))


def fill_budget(pair: str, branches: Sequence[str]) -> int:
    """Room for the longest stage-2 answer: fixed keys, the pair, a full-length value, enums."""
    keys = len('{"entity":"","slot":"","value":"","branch":"","env":"","evidence_type":""}')
    longest_enums = max(map(len, branches)) + len("production") + len("runtime-observation")
    return _round_up(keys + len(pair) + 2 * MAX_VALUE_CHARS + longest_enums)


@dataclass(frozen=True)
class Outcome:
    """One model call: what was asked, what came back, and what it parsed to (or why not)."""

    step: str
    messages: Messages
    raw: str
    output: BaseModel | None
    error: str | None
    latency_s: float
    completion_tokens: int


@dataclass(frozen=True)
class Extraction:
    """The claims one note yields, with every call that produced them."""

    claims: list[ExtractedClaim]
    calls: list[Outcome]
    selected: list[str] = field(default_factory=list)
    """The ``entity.slot`` pairs stage 1 chose (direct: the pairs the claims name)."""
    scores: dict[str, float] = field(default_factory=dict)
    """A scoring selection's score per catalog pair (``pair_scores``; ``mixed_scores``; the overlap's
    share of words)."""

    @property
    def error(self) -> str | None:
        errors = [f"{c.step}: {c.error}" for c in self.calls if c.error]
        return "; ".join(errors) or None


def _key(request: Request) -> str:
    """A request as ``LearnedOperators.answers`` keeps it."""
    return json.dumps(astuple(request), sort_keys=True)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def word_overlap(note: str, described: dict[str, str]) -> dict[str, float]:
    """Per ``entity.slot`` pair of ``described`` (pair: description), the share of its words (its
    entity and slot names, split at ``_``, and its description) that ``note`` uses too."""
    said = _words(note)
    scores = {}
    for pair, description in described.items():
        words = _words(f"{pair} {description}")
        scores[pair] = len(words & said) / len(words)
    return scores


def overlap_scores(note: Note, catalog: Catalog) -> dict[str, float]:
    """:func:`word_overlap` of the note as the prompt shows it with the catalog's pairs."""
    return word_overlap(note_block(note), {e.pair: e.description for e in catalog.entries})


def overlap_selection(note: Note, catalog: Catalog) -> Extraction:
    """Stage 1 without a model: the pair of highest :func:`overlap_scores` (the first in catalog
    order on a tie), one per note, as the notes of both sources state one pair each but for
    chatter. The call it stands for is the stage-1 prompt, answered with that pair."""
    scores = overlap_scores(note, catalog)
    selected = [max(scores, key=scores.__getitem__)]
    raw = Selection(pairs=selected).model_dump_json()
    call = Outcome("overlap", select_messages(note, catalog), raw, None, None, 0.0, 0)
    return Extraction([], [call], selected, scores)


FLOOR = 1e-12
"""The least probability a score's logarithm reads: a backend's probability can underflow to 0."""


def pair_scores(probs: Sequence[float], prior: Sequence[float] | None, weight: float) -> list[float]:
    """Each answer's score, ``log p(answer | note) - weight * log p(answer | blank note)``: what
    the note adds to what the adapter answers with nothing to read, whose favourite pairs would
    otherwise win any note that does not name its own (contextual calibration). Without a
    prior, the log-probability alone."""
    prior = prior if prior is not None else [1.0] * len(probs)
    return [
        math.log(max(p, FLOOR)) - weight * math.log(max(q, FLOOR)) for p, q in zip(probs, prior, strict=True)
    ]


def standardised(scores: Sequence[float]) -> list[float]:
    """The scores less their mean, over their standard deviation (all 0 where they are all
    equal): a note's learned and overlap scores on one scale, whatever the catalog's size or how
    sure the adapter is."""
    if not scores:  # an empty catalog
        return []
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return [(s - mean) / sd if sd else 0.0 for s in scores]


def mixed_scores(learned: Sequence[float], overlap: Sequence[float], weight: float) -> list[float]:
    """Per catalog pair, ``weight`` of its standardised learned score (``pair_scores``, the empty
    answer's left out) and the rest of its standardised overlap score: the rule knows the note's
    words, the adapter what they say, and each breaks the other's ties and near misses."""
    return [
        weight * a + (1 - weight) * b
        for a, b in zip(standardised(learned), standardised(overlap), strict=True)
    ]


def mixed_selection(
    pairs: Sequence[str], learned: Sequence[float], overlap: dict[str, float], weight: float
) -> tuple[list[str], list[float]]:
    """The pair of best :func:`mixed_scores` (``learned``: one per pair, then the empty answer's,
    which does not play), one per note as the overlap rule keeps, the first in catalog order on a
    tie (weight 0 is :func:`overlap_selection`); and the mixed scores."""
    mix = mixed_scores(learned[: len(pairs)], [overlap[p] for p in pairs], weight)
    return likeliest(pairs, [*mix, -math.inf], none=False)[:1], mix


def likeliest(pairs: Sequence[str], scores: Sequence[float], none: bool = True) -> list[str]:
    """The selection of highest score (``scores``: one per pair, then the empty answer's): the
    likeliest pair with every pair tied with it, at most ``MAX_PAIRS`` (an oracle is certain
    of each pair a note states), or, with ``none``, no pair where the empty answer scores
    higher."""
    *by_pair, empty = scores
    top = max(by_pair, default=empty)
    if (none and empty > top) or not by_pair:
        return []
    return [p for p, s in zip(pairs, by_pair, strict=True) if s == top][:MAX_PAIRS]


def proposals(note: Note, catalog: Catalog) -> dict[str, list[str]] | None:
    """Per catalog pair, the values of its type (``core.values.candidates``) that the lines the
    note's commit added state (``core.records.added_lines``), each line read for what it can say
    of the slot (``core.values.change_says``); a pair with none is left out. For a list of tools
    the lines' every tool together, the one value offered: the added lines name the tools the
    files set up, and of the 7 mined held-out notes whose lines name several, the gold is all
    of them in 6 and one of them alone in none. None for a note that does not say what its
    commit changed. A commit's note states a slot's new value on an added line, its old one on
    a removed line; a number or a version in the commit message is most often an issue or a
    release."""
    added = added_lines(note.text)
    if added is None:
        return None
    found = {}
    for entry in catalog.entries:
        values = candidates(entry.value, "\n".join(change_says(entry.value, entry.slot, *x) for x in added))
        found[entry.pair] = values[-1:] if entry.value.kind == "tools" else values  # the union is last
    return {pair: values for pair, values in found.items() if values}


def quoted(note: Note, catalog: Catalog, pairs: Sequence[str]) -> dict[str, list[str]]:
    """For a note that does not say what its commit changed: the ``pairs`` selected for it and
    the pair whose words it uses most (:func:`overlap_scores`: a note that quotes a value names
    its slot, ``the Python versions the project supports as >=3.9``), each with the values of
    its type the note states (``core.values.candidates``), each where the note can state a
    value of its type (``stated``: a worded type's only with one). On the Codex notes, whose
    catalogs are free text, the top pair is a gold pair for 55 of 77 notes, the selection of
    the extract adapter trained on the scenarios and mined notes for 17."""
    said = f"{note.title}\n{note.text}"
    scores = overlap_scores(note, catalog)
    top = max(scores, key=scores.__getitem__)
    kept = stated(note, catalog, list(dict.fromkeys([*pairs, top])))
    return {pair: candidates(catalog.value_type(pair), said) for pair in kept}


def stated(note: Note, catalog: Catalog, pairs: Sequence[str]) -> list[str]:
    """The ``pairs`` whose slot's type the note (title and text) can state a value of
    (``core.values.states``)."""
    said = f"{note.title}\n{note.text}"
    return [p for p in pairs if states(catalog.value_type(p), said)]


def in_type(claim: ExtractedClaim, catalog: Catalog) -> ExtractedClaim | None:
    """The claim with its value in its slot's one spelling (``ValueType.normalise``), as the
    engine takes it; None where the value is no value of the slot's type."""
    value = catalog.value_type(claim.pair).normalise(claim.value)
    return None if value is None else claim.model_copy(update={"value": value})


def typed(outcome: Outcome, catalog: Catalog) -> Outcome:
    """A fill's outcome with its claim :func:`in_type`; a value of another type becomes the
    call's error, as a schema violation does."""
    if not isinstance(outcome.output, ExtractedClaim):
        return outcome
    claim = in_type(outcome.output, catalog)
    if claim is None:
        kind = catalog.value_type(outcome.output.pair).kind
        return replace(outcome, output=None, error=f"value is no {kind} value: {outcome.output.value!r}")
    return replace(outcome, output=claim)


def parse(model: type[BaseModel], text: str) -> tuple[BaseModel | None, str | None]:
    try:
        return model.model_validate_json(text), None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        kind = "invalid JSON" if first["type"] == "json_invalid" else "schema violation"
        return None, f"{kind} at {where}: {first['msg']}"


def parse_selection(model: type[BaseModel], text: str) -> tuple[BaseModel | None, str | None]:
    """Stage 1 parsing. A repeated pair is dropped before validation: grammar engines do not
    enforce ``uniqueItems``, and a repeat carries no information a second fill could use."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        return None, f"invalid JSON at (root): {e.msg}"
    if isinstance(data, dict) and isinstance(data.get("pairs"), list):
        pairs = data["pairs"]
        data["pairs"] = [p for i, p in enumerate(pairs) if not isinstance(p, str) or p not in pairs[:i]]
    return parse(model, json.dumps(data))


def within_contract(op: Operator, arguments: tuple[Any, ...], probs: Sequence[float]) -> int:
    """The index of the open answer (``Operator.open``) whose judgment of the values the adapter
    weighs most, each judgment weighed by all the answers that make it (``Operator.judgment``):
    ``conflicting/first`` counts toward two values where the order makes the second the winner,
    so an adapter that learned another order still says whether the values are one."""
    assert op.open is not None and op.judgment is not None, f"{op.name} is not a decision"
    said = [op.judgment(a) for a in op.answers]
    weight: dict[str, float] = {}
    for judged, p in zip(said, probs, strict=True):
        weight[judged] = weight.get(judged, 0.0) + p
    left = op.open(*arguments)
    return max((i for i, a in enumerate(op.answers) if a in left), key=lambda i: weight[said[i]])


def to_judge(first: Claim, second: Claim) -> list[tuple[Claim, Claim]] | None:
    """What is left to read of whether two claims hold one value once the normaliser has paired
    their items (design §4). None where one value is a list holding every item of the other and
    more: an item added or dropped makes another value, whatever a reading says. Where both are
    lists of one length, the items left unpaired, each against its counterpart in order (one
    value only if each pair is one): a 135M adapter that calls two lists of nine pins one value
    where one pin moved mostly tells the two pins apart. Otherwise the two claims whole."""
    whole = [(first, second)]
    ours, theirs = value_items(first.value), value_items(second.value)
    if scope(first, second) is not None or max(len(ours), len(theirs)) < 2:
        return whole
    common = Counter(map(norm, ours)) & Counter(map(norm, theirs))
    ours, theirs = _unpaired(ours, common), _unpaired(theirs, common)
    if not ours and not theirs:
        return whole
    if not ours or not theirs:
        return None
    if len(ours) != len(theirs):
        return whole
    return [(_valued(first, a), _valued(second, b)) for a, b in zip(ours, theirs, strict=True)]


def _unpaired(said: list[str], common: Counter[str]) -> list[str]:
    """The items of one list that the normaliser pairs with none of the other's, in order."""
    held, out = common.copy(), []
    for item in said:
        if held[norm(item)]:
            held[norm(item)] -= 1
        else:
            out.append(item)
    return out


def _valued(claim: Claim, value: str) -> Claim:
    return Claim.model_validate({**claim.model_dump(), "value": value})


def _judged_pairs(
    items: Sequence[tuple[Entry | None, Claim]],
) -> list[list[tuple[Item, tuple[Claim, Claim]]]]:
    """Per update call, each live item of its entry and the compare arguments that judge it
    against the claim (``LearnedOperators.judged_updates``); none at a new key."""
    return [
        [(item, (item.as_claim(), claim)) for item in entry.live.values()] if entry is not None else []
        for entry, claim in items
    ]


def _held(verdicts: dict[int, bool]) -> Same:
    """The update rule's judgment of values as read: per live item (by identity), one value or not."""
    return lambda item, _claim: verdicts[id(item)]


@dataclass
class LearnedOperators:
    """The operators on a backend. ``calls`` counts model calls per step.

    With ``adapters=False`` every call runs on the bare base with the same prompts and grammar:
    the prompted baseline, i.e. an instruct model used as a judge the way Mem0, Graphiti and
    Zep run these operators.

    Decoding is greedy, so a request asked again gets the answer it got the first time:
    ``answers`` keeps them, and the engine replay of a held-out trajectory reuses the
    extractions its scoring already ran instead of decoding every note a second time."""

    backend: Backend
    constrained: bool = True
    adapters: bool = True
    favour_note: float = 0.0
    """Stage 2 adds this to the logits of the note's own tokens while a claim is filled: a study
    of values worded as the note words them (0: off)."""
    decisions: Decoding = "decode"
    """How a decision is answered: ``decode``, greedy under its schema's grammar; ``read``, the
    allowed answer (``Operator.answers``) the model finds most likely, read teacher-forced in one
    pass (a probe): the answer cannot be one the rules never give, and no answer is cut short;
    ``calibrated``, read, each answer's log-probability mapped by the offsets its adapter's
    validation answers fitted (``calibrations``; ``operators.offsets``) before the argmax;
    ``contract``, read among the answers the rules leave open for the call (``Operator.open``):
    the claims' keys, evidence and times decide what they decide, and the adapter judges only
    whether the two values are one value, so no answer breaks the engine's order
    (``within_contract``); ``judged``, contract, and update's judgment asked of the compare
    adapter: the update rule (``memory.state.rule``) with each "is the claim's value the value
    this item holds" read as compare's contract answer for the item and the claim, so one adapter
    holds the engine's one judgment of values (``judged_updates``)."""
    calibrations: dict[str, Offsets] = field(default_factory=dict)
    """Per decision operator, the offsets ``decisions=calibrated`` applies to its adapter's
    reads; the bare base (``adapters=False``) reads without any."""
    typed_selection: bool = False
    """Stage 1 keeps no pair whose slot's type the note holds no value of (``core.values.states``):
    a note that names no licence does not state ``project.license``, whatever the selection said.
    Off by default: on the mined held-out notes it doubled stage 1's precision and lost claim F1
    (docs/results.md)."""
    prior_weight: float = 0.0
    """How much of the adapter's prior a scoring selection divides out (``pair_scores``): placed
    on validation data (``eval.calibration``), never on the held-out fold. 0 reads the answers'
    probabilities as they are and asks no blank note."""
    select_none: bool = True
    """A scoring selection may keep the empty answer, and select no pair, where it scores
    highest; false keeps the likeliest pair of every note. Placed with ``prior_weight``."""
    mix_weight: float = 0.5
    """``two-stage-mixed``: the share of a pair's score that is the adapter's, the rest the
    overlap rule's (:func:`mixed_scores`); 1 is the scoring selection that always keeps a pair,
    0 the rule. Placed on validation notes with ``prior_weight`` (``eval.calibration``)."""
    calls: Counter[str] = field(default_factory=Counter)
    """Operator calls per step, answered by the model or from ``answers``."""
    answers: dict[str, Completion] = field(default_factory=dict)
    readings: dict[str, Odds] = field(default_factory=dict)
    """The same for probes: a probe reads one forward pass, which is deterministic too."""

    def _schema(self, model: type[BaseModel]) -> dict[str, Any] | None:
        return json_schema(model) if self.constrained else None

    def _asks(self, op: Operator, adapter: str, batch: list[Messages]) -> list[Ask]:
        schema = self._schema(op.output)
        return [(adapter, m, op.output, schema, op.budget) for m in batch]

    def _run(self, op: Operator, adapter: str, batch: list[Messages]) -> list[Outcome]:
        return self._ask(op.name, self._asks(op, adapter, batch))

    def _requests(
        self, step: str, asks: list[Ask], favours: Sequence[str | None] | None = None
    ) -> list[Request]:
        favours = favours or [None] * len(asks)
        return [
            Request(
                a if self.adapters else BASE,
                m,
                schema,
                n,
                text,
                self.favour_note if text else 0.0,
                stem=step in NOTE_STEPS,
            )
            for (a, m, _, schema, n), text in zip(asks, favours, strict=True)
        ]

    def _decision_asks(self, op: Operator, arguments: Sequence[tuple[Any, ...]]) -> list[Ask]:
        """One call of a decision operator per argument tuple, on its own adapter."""
        return self._asks(op, op.name, [op.messages(*a) for a in arguments])

    def unanswered(self, op: Operator, arguments: Sequence[tuple[Any, ...]]) -> int:
        """How many of these calls of a decision operator ``answers`` (``readings``) does not
        hold yet."""
        if self.decisions != "decode":
            if self.decisions == "judged" and op is UPDATE:
                asks = self._judging_asks([p for pairs in _judged_pairs(arguments) for _, p in pairs])
            elif self.decisions in JUDGING and op is COMPARE:
                asks = self._judging_asks(arguments)
            else:
                asks = self._reading_asks(op, arguments)
            return sum(self._probe_key(self._probe(*ask)) not in self.readings for ask in asks)
        requests = self._requests(op.name, self._decision_asks(op, arguments))
        return sum(_key(r) not in self.answers for r in requests)

    def _ask(self, step: str, asks: list[Ask], favours: Sequence[str | None] | None = None) -> list[Outcome]:
        if not asks:
            return []
        requests = self._requests(step, asks, favours)
        keys = [_key(r) for r in requests]
        new = {k: r for k, r in zip(keys, requests, strict=True) if k not in self.answers}
        if new:
            self.answers.update(zip(new, self.backend.complete(list(new.values())), strict=True))
        completions = [self.answers[k] for k in keys]
        self.calls[step] += len(asks)
        reader = parse_selection if step == "select" else parse
        out = []
        for (_, messages, model, _, _), c in zip(asks, completions, strict=True):
            output, error = (
                (None, f"refused by the backend: {c.refused}") if c.refused else reader(model, c.text)
            )
            out.append(Outcome(step, messages, c.text, output, error, c.latency_s, c.completion_tokens))
        return out

    def decide(self, op: Operator, arguments: Sequence[tuple[Any, ...]]) -> list[Outcome]:
        if self.decisions == "judged" and op is UPDATE:
            return self.judged_updates(arguments)
        if self.decisions in JUDGING and op is COMPARE:
            return self.judged_compares(arguments)
        if self.decisions != "decode":
            return self._read(op, arguments)
        return self._ask(op.name, self._decision_asks(op, arguments))

    def _read(self, op: Operator, arguments: Sequence[tuple[Any, ...]]) -> list[Outcome]:
        """Each decision as the allowed answer its probe weighs most (``decisions="read"``),
        after its adapter's offsets (``"calibrated"``), or among those the rules leave open
        (``"contract"``)."""
        asks = self._reading_asks(op, arguments)
        offsets = self.calibrations.get(op.name) if self.decisions == "calibrated" and self.adapters else None
        labels = [a.label for a in op.answers]
        out = []
        probes = self.probe(op.name, asks)
        for (_, messages, options), odds, args in zip(asks, probes, arguments, strict=True):
            if odds.refused:
                error = f"refused by the backend: {odds.refused}"
                out.append(Outcome(op.name, messages, "", None, error, odds.latency_s, 0))
                continue
            if offsets is not None:
                best = offsets.choose(labels, odds.probs)
            elif self.decisions in JUDGING and op.open is not None:
                best = within_contract(op, args, odds.probs)
            else:
                best = max(range(len(options)), key=odds.probs.__getitem__)
            out.append(Outcome(op.name, messages, options[best], op.answers[best], None, odds.latency_s, 0))
        return out

    def one_value(self, step: str, pairs: Sequence[tuple[Claim, Claim]]) -> list[Judgment]:
        """Per pair of claims at one key, whether the compare adapter, read within the contract,
        holds their values one value: what the normaliser leaves of them (``to_judge``) is read,
        and the values are one where every pair read is."""
        plans = [to_judge(*pair) for pair in pairs]
        asked = [p for plan in plans for p in plan or ()]
        odds = iter(self.probe(step, self._reading_asks(COMPARE, asked)))
        out = []
        for plan in plans:
            read = [(pair, next(odds)) for pair in plan or ()]
            refused = next((o.refused for _, o in read if o.refused), None)
            one = plan is not None and all(
                COMPARE.answers[within_contract(COMPARE, pair, o.probs)].relation == "equivalent"
                for pair, o in read
            )
            out.append(Judgment(one, sum(o.latency_s for _, o in read), refused))
        return out

    def _judging_asks(
        self, pairs: Sequence[tuple[Claim, Claim]]
    ) -> list[tuple[str, Messages, tuple[str, ...]]]:
        return self._reading_asks(COMPARE, [p for pair in pairs for p in to_judge(*pair) or ()])

    def judged_compares(self, pairs: Sequence[tuple[Claim, Claim]]) -> list[Outcome]:
        """Compare under ``decisions="contract"`` or ``"judged"``: the open answer (``Operator.open``)
        that says what ``one_value`` read of the two values."""
        out = []
        for pair, judged in zip(pairs, self.one_value(COMPARE.name, pairs), strict=True):
            messages = COMPARE.messages(*pair)
            if judged.refused:
                error = f"refused by the backend: {judged.refused}"
                out.append(Outcome(COMPARE.name, messages, "", None, error, judged.latency_s, 0))
                continue
            left = COMPARE.open(*pair)
            answer = next(a for a in left if len(left) == 1 or (a.relation == "equivalent") == judged.one)
            text = answer.model_dump_json()
            out.append(Outcome(COMPARE.name, messages, text, answer, None, judged.latency_s, 0))
        return out

    def judged_updates(self, items: Sequence[tuple[Entry | None, Claim]]) -> list[Outcome]:
        """Update under ``decisions="judged"``: the update rule, its judgment of each live item's
        value against the claim's read from the compare adapter (``one_value``; the item as one
        claim, so the open compare answers order the two as the rule does), and the rest the
        rule's own. The prompt recorded is the update prompt the answer stands for."""
        asked = _judged_pairs(items)
        judged = iter(self.one_value(UPDATE.name, [pair for pairs in asked for _, pair in pairs]))
        out = []
        for (entry, claim), pairs in zip(items, asked, strict=True):
            read = [(item, next(judged)) for item, _ in pairs]
            messages = UPDATE.messages(entry, claim)
            latency = sum(j.latency_s for _, j in read)
            refused = next((j.refused for _, j in read if j.refused), None)
            if refused:
                out.append(
                    Outcome(UPDATE.name, messages, "", None, f"refused by the backend: {refused}", latency, 0)
                )
                continue
            one = {id(item): j.one for item, j in read}
            action = (
                "add" if entry is None or entry.current is None else rule(entry, claim, same=_held(one))[0]
            )
            answer = UpdateOutput(action=action)
            out.append(Outcome(UPDATE.name, messages, answer.model_dump_json(), answer, None, latency, 0))
        return out

    @staticmethod
    def _reading_asks(
        op: Operator, arguments: Sequence[tuple[Any, ...]]
    ) -> list[tuple[str, Messages, tuple[str, ...]]]:
        """A decision read rather than decoded: its prompt, weighing each allowed answer."""
        options = tuple(a.model_dump_json() for a in op.answers)
        return [(op.name, op.messages(*a), options) for a in arguments]

    def compare(self, pairs: Sequence[tuple[Claim, Claim]]) -> list[Outcome]:
        return self.decide(COMPARE, pairs)

    def update(self, items: Sequence[tuple[Entry | None, Claim]]) -> list[Outcome]:
        return self.decide(UPDATE, items)

    def extract(self, notes: Sequence[Sourced], mode: ExtractMode = "direct") -> list[Extraction]:
        adapter = mode_adapter(mode)
        if mode in ("direct", "direct-trained"):
            outcomes = self._run(EXTRACT, adapter, [EXTRACT.messages(n, c) for n, c in notes])
            out = []
            for o, (_, catalog) in zip(outcomes, notes, strict=True):
                found = (in_type(c, catalog) for c in (o.output.claims if o.output else []))
                claims = [c for c in found if c is not None]
                named = list(dict.fromkeys(c.pair for c in claims))
                out.append(Extraction(claims, [o], named))
            return out
        if mode in PLACED_MODES:
            selections = self.score_pairs(notes, adapter, mixed=mode == "two-stage-mixed")
            return self._fill_selected(notes, selections, adapter)
        if mode == "two-stage-overlap":
            return self._fill_selected(notes, [overlap_selection(n, c) for n, c in notes], adapter)
        if mode == "two-stage-proposed":
            return self._proposed(notes, adapter)
        selections = []
        for sel in self.select(notes, adapter):
            pairs = list(sel.output.pairs) if isinstance(sel.output, Selection) else []
            selections.append(Extraction([], [sel], pairs))
        filled = self._fill_selected(notes, selections, adapter)
        return self.read_values(notes, filled, adapter) if mode == "two-stage-read" else filled

    def _proposed(self, notes: Sequence[Sourced], adapter: str) -> list[Extraction]:
        """``two-stage-proposed``: the proposals of a note that says what its commit changed (no
        stage-1 call), the adapter's selection of any other, less the worded pairs it does not
        state; then the fills, a proposed pair's value decoded among its proposals (a fill cut
        short while writing a value of its own loses the claim) and read among them again."""
        offered = [proposals(note, catalog) for note, catalog in notes]
        asked = [i for i, o in enumerate(offered) if o is None]
        selected = dict(zip(asked, self.select([notes[i] for i in asked], adapter), strict=True))
        selections, given = [], []
        for i, ((note, catalog), offer) in enumerate(zip(notes, offered, strict=True)):
            if offer is not None:  # the call it stands for: the stage-1 prompt, answered with them
                raw = json.dumps({"pairs": list(offer)})
                call = Outcome("propose", select_messages(note, catalog), raw, None, None, 0.0, 0)
                selections.append(Extraction([], [call], list(offer)))
                given.append(offer)
                continue
            sel = selected[i]
            found = quoted(note, catalog, sel.output.pairs if isinstance(sel.output, Selection) else [])
            selections.append(Extraction([], [sel], list(found)))
            given.append({pair: values for pair, values in found.items() if values})
        return self.read_values(notes, self._fill_selected(notes, selections, adapter, given), adapter, given)

    def read_values(
        self,
        notes: Sequence[Sourced],
        extractions: list[Extraction],
        adapter: str,
        offered: Sequence[dict[str, list[str]]] | None = None,
    ) -> list[Extraction]:
        """Each claim's value chosen again among the one its fill wrote and the values of the
        slot's type its note states (``candidates``): the fill prompt read once, each option the
        whole fill answer with that value, the likeliest kept. A claim whose note states no
        other value of its type keeps its own; a free-text slot has none to offer. With
        ``offered`` (per note, :func:`proposals`), a claim of an offered pair chooses among the
        offered values alone and every other claim keeps its own."""
        asks, owners = [], []
        for i, ((note, catalog), extraction) in enumerate(zip(notes, extractions, strict=True)):
            said = f"{note.title}\n{note.text}"
            for j, claim in enumerate(extraction.claims):
                if offered is None:
                    values = [claim.value, *candidates(catalog.value_type(claim.pair), said)]
                else:
                    values = offered[i].get(claim.pair, [claim.value])
                options = tuple(
                    claim.model_copy(update={"value": v}).model_dump_json() for v in dict.fromkeys(values)
                )
                if len(options) > 1:
                    asks.append((adapter, fill_messages(note, catalog, claim.pair), options))
                    owners.append((i, j))
        for (i, j), (_, messages, options), odds in zip(owners, asks, self.probe("read", asks), strict=True):
            extraction = extractions[i]
            if odds.refused:
                error = f"refused by the backend: {odds.refused}"
                extraction.calls.append(Outcome("read", messages, "", None, error, odds.latency_s, 0))
                continue
            best = max(range(len(options)), key=odds.probs.__getitem__)
            claim = extraction.claims[j]
            extraction.claims[j] = claim.model_validate_json(options[best])
            extraction.calls.append(
                Outcome("read", messages, options[best], extraction.claims[j], None, odds.latency_s, 0)
            )
        return extractions

    def probe(self, step: str, asks: list[tuple[str, Messages, tuple[str, ...]]]) -> list[Odds]:
        """Each (adapter, prompt, options) read, from ``readings`` where asked before."""
        probes = [self._probe(*ask) for ask in asks]
        keys = [self._probe_key(p) for p in probes]
        new = {k: p for k, p in zip(keys, probes, strict=True) if k not in self.readings}
        if new:
            self.readings.update(zip(new, self.backend.probe(list(new.values())), strict=True))
        self.calls[step] += len(asks)
        return [self.readings[k] for k in keys]

    def _probe(self, adapter: str, messages: Messages, options: tuple[str, ...]) -> Probe:
        return Probe(adapter if self.adapters else BASE, messages, options)

    @staticmethod
    def _probe_key(probe: Probe) -> str:
        return json.dumps(astuple(probe), sort_keys=True)

    def score_pairs(
        self, notes: Sequence[Sourced], adapter: str = STAGES_ADAPTER, mixed: bool = False
    ) -> list[Extraction]:
        """Stage 1 by scoring: the stage-1 prompt read once per note, each stage-1 answer of one
        catalog pair and the empty answer (``selection_answers``) weighed, divided by the
        adapter's prior (``priors``, ``prior_weight``), and the likeliest kept (``likeliest``,
        ``select_none``); ``mixed``, the pairs' scores mixed with the overlap rule's
        (``mixed_scores``, ``mix_weight``) and the best pair kept, the empty answer out of play as
        it is for the rule. The call's answer is that selection: a backend that reads other
        probabilities shows in parity only when a selection moves."""
        asks = [
            (adapter, select_messages(note, catalog), selection_answers(catalog.pairs()))
            for note, catalog in notes
        ]
        priors = self.priors(asks) if self.prior_weight else [None] * len(asks)
        out = []
        for (note, catalog), (_, messages, _), odds, prior in zip(
            notes, asks, self.probe("score", asks), priors, strict=True
        ):
            if odds.refused:
                error = f"refused by the backend: {odds.refused}"
                out.append(Extraction([], [Outcome("score", messages, "", None, error, odds.latency_s, 0)]))
                continue
            scores = pair_scores(odds.probs, prior, self.prior_weight)
            if mixed:
                overlap = overlap_scores(note, catalog)
                selected, by_pair = mixed_selection(catalog.pairs(), scores, overlap, self.mix_weight)
            else:
                selected, by_pair = likeliest(catalog.pairs(), scores, self.select_none), scores[:-1]
            raw = Selection(pairs=selected).model_dump_json()
            call = Outcome("mix" if mixed else "score", messages, raw, None, None, odds.latency_s, 0)
            out.append(Extraction([], [call], selected, dict(zip(catalog.pairs(), by_pair, strict=True))))
        return out

    def priors(self, asks: Sequence[tuple[str, Messages, tuple[str, ...]]]) -> list[tuple[float, ...] | None]:
        """Per scoring ask, the adapter's prior over its options: their mean probability after
        each blank note (``blank_notes``), which share a catalog's prompt, so a catalog is read
        ``len(BLANKS)`` times whatever its notes. None where the backend refused a blank: that
        note is read on its own probabilities."""
        blanks = [(a, m, options) for a, messages, options in asks for m in blank_notes(messages)]
        odds = self.probe("prior", blanks)
        out: list[tuple[float, ...] | None] = []
        for i in range(0, len(odds), len(BLANKS)):
            read = odds[i : i + len(BLANKS)]
            mean = (sum(ps) / len(read) for ps in zip(*(o.probs for o in read), strict=True))
            out.append(None if any(o.refused for o in read) else tuple(mean))
        return out

    def select(self, notes: Sequence[Sourced], adapter: str = "extract") -> list[Outcome]:
        """Stage 1: the supported pairs, from an enum of the catalog's ``entity.slot`` strings."""
        asks = []
        for note, catalog in notes:
            model = select_model(tuple(catalog.pairs()))
            prompt = select_messages(note, catalog)
            asks.append((adapter, prompt, model, self._schema(model), select_budget(catalog.pairs())))
        return self._ask("select", asks)

    def fill(
        self,
        items: Sequence[tuple[Note, Catalog, str]],
        adapter: str = "extract",
        values: Sequence[Sequence[str]] = (),
    ) -> list[Outcome]:
        """Stage 2: one claim per selected pair; the pair is fixed, branch/env/evidence are enums
        (a commit's note that says what it changed: a code change or a hotfix),
        a typed slot's value is decoded under its type's grammar and normalised (:func:`typed`),
        a free-text slot's as a run of its note's words (``run_grammar``).
        ``values``, per item: the values its fill may write (none given: any of its type)."""
        asks = []
        for (note, catalog, pair), allowed in zip(items, values or [()] * len(items), strict=True):
            branches = note_branches(note)
            grammar = one_of(allowed) if allowed else catalog.value_type(pair).grammar()
            model = fill_model(pair, branches, grammar, note_evidence(note))
            schema = self._schema(model)
            if schema is not None and grammar is None and (said := run_grammar(note.paragraphs())):
                # The decoder writes a run of the note; a parsed value stays any line, so an
                # oracle's gold paraphrase or an unconstrained endpoint's answer still parses.
                schema = held_to(schema, "value", said)
            prompt = fill_messages(note, catalog, pair)
            asks.append((adapter, prompt, model, schema, fill_budget(pair, branches)))
        favours = [note.text if self.favour_note else None for note, _, _ in items]
        outcomes = self._ask("fill", asks, favours)
        return [typed(o, catalog) for o, (_, catalog, _) in zip(outcomes, items, strict=True)]

    def _fill_selected(
        self,
        notes: Sequence[Sourced],
        selections: list[Extraction],
        adapter: str,
        offered: Sequence[dict[str, list[str]]] = (),
    ) -> list[Extraction]:
        """Stage 2 on each note's ``selected`` pairs (those its note can state, with
        ``typed_selection``), an ``offered`` pair's value decoded among its offered values; the
        fills join the selection's calls."""
        items, owners, values = [], [], []
        for i, ((note, catalog), sel) in enumerate(zip(notes, selections, strict=True)):
            if self.typed_selection:
                selections[i] = sel = replace(sel, selected=stated(note, catalog, sel.selected))
            for pair in sel.selected:
                items.append((note, catalog, pair))
                owners.append(i)
                values.append(offered[i].get(pair, []) if offered else [])
        for i, fill in zip(owners, self.fill(items, adapter, values), strict=True):
            selections[i].calls.append(fill)
            if isinstance(fill.output, ExtractedClaim):  # a Fill is an ExtractedClaim with enums
                selections[i].claims.append(fill.output)
        return selections
