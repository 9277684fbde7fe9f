"""The memory in a store, an SQLite file and a real PostgreSQL server alike: it survives the
process, answers queries, takes corrections, keeps namespaces apart, and two processes writing to
one store lose no update and decide no note twice."""

from __future__ import annotations

import itertools
import sqlite3
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from memops import open_memory
from memops.track import InputError, ProjectMemory
from memops.track.database import write_ahead
from memops.track.store import Store

NewStore = Callable[[], str]
"""A fresh, empty store's URL."""


@pytest.fixture(params=["sqlite", "postgresql"])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> NewStore:
    if request.param == "sqlite":
        return lambda: f"sqlite:///{tmp_path / uuid.uuid4().hex}.db"
    server = request.getfixturevalue("postgres")
    return lambda: server.database(f"memops_{uuid.uuid4().hex}")


def claim(slot: str, value: str, kind: str = "code-change", **scope: str) -> dict[str, object]:
    commit = "a684a36" if kind == "code-change" else None
    return {
        "entity": "database",
        "slot": slot,
        "value": value,
        "evidence": {"type": kind, "commit": commit},
        **scope,
    }


def fill(mem: ProjectMemory) -> None:
    mem.add_note(
        "Move to PostgreSQL 15",
        "2026-03-08T10:00:00Z",
        note_id="n1",
        claims=[claim("engine", "PostgreSQL 15")],
    )
    mem.add_note("Pool of 20", "2026-03-08T11:00:00Z", note_id="n2", claims=[claim("pool_size", "20")])
    mem.add_note(
        "We run MySQL",
        "2026-03-09T10:00:00Z",
        note_id="n3",
        claims=[claim("engine", "MySQL 8", "human-note")],
    )
    mem.add_note(
        "Upgrade to 16", "2026-04-02T10:00:00Z", note_id="n4", claims=[claim("engine", "PostgreSQL 16")]
    )
    mem.add_note(
        "Try a pool of 50 on the branch",
        "2026-04-03T10:00:00Z",
        note_id="n5",
        branch="pool-experiment",
        claims=[claim("pool_size", "50", "branch-experiment")],
    )


def test_a_store_outlives_its_process_and_answers_every_query(new_store: NewStore) -> None:
    db = new_store()
    with open_memory(store=db) as mem:
        fill(mem)
    again = ProjectMemory(store=Store(db))
    assert again.seen == ["n1", "n2", "n3", "n4", "n5"]
    engine = again.get("database", "engine")
    assert (engine.value, engine.status, [c.value for c in engine.contested]) == (
        "PostgreSQL 16",
        "contested",
        ["MySQL 8"],
    )
    assert [s.key.slot for s in again.keys("database", branch="main")] == ["engine", "pool_size"]
    assert [str(s.key) for s in again.contested()] == ["database.engine [main/production]"]
    # A branch answers with its own value where it has one, its base's elsewhere.
    assert again.snapshot("pool-experiment") == {
        "database.engine": "PostgreSQL 16",
        "database.pool_size": "50",
    }
    assert again.get("database", "engine", branch="pool-experiment").key.branch == "main"
    assert again.get("database", "engine", branch="pool-experiment", base=None) is None
    assert again.snapshot(at="2026-03-20T00:00:00Z") == {
        "database.engine": "PostgreSQL 15",
        "database.pool_size": "20",
    }
    assert [s.value for s in again.find("mysql")] == ["PostgreSQL 16"]  # a contested value finds its key
    assert [s.key.slot for s in again.find("pool size")] == ["pool_size", "pool_size"]  # main and the branch
    assert again.find("") == [] and again.find('"unbalanced') == []
    assert [c.value for c in again.history("database", "engine")] == ["PostgreSQL 15", "PostgreSQL 16"]


def test_a_note_already_in_the_store_is_not_decided_again(new_store: NewStore) -> None:
    mem = ProjectMemory(store=Store(new_store()))
    first = mem.add_note("x", "2026-03-08T10:00:00Z", note_id="n1", claims=[claim("engine", "PostgreSQL 15")])
    again = mem.add_note("x", "2026-03-08T10:00:00Z", note_id="n1", claims=[claim("engine", "MySQL 8")])
    assert again.decisions == first.decisions and mem.get("database", "engine").value == "PostgreSQL 15"
    assert mem.seen == ["n1"]


