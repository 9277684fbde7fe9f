"""The memory as MCP tools (the official ``mcp`` SDK), so that a coding agent reads and writes
project state: ``memops serve --mcp`` speaks MCP over its stdin and stdout, the transport an
agent launches a local tool server with.

The tools are the HTTP routes' calls (``track.server``) with the same JSON answers
(``track.forms``). Input the memory refuses comes back as a tool error naming the field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memops.memory.claims import DEFAULT_BRANCH, DEFAULT_ENV
from memops.track.forms import decision_json, key_json, key_with_history
from memops.track.memory import InputError, ProjectMemory

T = TypeVar("T")


def answered(call: Callable[[], T]) -> T:
    """The call's answer, a refusal of the memory's as a tool error the agent reads."""
    try:
        return call()
    except InputError as exc:
        raise ToolError(str(exc)) from exc


def make_tools(memory: ProjectMemory) -> MCPServer:
    tools = MCPServer(
        "memops",
        instructions=(
            "A conflict-aware memory of a software project's state: slot claims such as "
            "database.engine on a branch and environment, each current, contested or superseded, "
            "with its evidence and history. Write what a session learned with add_note; read the "
            "current state with snapshot, keys, get_key, contested and find."
        ),
    )

    add_reads(tools, memory)
    add_writes(tools, memory)
    return tools


def add_reads(tools: MCPServer, memory: ProjectMemory) -> None:
    """The queries as tools: a snapshot, keys, one key with its history, what is contested, a search."""

    @tools.tool()
    def snapshot(
        branch: str = DEFAULT_BRANCH, env: str = DEFAULT_ENV, at: str | None = None
    ) -> dict[str, str]:
        """Every slot's value (entity.slot -> value) on a branch and environment, now or at a time."""
        return answered(lambda: memory.snapshot(branch, env, at))

    @tools.tool()
    def keys(
        entity: str | None = None, branch: str | None = None, env: str | None = None
    ) -> list[dict[str, Any]]:
        """Every key with a value, with its status, evidence and contested values."""
        scope = {k: v for k, v in (("branch", branch), ("env", env)) if v is not None}
        return [key_json(s) for s in memory.keys(entity, **scope)]

    @tools.tool()
    def get_key(
        entity: str, slot: str, branch: str = DEFAULT_BRANCH, env: str = DEFAULT_ENV
    ) -> dict[str, Any]:
        """One key's value (a branch without its own takes main's) with its history."""
        found = key_with_history(memory, entity, slot, branch, env)
        if found is None:
            raise ToolError(f"no value at {entity}.{slot} [{branch}/{env}] or its base")
        return found

    @tools.tool()
    def contested() -> list[dict[str, Any]]:
        """The keys holding values beside their current one: what to check or resolve."""
        return [key_json(s) for s in memory.contested()]

    @tools.tool()
    def find(text: str, limit: int = 20) -> list[dict[str, Any]]:
        """The keys whose names or values hold every word of ``text``."""
        return [key_json(s) for s in memory.find(text, limit)]


def add_writes(tools: MCPServer, memory: ProjectMemory) -> None:
    """The writes as tools: a note, a retraction, a person's verdict."""

    @tools.tool()
    def add_note(
        text: str,
        at: str,
        claims: list[dict[str, Any]] | None = None,
        note_id: str | None = None,
        commit: str | None = None,
        branch: str | None = None,
        env: str | None = None,
    ) -> dict[str, Any]:
        """Write a note (``at``: ISO-8601 with its UTC offset). Give its claims as
        {entity, slot, value, evidence: {type, commit}}, or leave them out for the memory's
        extraction to read them; each claim's decision (add, merge, supersede, contested) comes back."""
        result = answered(
            lambda: memory.add_note(
                text, at, claims=claims, note_id=note_id, commit=commit, branch=branch, env=env
            )
        )
        return {
            "note": result.note.id,
            "decisions": [decision_json(d) for d in result.decisions],
            "error": result.error,
        }

    @tools.tool()
    def retract(note_id: str, reason: str) -> list[str]:
        """Take a note back; the keys it wrote to are decided again without it."""
        return [str(k) for k in answered(lambda: memory.retract(note_id, reason))]

    @tools.tool()
    def resolve(
        entity: str,
        slot: str,
        value: str,
        by: str,
        reason: str,
        branch: str = DEFAULT_BRANCH,
        env: str = DEFAULT_ENV,
    ) -> dict[str, Any]:
        """Settle a contested key on one of the values it holds, as ``by``, with why."""
        return decision_json(
            answered(
                lambda: memory.resolve(entity, slot, value, by=by, reason=reason, branch=branch, env=env)
            )
        )
