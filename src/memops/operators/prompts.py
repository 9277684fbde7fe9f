"""Chat prompts of the three operators.

Training data and inference both call these builders, so the string a model is trained on is
the string it is asked at run time. Claims are shown with the facts the update rule uses
(evidence type, commit, time) and never with the numeric score: learning the weighting is the
operator's job.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel

from memops.core.records import Catalog, Note
from memops.memory.claims import Claim
from memops.memory.lines import escape_line
from memops.memory.state import Entry
from memops.operators.schemas import Selection

Messages = list[dict[str, str]]

EXTRACT_SYSTEM = (
    "You extract project-state claims from a session note. Use only (entity, slot) pairs from the "
    "catalog. For each claim give the value the note supports, the branch (default main), the "
    "environment (production, staging, preview or dev; default production) and the evidence type: "
    "code-change, incident-hotfix, config-observation, runtime-observation, branch-experiment, "
    "human-note or stale-observation. Ignore chatter. Answer with JSON only."
)
COMPARE_SYSTEM = (
    "You compare two project-state claims: FIRST is in memory, SECOND is incoming. The relation is "
    "unrelated (different entity or slot), different_scope (same slot, other branch or environment), "
    "equivalent (same slot and scope, same value) or conflicting. For a conflict the winner is the "
    "claim with stronger evidence, then the more recent one, else none. Answer with JSON only."
)
UPDATE_SYSTEM = (
    "You update a project-state memory with an incoming claim. Given the memory entry at the claim's "
    "key, answer add (no entry), merge (same value as the current one or as a contested one that "
    "stays contested), supersede (the claim replaces the current value) or contested (the claim is "
    "kept as a contested observation). Answer with JSON only."
)


HEADER_LINE = re.compile(r"^(?=(?:Date|Commit|Title|Files):)", re.MULTILINE)
"""A line of a note's own text that would read as one of ``note_block``'s header fields."""


def quoted_headers(text: str) -> str:
    """The note's text with every line that would read as a header field quoted (``> Date: …``),
    so that only the real header says when, where and what a note is; other text is unchanged."""
    return HEADER_LINE.sub("> ", text)


def note_block(note: Note) -> str:
    title = escape_line(note.title)
    lines = [f"Date: {note.at.isoformat()}", f"Commit: {note.commit or 'none'}", f"Title: {title}"]
    if note.files:
        lines.append(f"Files: {escape_line(', '.join(note.files))}")
    lines += ["", quoted_headers(note.text)]
    return "\n".join(lines)


def catalog_block(catalog: Catalog) -> str:
    return "\n".join(f"- {e.pair}: {e.description}" for e in catalog.entries)


NOTE_HEADER = "\n\nNote:\n"
"""Where an extract prompt's user message turns from the catalog to the note."""


def extract_messages(note: Note, catalog: Catalog) -> Messages:
    user = f"Catalog:\n{catalog_block(catalog)}{NOTE_HEADER}{note_block(note)}"
    return [{"role": "system", "content": EXTRACT_SYSTEM}, {"role": "user", "content": user}]


SELECT_TASK = (
    "Step 1 of 2: list the catalog pairs (entity.slot) whose value this note states, at most 6. "
    "Answer with JSON only."
)


def fill_task(pair: str) -> str:
    return f"Step 2 of 2: give the claim this note makes about {pair}. Answer with JSON only."


def with_task(messages: Messages, task: str) -> Messages:
    """An extract prompt turned into one step of the two-stage extractor: the task is the last
    paragraph of the user message, so every step of one note shares the prompt up to it (and a
    server's prefix cache holds the catalog and the note once)."""
    return [*messages[:-1], {"role": "user", "content": f"{messages[-1]['content']}\n\n{task}"}]


def select_messages(note: Note, catalog: Catalog) -> Messages:
    """Stage 1 of the two-stage extractor: the extract prompt, asking only for the pairs."""
    return with_task(extract_messages(note, catalog), SELECT_TASK)


def selection_answers(pairs: Sequence[str]) -> tuple[str, ...]:
    """Stage 1's answers of one pair each, and the empty answer last, written as the stage
    examples write them: the options a scoring selection weighs after ``select_messages``."""
    return tuple(Selection(pairs=one).model_dump_json() for one in [*([p] for p in pairs), []])


