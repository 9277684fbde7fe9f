"""The memory as a component: notes in, state out, saved and loaded with its operators; bad
input named by its field; a backend that fails one note fails that note only."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from memops import open_memory
from memops.data.problems import DataError
from memops.operators.backends import BackendError
from memops.operators.contract import suite
from memops.operators.engine import LearnedDecide
from memops.operators.learned import LearnedOperators
from memops.operators.registry import DECISIONS, OPERATORS
from memops.track import InputError, ProjectMemory, load_catalog

DB = {"entity": "database", "slot": "engine"}


def note_claim(value: str, kind: str) -> dict[str, object]:
    return {
        **DB,
        "value": value,
        "evidence": {"type": kind, "commit": "a684a36" if kind == "code-change" else None},
    }


def test_notes_in_state_out_with_history_and_a_time() -> None:
    with open_memory() as mem:
        first = mem.add_note(
            "Move to PostgreSQL 15",
            "2026-03-08T17:38:00-07:00",
            claims=[note_claim("PostgreSQL 15", "code-change")],
        )
        mem.add_note(
            "I think we run MySQL 8",
            "2026-03-09T09:00:00+01:00",
            claims=[note_claim("MySQL 8", "human-note")],
        )
        mem.add_note(
            "Upgrade to PostgreSQL 16",
            "2026-04-02T11:00:00+02:00",
            claims=[note_claim("PostgreSQL 16", "code-change")],
        )
    assert [d.action for d in first.decisions] == ["add"]
    state = mem.get("database", "engine")
    assert state is not None and (state.value, state.status) == ("PostgreSQL 16", "contested")
    assert [c.value for c in state.contested] == ["MySQL 8"]
    assert [c.value for c in mem.history("database", "engine")] == ["PostgreSQL 15", "PostgreSQL 16"]
    assert mem.value_at("database", "engine", "2026-03-20T00:00:00+00:00") == "PostgreSQL 15"
    assert mem.value_at("database", "engine", "2026-01-01T00:00:00+00:00") is None
    assert mem.get("database", "engine", env="staging") is None
    scoped = mem.add_note(
        "Staging runs 17",
        "2026-04-03T11:00:00+02:00",
        env="staging",
        claims=[note_claim("PostgreSQL 17", "code-change")],
    )
    assert (
        scoped.decisions[0].key.env == "staging"
        and mem.get("database", "engine", env="staging").value == "PostgreSQL 17"
    )
    assert "database.engine = PostgreSQL 16" in mem.render(600)


def test_a_saved_memory_loads_equal_and_the_save_is_atomic(tmp_path: Path) -> None:
    mem = ProjectMemory()
    mem.add_note("x", "2026-03-08T17:38:00-07:00", claims=[note_claim("PostgreSQL 15", "code-change")])
    path = mem.save(tmp_path / "memory.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.json"]  # no temporary left
    again = ProjectMemory.load(path)
    assert again.state == mem.state and again.seen == mem.seen
    path.write_text(json.dumps({"version": 1, "engine": "symbolic"}))
    with pytest.raises(InputError, match="not a saved memory"):
        ProjectMemory.load(path)


def test_a_claim_with_a_bad_field_is_refused_naming_it() -> None:
    mem = ProjectMemory()
    with pytest.raises(InputError, match=r"note n1: claims\[0\]\.entity"):
        mem.add_note(
            "x",
            "2026-03-08T17:38:00-07:00",
            note_id="n1",
            claims=[{**note_claim("v", "code-change"), "entity": "Not An Id"}],
        )
    with pytest.raises(InputError, match="at"):
        mem.add_note("x", "20260308", claims=[])
    with pytest.raises(InputError, match="symbolic operators do not read notes"):
        mem.add_note("Move to PostgreSQL 15", "2026-03-08T17:38:00-07:00")
    assert len(mem.state) == 0 and mem.seen == []


def test_a_catalog_with_a_malformed_slot_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "slots.yaml"
    path.write_text(
        "catalog:\n"
        "  - {entity: build, slot: backend, description: the build backend}\n"
        "  - {entity: Build Tool, slot: x, description: y}\n"
    )
    with pytest.raises(DataError) as refused:
        load_catalog(path)
    assert f"{path}:3: catalog[1].entity:" in str(refused.value)
    assert load_catalog("python-project").pairs()[:2] == ["python.supported_versions", "build.backend"]


class FailsOnce:
    """A test double of a backend whose one call fails as a dead server's would: the one thing
    the real backends cannot be made to do on demand here. Every other call goes to the real one."""

    def __init__(self, real) -> None:
        self.real, self.failed = real, False

    def complete(self, requests):
        if not self.failed:
            self.failed = True
            raise BackendError("connection refused")
        return self.real.complete(requests)

    def probe(self, probes):
        return self.real.probe(probes)


@pytest.mark.slow
def test_the_learned_memory_on_the_tiny_model(
    trained_adapters: Path, tiny_model: Path, tmp_path: Path
) -> None:
    """The plumbing, not the quality: learned extraction writes claims from a note, the learned
    decisions drive the engine, and a memory saved and loaded keeps its operators."""
    catalog = "python-project"
    with open_memory(
        "learned",
        adapters=trained_adapters,
        model="tiny",
        decisions="contract",
        catalog=catalog,
        overrides=[f"model.path={tiny_model}"],
    ) as mem:
        assert isinstance(mem.state.decide, LearnedDecide) and mem.ops.decisions == "contract"
        real = mem.ops.backend
        mem.ops = LearnedOperators(FailsOnce(real), decisions="contract")  # type: ignore[arg-type]
        mem.decide = LearnedDecide(mem.ops, mem.failures)
        failed = mem.add_note(
            "Switch the build backend to hatchling", "2026-03-08T17:38:00-07:00", commit="a684a36"
        )
        assert failed.error and "connection refused" in failed.error and failed.decisions == []
        read = mem.add_note(
            "Switch the build backend to hatchling", "2026-03-09T17:38:00-07:00", commit="b684a36"
        )
        assert read.error is None or read.claims == []
        for claim, decision in zip(read.claims, read.decisions, strict=True):
            assert claim.evidence.commit == "b684a36" and decision.action in (
                "add",
                "merge",
                "supersede",
                "contested",
            )
        # Read within the contract, a decision is one the rules leave open, whatever the model.
        for op in DECISIONS:
            cases = [c["arguments"] for c in suite(op, "test")[::40]]
            for args, outcome in zip(cases, mem.ops.decide(OPERATORS[op], cases), strict=True):
                assert outcome.output in OPERATORS[op].open(*args)
        # Judged, update is the rule with each value judged by the compare adapter: open too.
        cases = [c["arguments"] for c in suite("update", "test")[::40]]
        judged = replace(mem.ops, decisions="judged", readings={}, calls=Counter())
        for args, outcome in zip(cases, judged.decide(OPERATORS["update"], cases), strict=True):
            assert outcome.output in OPERATORS["update"].open(*args)
        assert judged.calls["update"] == sum(len(e.live) for e, _ in cases if e is not None)  # one per value
        path = mem.save(tmp_path / "memory.json")
        loaded = ProjectMemory.load(path, mem.ops)
    assert isinstance(loaded.state.decide, LearnedDecide) and loaded.state == mem.state
    assert loaded.seen == ["a684a36", "b684a36"]
    looked = ProjectMemory.load(path)  # no operators: it answers, and reads no note
    assert looked.state == mem.state and looked.render() == mem.render()
    with pytest.raises(InputError, match="engine=learned reads notes with learned operators"):
        looked.add_note("Relicense under MIT", "2026-03-10T10:00:00Z", commit="c684a36")
    assert looked.seen == ["a684a36", "b684a36"]


def test_a_judged_memory_opens_without_an_update_adapter(
    trained_adapters: Path, tiny_model: Path, tmp_path: Path
) -> None:
    """``decisions=judged`` asks update's judgment of values of the compare adapter, so a folder
    without an update adapter (what make demo trains) opens, and update decides by the rule."""
    from memops.operators.learned import mode_adapter

    folder = tmp_path / "adapters"
    folder.mkdir()
    for op in ("compare", mode_adapter("two-stage-overlap")):
        (folder / op).symlink_to(trained_adapters / op)
    with open_memory(
        "learned",
        adapters=folder,
        model="tiny",
        decisions="judged",
        catalog="python-project",
        overrides=[f"model.path={tiny_model}"],
    ) as mem:
        cases = [c["arguments"] for c in suite("update", "test")[::40]]
        for args, outcome in zip(cases, mem.ops.decide(OPERATORS["update"], cases), strict=True):
            assert outcome.error is None and outcome.output in OPERATORS["update"].open(*args)
    reading_update = open_memory(
        "learned", adapters=folder, model="tiny", decisions="contract", overrides=[f"model.path={tiny_model}"]
    )
    with pytest.raises(BackendError, match="update"), reading_update:  # read otherwise, it is asked for
        pass


@pytest.mark.slow
def test_calibrated_decisions_take_the_offsets_their_adapters_fitted(
    trained_adapters: Path, tiny_model: Path
) -> None:
    """``decisions=calibrated`` applies the offsets each decision adapter's manifest holds."""
    from memops.operators.adapters import calibration

    with open_memory(
        "learned", adapters=trained_adapters, decisions="calibrated", overrides=[f"model.path={tiny_model}"]
    ) as mem:
        assert mem.ops.calibrations == {op: calibration(op, trained_adapters / op) for op in DECISIONS}


