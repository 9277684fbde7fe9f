"""``memops serve`` over real HTTP: a server process on 127.0.0.1, every route called with httpx,
a call without the key refused, bad input answered with the field that is wrong."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

KEY = "test-key-not-a-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[httpx.Client]:
    port = free_port()
    argv = [sys.executable, "-m", "memops", "serve", "--store", str(tmp_path / "m.db"), "--port", str(port)]
    env = {**os.environ, "MEMOPS_API_KEY": KEY}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {KEY}"})
    try:
        for _ in range(1200):  # up to two minutes for a slow machine to start it
            try:
                client.get("/keys")
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read()
                time.sleep(0.1)
        yield client
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        client.close()


def note(note_id: str, value: str, kind: str, at: str, **more: object) -> dict[str, object]:
    claim = {"entity": "database", "slot": "engine", "value": value, "evidence": {"type": kind}}
    return {"text": f"database {value}", "at": at, "id": note_id, "claims": [claim], **more}


def test_every_route_over_real_http(server: httpx.Client) -> None:
    added = server.post("/notes", json=note("n1", "PostgreSQL 15", "code-change", "2026-03-08T10:00:00Z"))
    assert added.status_code == 200 and added.json()["decisions"][0]["action"] == "add"
    server.post("/notes", json=note("n2", "MySQL 8", "human-note", "2026-03-09T10:00:00Z"))
    branch = note("n3", "PostgreSQL 17", "branch-experiment", "2026-03-10T10:00:00Z", branch="pg17")
    assert server.post("/notes", json=branch).json()["decisions"][0]["action"] == "add"

    keys = server.get("/keys", params={"branch": "main"}).json()
    assert [(k["value"], k["status"]) for k in keys] == [("PostgreSQL 15", "contested")]
    one = server.get("/keys/database/engine").json()
    assert [c["value"] for c in one["contested"]] == ["MySQL 8"] and one["history"][0][
        "value"
    ] == "PostgreSQL 15"
    assert (
        server.get("/keys/database/engine", params={"branch": "feature"}).json()["branch"] == "main"
    )  # its base
    assert server.get("/keys/database/size").status_code == 404
    assert server.get("/snapshot", params={"branch": "pg17"}).json() == {"database.engine": "PostgreSQL 17"}
    assert [k["value"] for k in server.get("/contested").json()] == ["PostgreSQL 15"]
    assert [k["branch"] for k in server.get("/find", params={"q": "postgresql 17"}).json()] == ["pg17"]

    resolved = server.post(
        "/resolve",
        json={"entity": "database", "slot": "engine", "value": "MySQL 8", "by": "alice", "reason": "prod"},
    )
    assert resolved.json()["action"] == "supersede" and server.get("/contested").json() == []
    assert (
        server.post("/retract", json={"note_id": "n2", "reason": "wrong service"}).json()["keys"][0]["slot"]
        == "engine"
    )
    assert server.get("/keys/database/engine").json()["value"] == "PostgreSQL 15"
    assert server.post("/drop-scope", json={"branch": "pg17"}).json() == {"dropped": 1}
    assert server.get("/snapshot", params={"branch": "pg17"}).json() == {"database.engine": "PostgreSQL 15"}


def test_a_call_without_the_key_or_with_bad_input_is_refused(server: httpx.Client) -> None:
    bare = httpx.get(f"{server.base_url}/keys")
    assert bare.status_code == 401 and "Bearer" in bare.json()["detail"]
    wrong = httpx.get(f"{server.base_url}/keys", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    bad = server.post("/notes", json=note("n1", "PostgreSQL 15", "rumour", "2026-03-08T10:00:00Z"))
    assert bad.status_code == 422 and "claims[0].evidence.type" in bad.json()["detail"]
    future = server.post("/notes", json=note("n1", "PostgreSQL 15", "code-change", "2099-01-01T00:00:00Z"))
    assert future.status_code == 422 and "future" in future.json()["detail"]
    assert server.post("/retract", json={"note_id": "n9", "reason": "x"}).status_code == 422
    assert server.get("/keys").json() == []  # nothing refused was written
    assert server.get("/openapi.json").json()["info"]["title"] == "memops memory"


def test_the_mcp_server_lists_and_calls_its_tools_with_the_sdks_client(tmp_path: Path) -> None:
    """``memops serve --mcp`` launched as an agent launches it, over stdio, by ``mcp.Client``."""
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memops", "serve", "--mcp", "--store", str(tmp_path / "m.db")]
    )

    def answer(result) -> object:
        assert not result.is_error, result.content
        return result.structured_content

    async def session() -> None:
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {
                "add_note",
                "snapshot",
                "keys",
                "get_key",
                "contested",
                "find",
                "retract",
                "resolve",
            }
            for n in (
                note("n1", "PostgreSQL 15", "code-change", "2026-03-08T10:00:00Z"),
                note("n2", "MySQL 8", "human-note", "2026-03-09T10:00:00Z"),
            ):
                args = {"text": n["text"], "at": n["at"], "note_id": n["id"], "claims": n["claims"]}
                answer(await client.call_tool("add_note", args))
            assert answer(await client.call_tool("snapshot", {})) == {"database.engine": "PostgreSQL 15"}
            contested = answer(await client.call_tool("contested", {}))["result"]  # a list comes wrapped
            assert [k["value"] for k in contested] == ["PostgreSQL 15"]
            got = answer(await client.call_tool("get_key", {"entity": "database", "slot": "engine"}))
            assert got["status"] == "contested" and got["history"][0]["value"] == "PostgreSQL 15"
            bad = await client.call_tool(
                "add_note", {"text": "x", "at": "2099-01-01T00:00:00Z", "claims": []}
            )
            assert bad.is_error and "future" in bad.content[0].text
            resolved = await client.call_tool(
                "resolve",
                {"entity": "database", "slot": "engine", "value": "MySQL 8", "by": "agent", "reason": "prod"},
            )
            assert answer(resolved)["action"] == "supersede"

    asyncio.run(session())


def test_a_key_made_for_the_server_is_readable_by_its_owner_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memops.cli.serve import api_key

    monkeypatch.delenv("MEMOPS_API_KEY", raising=False)
    key = api_key(tmp_path / "keys" / "m.db.key")
    path = tmp_path / "keys" / "m.db.key"
    assert path.read_text().strip() == key and len(key) >= 32
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["m.db.key"]  # nothing left beside it
    monkeypatch.setenv("MEMOPS_API_KEY", "given")
    assert api_key(path) == "given" and path.read_text().strip() == key


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ["serve", "--endpoint", "http://127.0.0.1:9/v1", "--endpoint-model", "m"],
            "engine=symbolic runs no model",
        ),
        (["serve", "--engine", "learned", "--endpoint-model", "m"], "given together"),
        (
            ["track", ".", "--catalog", "python-project", "--endpoint", "http://127.0.0.1:9/v1"],
            "given together",
        ),
    ],
)
def test_an_endpoint_without_its_models_or_engine_is_one_line(
    argv: list[str], error: str, tmp_path: Path
) -> None:
    """``--endpoint`` and ``--endpoint-model`` come together, and need an engine that runs a model."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "first"],
        check=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "a",
            "GIT_AUTHOR_EMAIL": "a@b",
            "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@b",
        },
    )
    argv = [str(repo) if a == "." else a for a in argv]
    where = ["--store", str(tmp_path / "m.db")] if argv[0] == "serve" else ["--out", str(tmp_path / "out")]
    done = subprocess.run(
        [sys.executable, "-m", "memops", *argv, *where], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert error in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