def right_answers(pairs: Sequence[str]) -> tuple[str, ...]:
    """The ``selection_answers`` a note stating ``pairs`` makes right: each stated pair's
    one-pair answer, or the empty answer when it states none."""
    answers = selection_answers(pairs)
    return answers[:-1] or answers


def fill_messages(note: Note, catalog: Catalog, pair: str) -> Messages:
    """Stage 2 of the two-stage extractor: the extract prompt, asking for one pair's claim."""
    return with_task(extract_messages(note, catalog), fill_task(pair))


CATALOG_LINE = re.compile(r"^- ([^:\s]+\.[^:\s]+): (.*)$", re.MULTILINE)


BLANKS = ("N/A", "", "[none]")
"""What a note that says nothing says: its title and text in the prompts that read how likely
each stage-1 answer is before any note is read (``blank_notes``)."""
BLANK_AT = "2000-01-01T00:00:00+00:00"


def blank_notes(messages: Messages) -> list[Messages]:
    """A stage prompt with its note replaced by each of the ``BLANKS`` (one date, no commit, no
    files), its catalog and task kept: what the adapter answers with nothing to read is its own
    prior over the answers, the same for every note of a catalog (contextual calibration)."""
    head, rest = messages[-1]["content"].split(NOTE_HEADER, 1)
    task = rest.rsplit("\n\n", 1)[1]  # the task is the last paragraph (``with_task``)
    out = []
    for blank in BLANKS:
        note = note_block(Note(id="blank", at=BLANK_AT, title=blank, text=blank))
        out.append(
            with_task([*messages[:-1], {"role": "user", "content": f"{head}{NOTE_HEADER}{note}"}], task)
        )
    return out


def catalog_entries(messages: Messages) -> dict[str, str]:
    """Each ``entity.slot`` pair an extract prompt's catalog lists, with its description
    (``catalog_block`` read back): what a scoring selection asks about when all it holds is a
    dataset's prompt."""
    user = messages[-1]["content"]
    return dict(CATALOG_LINE.findall(user[: user.index(NOTE_HEADER)]))


def catalog_pairs(messages: Messages) -> list[str]:
    """The pairs of ``catalog_entries``, in catalog order."""
    return list(catalog_entries(messages))


def prompt_note(messages: Messages) -> str:
    """The note block (``note_block``) of a direct extract prompt."""
    return messages[-1]["content"].split(NOTE_HEADER, 1)[1]


def claim_block(claim: Claim) -> str:
    commit = claim.evidence.commit or "none"
    return (
        f"{claim.entity}.{claim.slot} [branch {claim.branch}, env {claim.env}] = {escape_line(claim.value)}\n"
        f"evidence: {claim.evidence.type}; commit: {commit}; at: {claim.at.isoformat()}"
    )


SECOND_HEADER = "\n\nSECOND:\n"
"""Where a compare prompt's user message turns from the first claim to the second."""
INCOMING_HEADER = "\n\nIncoming claim:\n"
"""Where an update prompt's user message turns from the entry to the incoming claim."""


def compare_messages(first: Claim, second: Claim) -> Messages:
    user = f"FIRST:\n{claim_block(first)}{SECOND_HEADER}{claim_block(second)}"
    return [{"role": "system", "content": COMPARE_SYSTEM}, {"role": "user", "content": user}]


def entry_block(entry: Entry | None) -> str:
    """The entry as the rule sees it: the current value's strongest evidence and latest sighting."""
    if entry is None or entry.current is None:
        return "(no entry)"
    cur = entry.current
    lines = [
        f"current: {escape_line(cur.value)}",
        f"  strongest evidence: {cur.best.evidence.type}; commit: {cur.best.evidence.commit or 'none'}",
        f"  last observed: {cur.at.isoformat()}",
    ]
    for item in entry.contested():
        value = escape_line(item.value)
        lines.append(f"contested: {value} ({item.best.evidence.type}, {item.at.isoformat()})")
    return "\n".join(lines)


def update_messages(entry: Entry | None, claim: Claim) -> Messages:
    user = f"Memory entry:\n{entry_block(entry)}{INCOMING_HEADER}{claim_block(claim)}"
    return [{"role": "system", "content": UPDATE_SYSTEM}, {"role": "user", "content": user}]


def completion(output: BaseModel) -> Messages:
    return [{"role": "assistant", "content": output.model_dump_json()}]