def saved_with_history(tmp_path: Path) -> tuple[Path, dict]:
    mem = ProjectMemory()
    mem.add_note("x", "2026-03-08T17:38:00-07:00", claims=[note_claim("PostgreSQL 15", "code-change")])
    mem.add_note("y", "2026-03-09T17:38:00-07:00", claims=[note_claim("PostgreSQL 16", "code-change")])
    path = mem.save(tmp_path / "memory.json")
    return path, json.loads(path.read_text())


def forge(data: dict, how: str) -> object:
    """Probe 9: files ``ProjectMemory.load`` accepted or failed on with a raw exception."""
    entry = data["state"]["entries"][0]
    if how == "two-confirmed":
        entry["items"][0]["status"] = "confirmed"
    elif how == "confirmed-without-current":
        entry["current"] = None
    elif how == "transition-to-a-value-never-held":
        data["state"]["transitions"][0]["new"] = "Oracle 23"
    elif how == "seen-a-string":
        data["seen"] = "abc"
    elif how == "naive-transition-time":
        data["state"]["transitions"][0]["at"] = "2026-03-09T17:38:00"
    elif how == "extra-field":
        data["surprise"] = 1
    elif how == "entries-an-int":
        data["state"]["entries"] = 3
    elif how == "state-null":
        data["state"] = None
    elif how == "top-level-list":
        return [data]
    elif how == "deep-nesting":
        return "[" * 100_000 + "]" * 100_000
    return data


