"""The operators, each declared once: what it is called, what it answers, how it is prompted,
how many tokens it may spend, how its training examples are built and, for a decision, the
symbolic rule it is read against.

Datasets, training, serving, the harness, the report and the Slurm arrays all iterate over
``OPERATORS`` and ``ADAPTERS``; nothing else lists them. An operator's name is also its
dataset's and its adapter's name. ``ADAPTERS`` adds ``extract-stages``, the extract adapter of
two-stage-trained extraction, and holds every adapter's training defaults (``train.py op=<name>``
starts from them; a recipe or the command line overrides them).

Two kinds exist. ``extract`` reads a note into claims and is scored by claim F1 against the
gold annotation (its oracle), directly or in two grammar-constrained stages. Every other
operator is a *decision*: its example inputs rebuild the call's arguments, the answer is one
label scored by exact match, and ``rule`` answers the same arguments symbolically.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from memops.core.sessions import Episode
from memops.memory.claims import Claim
from memops.memory.state import ACTIONS, Entry
from memops.operators.backends import Messages
from memops.operators.contract import NO_CONTRACT, ContractDraw, contract_cases, value_twins
from memops.operators.examples import (
    COMPARE_LABELS,
    Case,
    Example,
    compare_cases,
    decision_examples,
    extract_examples,
    update_cases,
)
from memops.operators.prompts import compare_messages, extract_messages, update_messages
from memops.operators.schemas import CompareOutput, ExtractOutput, UpdateOutput
from memops.operators.symbolic import (
    compare_judgment,
    open_compare,
    open_update,
    symbolic_compare,
    symbolic_update,
    update_judgment,
)


@dataclass(frozen=True)
class Operator:
    name: str
    output: type[BaseModel]
    """Validates gold answers, renders completions, constrains decoding, parses answers."""
    messages: Callable[..., Messages]
    """The chat for one call's arguments; training and inference both use it."""
    budget: int
    """Most new tokens per call: the schema's free strings leave the length open."""
    examples: Callable[..., list[Example]]
    """An episode's examples, given an rng seeded per (operator, episode), the number of
    sampled examples per label for builders that sample and, as ``contract``, how many contract
    cases a synthetic episode adds and how they are drawn (``operators.contract.ContractDraw``)."""
    arguments: Callable[[Mapping[str, Any]], tuple[Any, ...]] | None = None
    """A decision's call arguments from an example's ``inputs``."""
    rule: Callable[..., BaseModel] | None = None
    """A decision's symbolic answer on the same arguments."""
    answers: tuple[BaseModel, ...] = ()
    """A decision's answers the engine's rules can give: what reading an answer weighs."""
    open: Callable[..., tuple[BaseModel, ...]] | None = None
    """A decision's answers the rules leave open for one call's arguments, once the claims'
    fields (keys, evidence, times) have said all they can: what ``decisions=contract`` reads
    among."""
    judgment: Callable[[Any], str] | None = None
    """What a decision's answer says of the values alone (one value, two, or what the keys
    decide): a contract read weighs each open answer by every answer that says the same, so
    an adapter's view of the order, which the rules decide, does not sway its view of the
    values."""


def decision(
    name: str,
    output: type[BaseModel],
    messages: Callable[..., Messages],
    budget: int,
    cases: Callable[[Episode, random.Random, int], list[Case]],
    arguments: Callable[[Mapping[str, Any]], tuple[Any, ...]],
    rule: Callable[..., BaseModel],
    answers: tuple[BaseModel, ...],
    open: Callable[..., tuple[BaseModel, ...]],
    judgment: Callable[[Any], str],
) -> Operator:
    """A decision operator: its examples are its ``cases`` and, in a synthetic episode,
    ``contract`` cells of the decision space written in the episode's names and values, and
    for compare with ``contract.twins`` each pair's value twin (a trajectory's pairs' too with
    ``contract.real_twins``; its near twin too with ``contract.near_twins``), all prompted and
    answered by ``rule``."""

    def examples(
        episode: Episode, rng: random.Random, per_label: int, contract: ContractDraw = NO_CONTRACT
    ) -> list[Example]:
        drawn = cases(episode, rng, per_label)
        if contract.per_episode and episode.source == "synthetic":
            drawn += contract_cases(name, episode, rng, contract)
        if contract.twins and name == "compare" and (episode.source == "synthetic" or contract.real_twins):
            drawn += value_twins(drawn, episode, rng, contract.near_misses, contract.near_twins)
        return decision_examples(name, episode, drawn, messages, rule)

    return Operator(name, output, messages, budget, examples, arguments, rule, answers, open, judgment)


