"""The memory's answers as JSON data, one form for every way out of the process (HTTP, MCP)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from memops.memory import Claim, Decision
from memops.track.memory import Change, KeyState, ProjectMemory


def claim_json(claim: Claim) -> dict[str, Any]:
    return claim.model_dump(mode="json")


def key_json(state: KeyState) -> dict[str, Any]:
    key = state.key
    return {
        "entity": key.entity,
        "slot": key.slot,
        "branch": key.branch,
        "env": key.env,
        "value": state.value,
        "status": state.status,
        "claim": claim_json(state.claim),
        "contested": [claim_json(c) for c in state.contested],
    }


def decision_json(d: Decision) -> dict[str, Any]:
    return {
        "action": d.action,
        "key": d.key._asdict(),
        "value": d.claim.value,
        "previous": d.previous.value if d.previous else None,
        "reason": d.reason,
    }


def change_json(c: Change) -> dict[str, Any]:
    return {**asdict(c), "at": c.at.isoformat()}


def key_with_history(
    memory: ProjectMemory, entity: str, slot: str, branch: str, env: str
) -> dict[str, Any] | None:
    """A key's answer (``get``, a branch without a value taking its base's) and the history of the
    key its value is held at; None without a value."""
    state = memory.get(entity, slot, branch, env)
    if state is None:
        return None
    held = state.key
    history = memory.history(held.entity, held.slot, held.branch, held.env)
    return {**key_json(state), "history": [change_json(c) for c in history]}