@pytest.mark.parametrize(
    "how",
    [
        "two-confirmed",
        "confirmed-without-current",
        "transition-to-a-value-never-held",
        "seen-a-string",
        "naive-transition-time",
        "extra-field",
        "entries-an-int",
        "state-null",
        "top-level-list",
        "deep-nesting",
    ],
)
def test_a_forged_memory_file_is_refused_naming_what_is_wrong(tmp_path: Path, how: str) -> None:
    path, data = saved_with_history(tmp_path)
    forged = forge(data, how)
    path.write_text(forged if isinstance(forged, str) else json.dumps(forged))
    with pytest.raises(InputError, match="not a saved memory") as caught:
        ProjectMemory.load(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "text, fields, expect",
    [
        ("x", {"files": "pyproject.toml"}, "files: a list of paths"),
        (
            "x",
            {"claims": [{**note_claim("MySQL \ud800", "human-note")}]},
            r"claims\[0\]\.value: not valid text",
        ),
        (None, {}, "text: a string, not NoneType"),
        ("x", {"claims": "abc"}, "claims: a list of claims"),
        ("x", {"claims": [None]}, r"claims\[0\]: a Claim or a dict"),
        ("x", {"branch": "no such branch!"}, "branch"),
        ("x", {"env": 7}, "env: a string"),
    ],
    ids=[
        "files-a-string",
        "lone-surrogate",
        "text-none",
        "claims-a-string",
        "claims-none",
        "bad-branch",
        "env-int",
    ],
)
def test_bad_input_at_the_edge_is_one_input_error_and_writes_nothing(
    text: object, fields: dict, expect: str, tmp_path: Path
) -> None:
    """Probe 10: each was stored wrong (14 one-letter files), broke every later save, or raised
    a raw exception."""
    mem = ProjectMemory()
    claims = fields.pop("claims", [note_claim("MySQL 8", "human-note")])
    with pytest.raises(InputError, match=expect):
        mem.add_note(text, "2026-03-08T17:38:00-07:00", claims=claims, **fields)  # type: ignore[arg-type]
    assert len(mem.state) == 0 and mem.seen == []
    mem.save(tmp_path / "memory.json")  # still saves