def _update_arguments(inputs: Mapping[str, Any]) -> tuple[Any, ...]:
    """The entry the claim meets (rebuilt from its snapshot; None at a new key), and the claim."""
    claim = Claim.model_validate(inputs["claim"])
    entry = Entry.from_snapshot(claim.key, inputs["entry"]) if inputs["entry"] is not None else None
    return entry, claim


EXTRACT = Operator(
    name="extract",
    output=ExtractOutput,
    messages=extract_messages,
    budget=512,
    examples=lambda episode, _rng, _per_label, contract=None: extract_examples(episode),
)
COMPARE = decision(
    name="compare",
    output=CompareOutput,
    messages=compare_messages,
    budget=24,
    cases=compare_cases,
    arguments=lambda inputs: (Claim.model_validate(inputs["first"]), Claim.model_validate(inputs["second"])),
    rule=symbolic_compare,
    answers=tuple(CompareOutput(relation=r, winner=w) for r, w in (a.split("/") for a in COMPARE_LABELS)),
    open=open_compare,
    judgment=compare_judgment,
)
UPDATE = decision(
    name="update",
    output=UpdateOutput,
    messages=update_messages,
    budget=16,
    cases=lambda episode, _rng, _per_label: update_cases(episode),
    arguments=_update_arguments,
    rule=symbolic_update,
    answers=tuple(UpdateOutput(action=a) for a in ACTIONS),
    open=open_update,
    judgment=update_judgment,
)

OPERATORS: dict[str, Operator] = {op.name: op for op in (EXTRACT, COMPARE, UPDATE)}
OPS: tuple[str, ...] = tuple(OPERATORS)
"""Every operator's name, each an adapter and a dataset of that name."""
DECISIONS: tuple[str, ...] = tuple(name for name, op in OPERATORS.items() if op.rule is not None)
"""The decision operators: scored by exact match, with a symbolic rule."""


@dataclass(frozen=True)
class Training:
    """An adapter's training defaults (docs/design.md §6): the GPU recipe's values for this operator."""

    max_length: int
    epochs: float = 2.0
    learning_rate: float = 2e-4
    per_device_batch: int = 1
    grad_accum: int = 8


@dataclass(frozen=True)
class Adapter:
    """One trained adapter and its dataset of the same name."""

    name: str
    training: Training = field(repr=False)
    staged: bool = False
    """Trained on the two-stage extractor's own calls beside the direct examples (its dataset is
    built with ``extract_stages=true``, and it is scored on the operator's test split)."""


LONG = Training(max_length=4096, per_device_batch=1, grad_accum=8)
SHORT = Training(max_length=1024, per_device_batch=4, grad_accum=4)
STAGES_ADAPTER = "extract-stages"
ADAPTERS: dict[str, Adapter] = {
    a.name: a
    for a in (
        Adapter(EXTRACT.name, LONG),
        Adapter(COMPARE.name, SHORT),
        Adapter(UPDATE.name, SHORT),
        Adapter(STAGES_ADAPTER, LONG, staged=True),
    )
}
"""Every adapter a run may train and serve: one per operator, and ``extract-stages``."""
MAX_ADAPTERS = len(ADAPTERS)
"""The most adapters one server holds at once (vLLM's ``--max-loras``)."""


def adapters(stages: bool) -> tuple[str, ...]:
    """The adapters (and datasets) of a run: every operator's and, with ``extract_stages``, the
    staged ones."""
    return tuple(name for name, a in ADAPTERS.items() if stages or not a.staged)