def test_a_retracted_note_is_taken_back_and_its_keys_decided_again(new_store: NewStore) -> None:
    mem = ProjectMemory(store=Store(new_store()))
    fill(mem)
    assert mem.retract("n4", "the upgrade was reverted") == [("database", "engine", "main", "production")]
    engine = mem.get("database", "engine")
    assert (engine.value, [c.value for c in engine.contested]) == ("PostgreSQL 15", ["MySQL 8"])
    assert [c.value for c in mem.history("database", "engine")] == ["PostgreSQL 15"]
    assert mem.find("16") == []
    with pytest.raises(InputError, match="already retracted"):
        mem.retract("n4", "twice")
    with pytest.raises(InputError, match="no note 'n9'"):
        mem.retract("n9", "never written")
    mem.retract("n1", "wrong repository")  # the value the rules then keep is the human note's
    assert mem.get("database", "engine").value == "MySQL 8" and mem.contested() == []


def test_a_person_resolves_a_contested_key_and_the_history_keeps_it(new_store: NewStore) -> None:
    mem = ProjectMemory(store=Store(new_store()))
    fill(mem)
    decision = mem.resolve("database", "engine", "mysql 8", by="alice", reason="prod still runs MySQL")
    assert decision.action == "supersede"
    engine = mem.get("database", "engine")
    assert (engine.value, engine.status, engine.contested) == ("MySQL 8", "current", [])
    last = mem.history("database", "engine")[-1]
    assert (last.value, last.source, last.reason) == (
        "MySQL 8",
        "resolve:alice",
        "resolved by alice: prod still runs MySQL",
    )
    with pytest.raises(InputError, match="holds no live value 'Oracle'"):
        mem.resolve("database", "engine", "Oracle", by="bob", reason="guess")
    # A later retraction decides the key again with the verdict in its place.
    mem.retract("n3", "not about this service")
    assert mem.get("database", "engine").value == "PostgreSQL 16"
    assert [c.kind for c in mem.store.corrections()] == ["resolve", "retract"]


def test_a_dropped_branch_is_forgotten_and_main_is_kept(new_store: NewStore) -> None:
    mem = ProjectMemory(store=Store(new_store()))
    fill(mem)
    assert mem.drop_scope("pool-experiment", reason="merged") == 1
    assert mem.snapshot("pool-experiment") == {"database.engine": "PostgreSQL 16", "database.pool_size": "20"}
    assert [s.key.branch for s in mem.find("pool")] == ["main"]
    with pytest.raises(InputError, match="base of every branch"):
        mem.drop_scope("main")


def test_namespaces_share_a_store_and_nothing_else(new_store: NewStore) -> None:
    db = new_store()
    first = ProjectMemory(store=Store(db, namespace="repo-a"))
    fill(first)
    other = ProjectMemory(store=Store(db, namespace="repo-b"))
    assert other.seen == [] and other.keys() == [] and other.find("postgresql") == []
    other.add_note("x", "2026-03-08T10:00:00Z", note_id="n1", claims=[claim("engine", "SQLite")])
    assert first.get("database", "engine").value == "PostgreSQL 16"


def test_a_json_export_imports_into_a_store(new_store: NewStore, tmp_path: Path) -> None:
    mem = ProjectMemory()
    fill(mem)
    path = mem.save(tmp_path / "memory.json")
    store = Store(new_store())
    loaded = ProjectMemory.load(path, store=store)
    assert loaded.state == mem.state and loaded.seen == mem.seen
    # A note written after the import is retracted against the imported claims.
    loaded.add_note("17", "2026-05-01T10:00:00Z", note_id="n6", claims=[claim("engine", "PostgreSQL 17")])
    assert loaded.retract("n6", "not yet") and loaded.get("database", "engine").value == "PostgreSQL 16"
    assert loaded.get("database", "engine").status == "contested"
    with pytest.raises(InputError, match="already holds notes"):
        ProjectMemory.load(path, store=store)


def test_a_store_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    for url, error in (
        (tmp_path / "junk.db", "not a memops store"),
        (tmp_path, "a folder, not a database file"),
        ("mysql://localhost/db", "an SQLite file .* or a PostgreSQL server"),
        (
            "postgresql://memops:secret@127.0.0.1:1/db",
            r"store postgresql://memops:\*\*\*@127.0.0.1:1/db: cannot connect",
        ),
    ):
        with pytest.raises(InputError, match=error), open_memory(store=url):
            pass


