"""The symbolic operators: the engine's rules, and gold annotations as the extraction oracle.

They are the reference every learned figure is read against; ``operators.backends.symbolic``
puts the same answers behind the text interface of a backend.
"""

from __future__ import annotations

import hashlib
import json

from memops.memory.claims import Claim
from memops.memory.compare import compare, open_answers
from memops.memory.state import Entry, open_actions, rule
from memops.operators.backends import Messages
from memops.operators.schemas import CompareOutput, UpdateOutput


def symbolic_compare(first: Claim, second: Claim) -> CompareOutput:
    relation, winner = compare(first, second)
    return CompareOutput(relation=relation, winner=winner)


def symbolic_update(entry: Entry | None, claim: Claim) -> UpdateOutput:
    if entry is None or entry.current is None:
        return UpdateOutput(action="add")
    return UpdateOutput(action=rule(entry, claim)[0])


def open_compare(first: Claim, second: Claim) -> tuple[CompareOutput, ...]:
    """The compare answers the rule leaves open (``memory.compare.open_answers``)."""
    return tuple(CompareOutput(relation=r, winner=w) for r, w in open_answers(first, second))


def open_update(entry: Entry | None, claim: Claim) -> tuple[UpdateOutput, ...]:
    """The update actions the rule leaves open (``memory.state.open_actions``)."""
    return tuple(UpdateOutput(action=a) for a in open_actions(entry, claim))


def compare_judgment(answer: CompareOutput) -> str:
    """What a compare answer says of the two values once the keys match: its relation
    (``equivalent``, one value; ``conflicting``, two), whichever winner it names."""
    return answer.relation


DIFFERS = ("supersede", "contested")
"""The update actions that say the claim's value is not one the entry holds; the rule's order
chooses between them."""


def update_judgment(answer: UpdateOutput) -> str:
    """What an update answer says of the claim's value: held (``merge``), not held (either of
    ``DIFFERS``), or at a new key (``add``)."""
    return "differs" if answer.action in DIFFERS else answer.action


def prompt_key(messages: Messages) -> str:
    """A stable hash of a chat, used to key records and oracle answers."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]
