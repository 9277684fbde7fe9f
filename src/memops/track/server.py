"""The memory behind HTTP (FastAPI): an agent in another process or language reads and writes
project state through the same calls ``ProjectMemory`` offers.

Every route but the OpenAPI pages needs ``Authorization: Bearer <key>``. Writes go one at a time
in this process (the operators are not shared between threads); across processes the store's
transactions keep them apart. Bad input is a 422 whose ``detail`` names the field.
"""

from __future__ import annotations

import secrets
import threading
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from memops.memory.claims import DEFAULT_BRANCH, DEFAULT_ENV
from memops.track.forms import decision_json, key_json, key_with_history
from memops.track.memory import InputError, ProjectMemory


class NoteIn(BaseModel):
    text: str
    at: datetime | str
    title: str | None = None
    commit: str | None = None
    files: list[str] = []
    branch: str | None = None
    env: str | None = None
    id: str | None = None
    claims: list[dict[str, Any]] | None = Field(
        default=None,
        description="the note's claims, given; without them the memory's extraction reads the note",
    )


class RetractIn(BaseModel):
    note_id: str
    reason: str


class ResolveIn(BaseModel):
    entity: str
    slot: str
    value: str
    by: str
    reason: str
    branch: str = DEFAULT_BRANCH
    env: str = DEFAULT_ENV


class DropIn(BaseModel):
    branch: str
    env: str | None = None
    reason: str = "dropped"


def make_app(memory: ProjectMemory, api_key: str) -> FastAPI:
    """The routes over ``memory``; every one needs ``api_key`` as a bearer token."""
    if not api_key:
        raise ValueError("the server needs an API key")

    def authorised(request: Request) -> None:
        given = request.headers.get("authorization", "")
        if not secrets.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
            raise HTTPException(401, "a bearer token is needed: Authorization: Bearer <key>")

    app = FastAPI(
        title="memops memory",
        description="A conflict-aware project-state memory: notes in, current state out.",
        dependencies=[Depends(authorised)],
    )

    @app.exception_handler(InputError)
    async def refused(request: Request, exc: InputError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    app.include_router(reads(memory))
    app.include_router(writes(memory))
    return app


def reads(memory: ProjectMemory) -> APIRouter:
    """The queries: keys, one key with its history, a snapshot, what is contested, a search."""
    router = APIRouter()

    @router.get("/keys")
    def keys(
        entity: str | None = None, slot: str | None = None, branch: str | None = None, env: str | None = None
    ) -> list[dict[str, Any]]:
        scope = {k: v for k, v in (("slot", slot), ("branch", branch), ("env", env)) if v is not None}
        return [key_json(s) for s in memory.keys(entity, **scope)]

    @router.get("/keys/{entity}/{slot}")
    def key(entity: str, slot: str, branch: str = DEFAULT_BRANCH, env: str = DEFAULT_ENV) -> dict[str, Any]:
        found = key_with_history(memory, entity, slot, branch, env)
        if found is None:
            raise HTTPException(404, f"no value at {entity}.{slot} [{branch}/{env}] or its base")
        return found

    @router.get("/snapshot")
    def snapshot(
        branch: str = DEFAULT_BRANCH, env: str = DEFAULT_ENV, at: str | None = None
    ) -> dict[str, str]:
        return memory.snapshot(branch, env, at)

    @router.get("/contested")
    def contested() -> list[dict[str, Any]]:
        return [key_json(s) for s in memory.contested()]

    @router.get("/find")
    def find(q: str, limit: int = 20) -> list[dict[str, Any]]:
        return [key_json(s) for s in memory.find(q, limit)]

    return router


def writes(memory: ProjectMemory) -> APIRouter:
    """The writes: a note, and the corrections; one at a time, as the memory takes them."""
    router, writing = APIRouter(), threading.Lock()

    @router.post("/notes")
    def add_note(note: NoteIn) -> dict[str, Any]:
        with writing:
            result = memory.add_note(
                note.text,
                note.at,
                title=note.title,
                commit=note.commit,
                files=note.files,
                branch=note.branch,
                env=note.env,
                note_id=note.id,
                claims=note.claims,
            )
        return {
            "note": result.note.id,
            "decisions": [decision_json(d) for d in result.decisions],
            "error": result.error,
        }

    @router.post("/retract")
    def retract(body: RetractIn) -> dict[str, Any]:
        with writing:
            keys = memory.retract(body.note_id, body.reason)
        return {"keys": [k._asdict() for k in keys]}

    @router.post("/resolve")
    def resolve(body: ResolveIn) -> dict[str, Any]:
        with writing:
            decision = memory.resolve(
                body.entity,
                body.slot,
                body.value,
                by=body.by,
                reason=body.reason,
                branch=body.branch,
                env=body.env,
            )
        return decision_json(decision)

    @router.post("/drop-scope")
    def drop_scope(body: DropIn) -> dict[str, int]:
        with writing:
            return {"dropped": memory.drop_scope(body.branch, body.env, body.reason)}

    return router