WRITER = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path
    from memops import open_memory

    db, prefix, count, gate = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    kinds = ["code-change", "human-note", "config-observation", "runtime-observation"]
    with open_memory(store=db) as mem:
        (gate / prefix).touch()  # imports done, store open: wait for the other writer to be too
        deadline = time.monotonic() + 120  # a writer that died before the gate does not hang this one
        while len(list(gate.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        for i in range(count):
            offset = "+00:00" if prefix == "a" else "+01:00"
            at = f"2026-03-{1 + i % 28:02d}T{i % 24:02d}:{(i * 7) % 60:02d}:00{offset}"
            mem.add_note(
                f"note {prefix}{i}",
                at,
                note_id=f"{prefix}-{i}",
                claims=[
                    {"entity": "service", "slot": f"s{i % 7}", "value": f"{prefix}{i % 5}",
                     "evidence": {"type": kinds[i % 4]}},
                    {"entity": prefix, "slot": f"own{i % 3}", "value": str(i),
                     "evidence": {"type": "human-note"}},
                ],
            )
            time.sleep(0.01)  # a tracker reads and extracts its next note outside the lock
    """
)


def test_two_processes_writing_one_store_lose_no_update(new_store: NewStore, tmp_path: Path) -> None:
    """500 notes each, at once, to one store. The engine's outcome depends on the order
    notes come in, so the check is serializability: replayed one by one in the order the store
    committed them, the notes give exactly the state the two writers left, and every note's two
    claims were decided once. The writers start together (a gate in ``tmp_path``): one's imports
    took long enough on a busy machine for the other to write all 500 first. Each pauses between
    notes as a tracker does while it extracts: SQLite hands its lock to no one in turn, and a
    writer that took it back at once wrote all its notes while the other's retries slept."""
    db = new_store()
    gate = tmp_path / "gate"
    gate.mkdir()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), prefix, "500", str(gate)], stderr=subprocess.PIPE
        )
        for prefix in ("a", "b")
    ]
    for w in writers:
        assert w.wait(timeout=600) == 0, w.stderr.read().decode()[-2000:]
    together = ProjectMemory(store=Store(db))
    written = together.store.claims()
    notes = list(dict.fromkeys(note for note, _ in written))
    assert len(notes) == 1000 and sorted(notes) == sorted(together.seen)
    switches = sum(x[0] != y[0] for x, y in itertools.pairwise(notes))
    assert switches >= 2, switches  # each wrote while the other was writing
    serial = ProjectMemory()
    for note in notes:
        serial.add_note(
            note, "2026-03-01T00:00:00Z", note_id=note, claims=[c for n, c in written if n == note]
        )
    assert serial.state == together.state
    assert all(len(together.store.decisions(note)) == 2 for note in notes)


def test_the_async_calls_write_one_at_a_time_and_answer_as_the_memory_does(new_store: NewStore) -> None:
    import asyncio

    from memops.track import AsyncProjectMemory

    memory = ProjectMemory(store=Store(new_store()))

    async def session() -> None:
        mem = AsyncProjectMemory(memory)
        values = [f"PostgreSQL {n}" for n in range(10, 30)]
        await asyncio.gather(
            *(
                mem.add_note(
                    v, f"2026-03-{i + 1:02d}T10:00:00Z", note_id=f"n{i}", claims=[claim("engine", v)]
                )
                for i, v in enumerate(values)
            )
        )
        assert (
            await mem.get("database", "engine")
        ).value == "PostgreSQL 29"  # the latest, whatever the order
        assert await mem.snapshot() == memory.snapshot()
        assert len(await mem.history("database", "engine")) >= 2
        await mem.retract("n19", "reverted")
        assert await mem.value_at("database", "engine", "2026-12-01T00:00:00Z") == "PostgreSQL 28"

    asyncio.run(session())
    assert len(memory.seen) == 20


def test_an_environment_is_any_name_and_a_bad_one_is_refused_naming_it() -> None:
    mem = ProjectMemory()
    mem.add_note("x", "2026-03-08T10:00:00Z", env="eu-west-canary", claims=[claim("engine", "PostgreSQL 16")])
    assert mem.get("database", "engine", env="eu-west-canary").value == "PostgreSQL 16"
    with pytest.raises(InputError, match="env"):
        mem.add_note("y", "2026-03-08T10:00:00Z", env="no spaces", claims=[claim("engine", "MySQL")])
    assert len(mem.keys()) == 1


def test_a_file_switched_to_wal_while_another_process_holds_it_waits_for_the_lock(tmp_path: Path) -> None:
    # SQLite refuses the switch at once, whatever its busy timeout, when another connection
    # holds the file; two trackers opening one new store at once met this.
    path = tmp_path / "memory.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    waiting = sqlite3.connect(path, timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        waiting.execute("PRAGMA journal_mode=WAL")
    threading.Timer(0.3, holder.execute, ("COMMIT",)).start()
    write_ahead(waiting)
    assert waiting.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