def test_value_at_a_time_without_its_offset_is_an_input_error() -> None:
    mem = ProjectMemory()
    mem.add_note("x", "2026-03-08T17:38:00-07:00", claims=[note_claim("PostgreSQL 15", "code-change")])
    with pytest.raises(InputError, match="value_at"):
        mem.value_at("database", "engine", "2024-03-02")
    assert mem.value_at("database", "engine", "2026-03-10T00:00:00Z") == "PostgreSQL 15"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"extract": "two-stage-read"}, "reads how likely each answer is"),
        ({"extract": "two-stage-scored"}, "reads how likely each answer is"),
        ({"extract": "two-stage-proposed"}, "reads how likely each answer is"),
        ({"models": ["extract=m", "compare=m"]}, "no model for update"),
        ({"models": ["judge=m", "m"]}, r"name \['judge'\]"),
        ({"models": {"extract": "m", "compare": " ", "update": "m"}}, "no model name for compare"),
        ({"models": ()}, "an endpoint and its models are given together"),
        ({"endpoint": None}, "an endpoint and its models are given together"),
        ({"endpoint": "127.0.0.1:8000/v1"}, "not an http"),
        ({"engine": "symbolic"}, "engine=symbolic runs no model"),
        ({"decisions": "contract"}, "decisions=contract reads how likely each answer is"),
        ({"decisions": "vote"}, "decisions='vote': one of decode, read"),
    ],
)
def test_an_endpoint_the_memory_cannot_run_is_refused_in_one_line_before_any_call(
    kwargs: dict, error: str
) -> None:
    """Bring-your-own operators are checked when the memory opens: the modes that read
    likelihoods, which an endpoint does not give, and models that name no model per operator."""
    given = {"engine": "learned", "endpoint": "http://127.0.0.1:9/v1", "models": "any-model", **kwargs}
    engine = given.pop("engine")
    with pytest.raises(InputError, match=error), open_memory(engine, **given):
        pass


def test_an_endpoints_models_are_one_for_all_or_one_per_operator() -> None:
    from memops.operators.backends.endpoint import EndpointBackend, endpoint_models

    assert endpoint_models("qwen") == {"extract": "qwen", "compare": "qwen", "update": "qwen"}
    assert endpoint_models(["qwen", "compare=small/judge-7b"]) == {
        "extract": "qwen",
        "compare": "small/judge-7b",
        "update": "qwen",
    }
    backend = EndpointBackend("http://127.0.0.1:9/v1", "key", models="qwen")
    with pytest.raises(BackendError, match="cannot read how likely"):
        backend.probe([])
    assert backend._served("extract-stages") == "qwen"
