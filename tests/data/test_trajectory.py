"""Trajectory replay: the real export plus our annotations, and errors that point at the input."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from memops.core.sessions import Query
from memops.core.sources import SHIPPED, Sources
from memops.data.problems import DataError
from memops.data.trajectory import load_trajectories, load_trajectory, read_export
from tests.conftest import SHIPPED_ANNOTATIONS, shipped


def test_all_five_trajectories_replay(export_dir: Path) -> None:
    episodes = load_trajectories(shipped(export_dir))
    assert [e.id for e in episodes] == list(SHIPPED)
    for e in episodes:
        exported = len((export_dir / f"{e.id}.jsonl").read_text().splitlines())
        commits = [s for s in e.sessions if s.commit]
        assert len(commits) == exported
        assert all(1 <= len(s.claims) <= 3 for s in commits)
        distractors = [s for s in e.sessions if not s.commit]
        stale = [s for s in distractors if s.claims[0].evidence_type in ("stale-observation", "human-note")]
        assert len(stale) >= 3
        kinds = Counter(q.type for q in e.queries)
        assert len(e.queries) >= 8 and kinds["provenance"] >= 2 and kinds["temporal"] >= 2
        assert [s.at for s in e.sessions] == sorted(s.at for s in e.sessions)


def test_note_is_built_from_subject_summary_and_files(export_dir: Path) -> None:
    episode = load_trajectory("patch-guardrails", shipped(export_dir))
    first = episode.sessions[0]
    _, record = read_export(export_dir / "patch-guardrails.jsonl")[0][0]
    assert first.commit == record.short and first.at == record.author_date
    assert first.text.startswith(record.subject)
    assert "Touched files: apply_patch.rs" in first.text
    assert "sandbox" in first.text.lower()


def test_stale_distractors_end_up_contested(export_dir: Path) -> None:
    for episode in load_trajectories(shipped(export_dir)):
        mem = episode.replay()
        stale = [c for s in episode.sessions if not s.commit for c in s.memory_claims()]
        for claim in stale:
            if claim.evidence.type == "branch-experiment":
                assert mem.current(*claim.key).value == claim.value
            else:
                assert claim.value in [c.value for c in mem.contested(*claim.key)], claim


def test_entity_names_are_shared_across_trajectories(export_dir: Path) -> None:
    entities: dict[str, set[str]] = {}
    for e in load_trajectories(shipped(export_dir)):
        for entry in e.catalog.entries:
            entities.setdefault(entry.entity, set()).add(e.id)
    shared = {k for k, v in entities.items() if len(v) > 1}
    assert {"app_server", "tui"} <= shared


@pytest.fixture
def workspace(tmp_path: Path, export_dir: Path) -> tuple[Path, Path]:
    exports, annotations = tmp_path / "export", tmp_path / "ann"
    shutil.copytree(export_dir, exports)
    shutil.copytree(SHIPPED_ANNOTATIONS, annotations)
    return exports, annotations


def test_malformed_export_line_names_file_and_line(workspace: tuple[Path, Path]) -> None:
    exports, annotations = workspace
    path = exports / "model-routing.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:40]
    bad = json.loads(lines[4])
    bad["author_date"] = "yesterday"
    lines[4] = json.dumps(bad)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        load_trajectory("model-routing", Sources.of([annotations], [exports]))
    text = str(err.value)
    assert f"{path}:3: <json>: not valid JSON" in text
    assert f"{path}:5: author_date" in text


def test_unknown_evidence_type_and_missing_commit_name_line_and_field(workspace: tuple[Path, Path]) -> None:
    exports, annotations = workspace
    path = annotations / "exec-app-server.yaml"
    text = path.read_text()
    text = text.replace("evidence_type: code-change}", "evidence_type: rumour}", 1)
    text = text.replace("commit: da3689f0e", "commit: deadbeef0")
    path.write_text(text)
    rumour_line = next(i for i, line in enumerate(text.splitlines(), 1) if "rumour" in line)
    with pytest.raises(DataError) as err:
        load_trajectory("exec-app-server", Sources.of([annotations], [exports]))
    message = str(err.value)
    assert (
        f"{path}:{rumour_line}: commits[0].claims[0].evidence_type: unknown evidence type 'rumour'" in message
    )

    path.write_text(path.read_text().replace("rumour", "code-change"))
    with pytest.raises(DataError) as err:
        load_trajectory("exec-app-server", Sources.of([annotations], [exports]))
    commit_line = next(i for i, line in enumerate(text.splitlines(), 1) if "deadbeef0" in line)
    message = str(err.value)
    assert f"{path}:{commit_line}: commits[1].commit: deadbeef0 not found in" in message
    assert "da3689f0e has no annotation" in message


def test_all_problems_are_reported_at_once(workspace: tuple[Path, Path]) -> None:
    exports, annotations = workspace
    for name in ("browser-surface", "patch-guardrails"):
        path = annotations / f"{name}.yaml"
        path.write_text(path.read_text().replace("evidence_type: code-change}", "evidence_type: guess}"))
    with pytest.raises(DataError) as err:
        load_trajectories(Sources.of([annotations], [exports]), names=("browser-surface", "patch-guardrails"))
    files = {p.file.name for p in err.value.problems}
    assert files == {"browser-surface.yaml", "patch-guardrails.yaml"}
    assert len(err.value.problems) >= 20


def test_bytes_that_are_not_utf8_are_one_more_problem_with_line_and_offset(
    workspace: tuple[Path, Path],
) -> None:
    exports, annotations = workspace
    export = exports / "model-routing.jsonl"
    data = export.read_bytes()
    at = data.index(b"\n", data.index(b"\n") + 1) + 20  # inside line 3
    export.write_bytes(data[:at] + b"\xff" + data[at + 1 :])
    ann = annotations / "patch-guardrails.yaml"
    original = ann.read_bytes()
    bad_at = original.index(b"trajectory:")
    ann.write_bytes(original[:bad_at] + b"\xc3(" + original[bad_at:])
    exec_ann = annotations / "exec-app-server.yaml"
    exec_ann.write_text(
        exec_ann.read_text().replace("evidence_type: code-change}", "evidence_type: guess}", 1)
    )
    with pytest.raises(DataError) as err:
        load_trajectories(
            Sources.of([annotations], [exports]),
            names=("model-routing", "patch-guardrails", "exec-app-server"),
        )
    text = str(err.value)
    assert f"{export}:3: <encoding>: not UTF-8: byte 0xff at byte offset {at}" in text
    bad_line = original.count(b"\n", 0, bad_at) + 1
    assert f"{ann}:{bad_line}: <encoding>: not UTF-8: byte 0xc3 at byte offset {bad_at}" in text
    assert f"{exec_ann}:" in text  # the other files' problems are still listed


def test_duplicates_in_an_export_or_annotation_are_named_with_both_lines(
    workspace: tuple[Path, Path],
) -> None:
    exports, annotations = workspace
    export = exports / "browser-surface.jsonl"
    lines = export.read_text().splitlines()
    bad_short = json.loads(lines[3])
    bad_short["short"] = "0" * 9
    lines[3] = json.dumps(bad_short)
    export.write_text("\n".join([*lines, lines[1]]) + "\n")
    ann = annotations / "browser-surface.yaml"
    text = ann.read_text()
    data = yaml.safe_load(text)
    first_commit, first_query = data["commits"][0]["commit"], data["queries"][0]["id"]
    text = text.replace(f"id: {data['queries'][1]['id']}\n", f"id: {first_query}\n", 1)
    block = text[text.index("  - commit: ") : text.index("  - commit: ", text.index("  - commit: ") + 1)]
    text = text.replace("distractors:", block.rstrip("\n") + "\ndistractors:", 1)
    ann.write_text(text)
    with pytest.raises(DataError) as err:
        load_trajectory("browser-surface", Sources.of([annotations], [exports]))
    message = str(err.value)
    twice = json.loads(lines[1])["short"]
    assert f"{export}:{len(lines) + 1}: commit: {twice} duplicate at lines 2 and {len(lines) + 1}" in message
    assert f"{export}:4: short: {'0' * 9} is not {bad_short['commit'][:9]}" in message
    assert "ambiguous" not in message
    assert f"{first_commit} duplicates commits[0]" in message
    assert f"queries[1]: {first_query} duplicates queries[0]" in message


@pytest.mark.parametrize(
    ("answer", "token", "whole"),
    [
        ("Python 3.10 and later", "3.1", False),
        ("Python 3.1.2", "3.1", False),
        ("3.1, 3.2", "3.1", True),
        ("supports 3.1.", "3.1", True),
        ("C++", "C", False),
        ("permissions.fileSystem.entries", "filesystem.entries", True),
    ],
)
def test_query_tokens_match_whole_tokens_only(answer: str, token: str, whole: bool) -> None:
    target = {"entity": "python", "slot": "versions"}
    required = Query(id="q", type="current-state", question="?", target=target, required=(token,))
    forbidden = Query(id="q", type="current-state", question="?", target=target, forbidden=(token,))
    assert required.accepts(answer) is whole
    assert forbidden.accepts(answer) is not whole


@pytest.mark.parametrize(
    ("required", "problem"),
    [
        ('["nothing like it"]', "gold replay answers 'function'"),
        # Only forbidden tokens: an engine that knows nothing answers "" and would score as right.
        ("[]", "accepts an empty answer"),
    ],
)
def test_a_query_problem_is_named_with_file_and_line(
    workspace: tuple[Path, Path], required: str, problem: str
) -> None:
    from memops.data.config import DataConfig
    from memops.data.pipeline import validate

    exports, annotations = workspace
    path = annotations / "model-routing.yaml"
    text = path.read_text().replace('required: ["function"]', f"required: {required}")
    path.write_text(text)
    line = next(n for n, x in enumerate(text.splitlines(), 1) if "id: model-routing-q3" in x)
    with pytest.raises(DataError) as err:
        validate(DataConfig(annotations=[str(annotations)], exports=[str(exports)]))
    assert f"{path}:{line}: queries[model-routing-q3]: {problem}" in str(err.value)


def test_value_at_without_a_time_is_named_with_file_and_line(workspace: tuple[Path, Path]) -> None:
    exports, annotations = workspace
    path = annotations / "model-routing.yaml"
    lines = path.read_text().splitlines()
    n = next(i for i, x in enumerate(lines) if "ask: value_at" in x)
    lines[n] = re.sub(r', at: "[^"]*"', "", lines[n])
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        load_trajectory("model-routing", Sources.of([annotations], [exports]))
    assert f"{path}:{n + 1}: queries" in str(err.value) and "value_at needs at" in str(err.value)
