"""Typed slots: a catalog slot says what its values are, the fill stage can only write a value of
that form, and a claim reaches the engine in the one spelling the miner writes.

The grammar checks run xgrammar, the engine that constrains decoding in the hf backend and in
vLLM, on the fill schema the extractor sends."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import xgrammar as xgr
from pydantic import ValidationError
from xgrammar.testing import _is_grammar_accept_string

from memops.core.models import model_config
from memops.core.records import Catalog, CatalogEntry, ExtractedClaim, Note
from memops.core.sources import Sources
from memops.core.values import TEXT, ValueType, candidates, run_grammar, runs, states
from memops.data.catalog import load_catalog
from memops.data.trajectory import load_trajectories
from memops.memory.evidence import EVIDENCE_TYPES
from memops.operators.backends.hf import HFBackend
from memops.operators.backends.symbolic import SymbolicBackend
from memops.operators.learned import Extraction, LearnedOperators, Outcome, in_type, proposals, quoted, typed
from memops.operators.schemas import ExtractOutput, fill_model, held_to, json_schema, note_evidence

CATALOG = load_catalog("python-project")


def accepts(pair: str, value: str) -> bool:
    """Whether the fill grammar of ``pair`` lets a decoder write a claim with ``value``."""
    schema = json_schema(fill_model(pair, ("main",), CATALOG.value_type(pair).grammar()))
    grammar = xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False)
    entity, slot = pair.split(".")
    claim = {"entity": entity, "slot": slot, "value": value, "branch": "main", "env": "production"}
    return _is_grammar_accept_string(grammar, json.dumps({**claim, "evidence_type": "code-change"}))


def test_every_shipped_slot_is_typed() -> None:
    assert all(e.value != TEXT for e in CATALOG.entries)


def test_every_mined_gold_value_is_already_in_its_types_one_spelling() -> None:
    """The miner's readers and the types agree: each of the benchmark's gold values (distractors
    too) is a fixed point of its slot's normaliser, so training targets are in the typed form."""
    episodes = load_trajectories(Sources.of(["mined"], ["mined"]))
    claims = [(e.catalog, c) for e in episodes for s in e.sessions for c in s.claims]
    assert len(claims) > 2000
    moved = [
        (c.pair, c.value) for catalog, c in claims if catalog.value_type(c.pair).normalise(c.value) != c.value
    ]
    assert not moved
    assert {e.catalog.value_type("project.license").kind for e in episodes} == {"spdx"}


@pytest.mark.parametrize(
    ("pair", "written", "canonical"),
    [
        ("build.backend", "Hatchling", "hatchling.build"),
        ("build.backend", "setuptools.build_meta:__legacy__", "setuptools.build_meta:__legacy__"),
        ("tests.runner", "tox and py.test", "pytest, tox"),
        ("lint.formatter", "ruff-format, black", "black, ruff format"),
        ("project.license", "MIT License", "MIT"),
        ("project.license", "Apache 2 or MIT", "Apache-2.0 OR MIT"),
        ("python.supported_versions", ">= 3.8.0, <4", ">=3.8"),
        ("lint.line_length", "088", "88"),
        ("tests.coverage_threshold", "98.50", "98.5%"),
        ("docs.builder", "Sphinx  (furo theme)", "Sphinx (furo theme)"),
        ("docs.builder", "sphinx, mkdocs (material theme)", "MkDocs (material theme), Sphinx"),
        (
            "ci.platforms",
            "Travis CI; github actions on windows, ubuntu",
            "GitHub Actions on Linux, Windows; Travis CI",
        ),
        ("dependencies.minimums", "Jinja2>=3.1.0, click>=8.1", "click>=8.1, jinja2>=3.1"),
        ("dependencies.minimums", "typing_extensions~=4.5", "typing-extensions~=4.5"),
    ],
)
def test_a_respelling_is_normalised_to_the_one_spelling(pair: str, written: str, canonical: str) -> None:
    assert CATALOG.value_type(pair).normalise(written) == canonical


@pytest.mark.parametrize(
    ("pair", "phrase"),
    [
        ("project.license", "uv for dependency management (#404)"),
        ("python.supported_versions", "slsa provenance (#408)"),
        ("tests.runner", "deferred annotations"),
        ("lint.line_length", "the line length"),
        ("build.backend", "a custom backend"),
        ("docs.builder", "Sphinx, Sphinx"),  # the reader lists each builder once
        ("docs.builder", "Sphinx (furo)"),
        ("ci.platforms", "Travis CI on Linux"),  # systems are GitHub Actions' runners'
        ("dependencies.minimums", "click<9"),  # an upper bound is no minimum
    ],
)
def test_a_phrase_is_no_value_of_a_typed_slot(pair: str, phrase: str) -> None:
    """The values `memops track` wrote on pallets/itsdangerous before slots were typed."""
    assert CATALOG.value_type(pair).normalise(phrase) is None
    assert not accepts(pair, phrase)


@pytest.mark.parametrize(
    ("pair", "value"),
    [
        ("project.license", "Apache-2.0 OR MIT"),
        ("python.supported_versions", ">=2.7,!=3.0.*,!=3.1.*"),
        ("python.supported_versions", "~2.7||^3.5"),
        ("build.backend", "flit_core.buildapi"),
        ("tests.runner", "nox, pytest"),
        ("ci.platforms", "GitHub Actions on Linux, Windows, macOS; AppVeyor"),
        ("dependencies.minimums", "attrs>=17.4, six>=1.11 (+2 more)"),
        ("lint.line_length", "120"),
        ("tests.coverage_threshold", "96.57%"),
        ("docs.builder", "MkDocs, Sphinx (sphinx_immaterial theme)"),
        ("docs.builder", "Sphinx (furo theme)"),
        ("docs.builder", "MkDocs (material theme)"),
    ],
)
def test_the_fill_grammar_lets_a_value_of_the_type_through(pair: str, value: str) -> None:
    assert accepts(pair, value)


def test_a_free_slot_takes_any_line_and_a_bad_type_is_refused_with_its_field() -> None:
    free = Catalog(name="c", entries=(CatalogEntry(entity="a", slot="b", description="d"),))
    assert free.value_type("a.b").normalise("  any  words ") == "any words"
    assert (
        fill_model("a.b", ("main",), None).model_json_schema()["properties"]["value"].get("pattern") is None
    )
    for bad in (
        {"kind": "choice"},
        {"kind": "pattern"},
        {"kind": "text", "names": {"x": []}},
        {"kind": "pattern", "pattern": "("},
    ):
        with pytest.raises(ValidationError):
            CatalogEntry(entity="a", slot="b", description="d", value=ValueType.model_validate(bad))


def test_a_claim_reaches_the_engine_in_its_types_spelling_or_not_at_all() -> None:
    claim = ExtractedClaim(entity="build", slot="backend", value="hatchling", evidence_type="code-change")
    assert in_type(claim, CATALOG).value == "hatchling.build"
    wrong = claim.model_copy(update={"value": "a custom backend"})
    assert in_type(wrong, CATALOG) is None
    outcome = typed(Outcome("fill", [], "", wrong, None, 0.0, 0), CATALOG)
    assert outcome.output is None and "no choice value" in outcome.error


NOTE = Note(
    id="n1",
    at="2024-03-02T10:00:00+01:00",
    commit="abc123def",
    title="Drop Python 3.8",
    text=(
        'Changed lines: pyproject.toml: -requires-python = ">= 3.8"'
        ' | pyproject.toml: +requires-python = ">=3.9" | tox.ini: +commands = pytest {posargs}'
        " | setup.cfg: +fail_under = 98.5 | .flake8: +max-line-length = 120"
    ),
    files=("pyproject.toml", "tox.ini", "setup.cfg", ".flake8"),
)


def test_the_values_a_note_states_are_found_in_their_types_spelling() -> None:
    said = f"{NOTE.title}\n{NOTE.text}"
    assert candidates(CATALOG.value_type("python.supported_versions"), said) == [">=3.8", ">=3.9"]
    assert candidates(CATALOG.value_type("tests.runner"), said) == ["tox", "pytest", "pytest, tox"]
    assert candidates(CATALOG.value_type("tests.coverage_threshold"), said) == ["98.5%"]
    assert candidates(CATALOG.value_type("lint.line_length"), said) == ["120"]
    assert candidates(CATALOG.value_type("project.license"), said) == []
    assert candidates(TEXT, said) == []


def test_reading_the_values_again_picks_the_one_the_oracle_knows(tiny_model: Path) -> None:
    """``two-stage-read``: a fill that wrote the old specifier is read again among the note's
    values; the oracle, certain of the gold fill, moves it to the new one. On the tiny model the
    same read returns one of the options, with one probe per typed claim."""
    gold = ExtractedClaim(
        entity="python", slot="supported_versions", value=">=3.9", evidence_type="code-change"
    )
    oracle = SymbolicBackend()
    oracle.remember_extraction(NOTE, CATALOG, ExtractOutput(claims=[gold]))
    wrong = gold.model_copy(update={"value": ">=3.8"})
    [read] = LearnedOperators(oracle).read_values([(NOTE, CATALOG)], [Extraction([wrong], [])], "x")
    assert [c.value for c in read.claims] == [">=3.9"] and [c.step for c in read.calls] == ["read"]

    tiny = HFBackend.load(replace(model_config("tiny"), path=str(tiny_model)), {})
    ops = LearnedOperators(tiny, adapters=False)
    [read] = ops.read_values([(NOTE, CATALOG)], [Extraction([wrong], [])], "x")
    assert read.claims[0].value in (">=3.8", ">=3.9") and ops.calls["read"] == 1


def test_a_note_states_a_worded_slot_only_with_a_value_of_its_type() -> None:
    said = f"{NOTE.title}\n{NOTE.text}"
    assert states(CATALOG.value_type("python.supported_versions"), said)
    assert not states(CATALOG.value_type("project.license"), said)  # no licence id in the note
    assert not states(CATALOG.value_type("typing.checker"), said)
    assert states(CATALOG.value_type("ci.platforms"), said)  # a summary of the files, not a span
    assert states(TEXT, "")


def test_stage_one_keeps_no_pair_whose_type_the_note_holds_no_value_of() -> None:
    """``typed_selection``: a selection naming the Python versions and the licence is filled for
    the versions only, since the note names no licence; the oracle fills what is left."""
    gold = ExtractedClaim(
        entity="python", slot="supported_versions", value=">=3.9", evidence_type="code-change"
    )
    licence = ExtractedClaim(entity="project", slot="license", value="MIT", evidence_type="code-change")
    oracle = SymbolicBackend()  # told a licence too, which the note does not name
    oracle.remember_extraction(NOTE, CATALOG, ExtractOutput(claims=[gold, licence]))
    ops = LearnedOperators(oracle, typed_selection=True)
    chosen = Extraction([], [], ["python.supported_versions", "project.license"])
    [filled] = ops._fill_selected([(NOTE, CATALOG)], [chosen], "x")
    assert filled.selected == ["python.supported_versions"] and ops.calls["fill"] == 1
    assert [c.value for c in filled.claims] == [">=3.9"]
    ops = LearnedOperators(oracle)  # off by default: both pairs are filled
    [filled] = ops._fill_selected([(NOTE, CATALOG)], [Extraction([], [], list(chosen.selected))], "x")
    assert filled.selected == chosen.selected and ops.calls["fill"] == 2


def test_the_values_proposed_are_those_of_the_lines_the_commit_added() -> None:
    """The old specifier, on a removed line, is proposed for nothing; a licence the note does not
    name is not proposed; pytest on a line of ``tox.ini`` is run by tox, and a list of tools is
    every tool the lines name."""
    assert proposals(NOTE, CATALOG) == {
        "python.supported_versions": [">=3.9"],
        "tests.runner": ["pytest, tox"],
        "lint.line_length": ["120"],
        "tests.coverage_threshold": ["98.5%"],
    }


def test_a_dependencys_bound_and_a_stray_number_are_proposed_for_no_slot() -> None:
    """A specifier proposes Python versions only on the line of the key that sets them, and a
    number a line length only on a line that names it: pendulum's ``python-dateutil>=2.6`` and a
    copyright year were proposed as both before."""
    note = NOTE.model_copy(
        update={
            "text": NOTE.text
            + ' | pyproject.toml: +"python-dateutil>=2.6", | pyproject.toml: +"tzdata>=2020.1",'
            " | LICENSE: +Copyright (c) 2025 | setup.py: +    python_requires='>=3.10',"
            ' | pyproject.toml: +python = "^3.11" | ruff.toml: +line-length = 99'
        }
    )
    found = proposals(note, CATALOG) or {}
    assert found["python.supported_versions"] == [">=3.9", ">=3.10", ">=3.11"]
    assert found["lint.line_length"] == ["120", "99"]


def test_a_licence_is_proposed_from_a_licence_file_or_a_line_that_names_one() -> None:
    """``psf`` in a pre-commit hook's URL named the PSF licence for cookiecutter's files; a
    licence file's own lines and a ``license =`` key still state one."""
    text = (
        "Changed lines: .pre-commit-config.yaml: +- repo: https://github.com/psf/black-pre-commit-mirror"
        " | LICENSE: +MIT | setup.py: +license='Apache 2.0',"
    )
    assert proposals(NOTE.model_copy(update={"text": text}), CATALOG) == {
        "project.license": ["MIT", "Apache-2.0"]
    }


def test_a_docs_site_is_proposed_with_the_theme_a_line_sets() -> None:
    """The theme a line of ``conf.py`` or ``mkdocs.yml`` sets names the site (Sphinx and furo
    on platformdirs' files were proposed as ``Sphinx`` before); a line that adds a Sphinx
    extension or dependency names no builder, and a builder named by its own name is proposed
    where no theme is."""
    sphinx = (
        'Changed lines: docs/conf.py: +"""Configuration for Sphinx.""" | docs/conf.py: +"sphinx.ext.autodoc",'
        ' | docs/conf.py: +html_theme = "furo"'
    )
    mkdocs = "Changed lines: mkdocs.yml: +theme: | mkdocs.yml: +name: material"
    extension = 'Changed lines: docs/conf.py: +"sphinx.ext.viewcode", | pyproject.toml: +"sphinx>=7",'
    plain = 'Changed lines: docs/conf.py: +"""Configuration for Sphinx."""'
    notes = [NOTE.model_copy(update={"text": t}) for t in (sphinx, mkdocs, extension, plain)]
    assert [(proposals(n, CATALOG) or {}).get("docs.builder") for n in notes] == [
        ["Sphinx (furo theme)"],
        ["MkDocs (material theme)"],
        None,
        ["Sphinx"],
    ]


def test_ci_platforms_are_proposed_from_the_systems_a_line_puts_a_runner_on() -> None:
    """A runner's label or an ``os`` line names a system; a workflow's other lines (an action, a
    check of ``runner.os``) name none, and a CI service's own file names the service."""
    text = (
        "Changed lines: .github/workflows/ci.yml: +- ubuntu-24.04 | .github/workflows/ci.yml: +os: [macos]"
        " | .github/workflows/ci.yml: +if: runner.os == 'Windows' | .travis.yml: +language: python"
    )
    quiet = "Changed lines: .github/workflows/ci.yml: +uses: actions/checkout@v4"
    found = [proposals(NOTE.model_copy(update={"text": t}), CATALOG) or {} for t in (text, quiet)]
    assert found[0]["ci.platforms"] == ["GitHub Actions on Linux, macOS; Travis CI"]
    assert "ci.platforms" not in found[1]


def test_a_matrix_system_on_a_line_of_its_own_puts_a_runner_there() -> None:
    """A matrix's ``os`` items each on a line of their own (``- macos``, the key and ``runs-on:
    ${{ matrix.os }}-latest`` outside the diff) name the systems, as on platformdirs' move to
    GitHub Actions, where nothing was proposed; an item that is more than a system's name
    names none."""
    text = (
        "Changed lines: .github/workflows/test.yml: +- macos | .github/workflows/test.yml: +- 'windows'"
        " | .github/workflows/test.yml: +- windows/**"
        " | .github/workflows/test.yml: +- uses: actions/checkout@v2"
    )
    found = proposals(NOTE.model_copy(update={"text": text}), CATALOG) or {}
    assert found["ci.platforms"] == ["GitHub Actions on Windows, macOS"]


def test_a_specifier_glued_to_a_requirement_bounds_it_not_the_python_versions() -> None:
    """A note that lists requirements (``idna>=2.8``) states no Python versions: on four mined
    held-out notes with no commit the adapter read one as them; a specifier on its own or on
    Python's name still is one."""
    versions = CATALOG.value_type("python.supported_versions")
    bounds = "The guide still lists the minimum versions: exceptiongroup>=1.0.2, idna>=2.8, pkg[x]>=2.1."
    assert candidates(versions, bounds) == []
    assert candidates(versions, "It supports >=3.9; python>=3.10 next.") == [">=3.9", ">=3.10"]


def test_a_tools_config_file_is_proposed_only_with_a_line_that_names_a_tool_or_opens_a_section() -> None:
    """A line of ``tox.ini`` that names no test runner says nothing of the runner: the file's
    name counts only beside a tool its line names (``mypy`` here is a type checker) or on a
    section of its own (``[testenv]`` configures tox)."""
    text = "Changed lines: tox.ini: +envlist = py39 | tox.ini: +    mypy src"
    assert proposals(NOTE.model_copy(update={"text": text}), CATALOG) == {"typing.checker": ["mypy"]}
    section = NOTE.model_copy(
        update={"text": "Changed lines: tox.ini: +[testenv:lint] | setup.cfg: +[metadata]"}
    )
    assert proposals(section, CATALOG) == {"tests.runner": ["tox"]}


def test_a_tools_own_table_names_it() -> None:
    """``[tool.mypy]`` configures mypy, as the miner's readers take a ``[tool.*]`` table; a
    table of no tool of the slot names none."""
    tables = ("[tool.mypy]", "[tool.pytest.ini_options]", "[tool.setuptools_scm]")
    text = "Changed lines: " + " | ".join(f"pyproject.toml: +{table}" for table in tables)
    assert proposals(NOTE.model_copy(update={"text": text}), CATALOG) == {
        "typing.checker": ["mypy"],
        "tests.runner": ["pytest"],
    }


def test_a_note_is_filled_with_the_evidence_its_commit_can_give() -> None:
    """The lines a commit added are that commit's change: its fill types the claim a code change
    or a hotfix, never a stale observation the engine would weigh below the value it replaces;
    the same text with no commit tells of no change (an old wiki page typed a code change would
    replace the current value), and a commit's note without its paragraph may be any type."""

    def allowed(note: Note) -> list[str]:
        model = fill_model("tests.runner", ("main",), None, note_evidence(note))
        return model.model_json_schema()["properties"]["evidence_type"]["enum"]

    summary = NOTE.model_copy(update={"text": NOTE.text.removeprefix("Changed lines: ")})
    assert allowed(NOTE) == ["code-change", "incident-hotfix"]
    assert allowed(summary) == list(EVIDENCE_TYPES)
    witness = allowed(NOTE.model_copy(update={"commit": None}))
    assert witness == [t for t in EVIDENCE_TYPES if t not in ("code-change", "incident-hotfix")]
    assert "stale-observation" in witness


def test_proposed_extraction_reads_a_commits_added_lines_and_asks_the_adapter_for_any_other_note() -> None:
    """``two-stage-proposed`` on the oracle: the note that says what its commit changed is read
    for the pairs its added lines hold values of (no stage-1 call; the licence it does not name
    is not among them), and a fill that writes another value than the added one (the old
    specifier) is refused by the grammar's schema; the same text without its ``Changed lines``
    paragraph goes to the adapter's selection, less the licence it does not state, each pair's
    value read among those the text states, and keeps the fill's value."""
    told = {
        "python.supported_versions": ">=3.8",
        "project.license": "MIT",
        "tests.runner": "pytest, tox",
        "lint.line_length": "120",
        "tests.coverage_threshold": "98.5%",
    }
    claims = [
        ExtractedClaim(entity=p.split(".")[0], slot=p.split(".")[1], value=v, evidence_type="code-change")
        for p, v in told.items()
    ]
    summary = NOTE.model_copy(update={"id": "n2", "text": NOTE.text.removeprefix("Changed lines: ")})
    oracle = SymbolicBackend()
    for note in (NOTE, summary):
        oracle.remember_extraction(note, CATALOG, ExtractOutput(claims=claims))
    ops = LearnedOperators(oracle)
    [diff, other] = ops.extract([(NOTE, CATALOG), (summary, CATALOG)], "two-stage-proposed")
    del told["project.license"]
    assert diff.selected == list(proposals(NOTE, CATALOG) or {}) and diff.calls[0].step == "propose"
    refused = {k: v for k, v in told.items() if k != "python.supported_versions"}
    assert {c.pair: c.value for c in diff.claims} == refused
    assert "schema violation at value" in (diff.error or "")
    assert other.selected == list(told) and other.calls[0].step == "select"
    assert {c.pair: c.value for c in other.claims} == told
    assert ops.calls["select"] == 1 and ops.calls["fill"] == 8
    # Read among several values: in the text without its paragraph, the runner (pytest, tox, or
    # both) and the Python versions, whose old and new specifiers no paragraph tells apart; the
    # added lines offer the runners together, one value.
    assert ops.calls["read"] == 2


def test_a_requirement_list_is_read_from_the_lines_that_set_it_where_a_note_has_them() -> None:
    """The lower bounds a note states, as one list: a diff's requirement lines where the note
    has nothing else; where it also holds the lines that set the list (``memops track``'s whole
    read), those alone, so a build's ``requires`` bound on the diff stays out. A name and its
    bound are read together only unspaced (``idna >= 2.8`` is not read): in a sentence, the word
    before a specifier (``as >=3.9``) is no requirement's name."""
    deps = CATALOG.value_type("dependencies.minimums")
    diff = '+"sniffio>=1.1", | +"idna >= 2.8", | +"anyio[trio]>=4.0,<5", | +"rich<14",'
    assert candidates(deps, diff.replace(" | ", "\n")) == ["anyio>=4.0, sniffio>=1.1"]
    whole = 'requires = ["setuptools>=77"]\ndependencies = click>=8.1\ndependencies = Jinja2>=3.1.0'
    assert candidates(deps, whole) == ["click>=8.1, jinja2>=3.1"]
    assert candidates(deps, "The guide keeps them at sniffio>=1.1.") == ["sniffio>=1.1"]


def test_a_bare_bsd_is_told_by_the_licence_texts_clauses() -> None:
    """``license='BSD'`` names no SPDX id; a note that shows the LICENSE text's clauses (their
    lines marked as a licence's) states which: the third clause, ``endorse or promote``, makes it
    3-clause, as the miner's reader tells it."""
    licence = CATALOG.value_type("project.license")
    assert "endorse or promote" in licence.spellings() and "license" in licence.spellings()
    named = "license='BSD',\n\"License :: OSI Approved :: BSD License\","
    clauses = "Redistribution and use in source and binary forms, with or\nmay be used to endorse or promote"
    assert candidates(licence, named) == []
    assert candidates(licence, f"{clauses}\n{named}") == ["BSD-3-Clause"]
    assert candidates(licence, clauses.splitlines()[0]) == ["BSD-2-Clause"]


def test_a_note_that_quotes_a_value_names_its_slot_and_states_it() -> None:
    """A note that is no commit's (a wiki page, a contributor's word) quotes a value where it
    names its slot: the pair its words name most is kept beside the adapter's selection where
    the note states a value of its type, read in the type's own spelling up to the sentence's
    period; a note that states none adds no pair."""

    def note(text: str) -> Note:
        return Note(id="w", at="2026-01-01T00:00:00+00:00", title="Outdated wiki page", text=text)

    said = {
        "gives the Python versions the project supports as >=3.9.": ("python.supported_versions", ">=3.9"),
        "says where its continuous integration runs: GitHub Actions on Linux, macOS.": (
            "ci.platforms",
            "GitHub Actions on Linux, macOS",
        ),
        "keeps the minimum versions of its key dependencies at sniffio>=1.1.": (
            "dependencies.minimums",
            "sniffio>=1.1",
        ),
        "gives the maximum line length its formatter or linter is set to, in characters as 90.": (
            "lint.line_length",
            "90",
        ),
        "says its documentation is built by Sphinx (furo theme).": ("docs.builder", "Sphinx (furo theme)"),
    }
    for text, (pair, value) in said.items():
        assert quoted(note(f"A wiki page {text}"), CATALOG, []) == {pair: [value]}
    assert quoted(note("The wiki page on the Python versions is out of date."), CATALOG, []) == {}
    selected = quoted(note("A wiki page gives the licence as MIT."), CATALOG, ["tests.runner"])
    assert selected == {"project.license": ["MIT"]}  # the runner: a worded type the note never states
    free = Catalog(
        name="free",
        entries=(
            CatalogEntry(entity="approvals", slot="policy", description="who must approve a change"),
            CatalogEntry(entity="model", slot="default", description="the model a session starts with"),
        ),
    )
    summary = note("Sessions now start with the larger model by default.")
    assert quoted(summary, free, []) == {"model.default": []}  # free text: stated in any words
    assert quoted(summary, free, ["approvals.policy"]) == {"approvals.policy": [], "model.default": []}


def test_a_proposed_pairs_value_is_decoded_among_the_added_values_alone(tiny_model: Path) -> None:
    """The tiny model without adapters writes anything its grammar lets it: under
    ``two-stage-proposed`` every value of a commit's note is one its added lines state."""
    tiny = HFBackend.load(replace(model_config("tiny"), path=str(tiny_model)), {})
    ops = LearnedOperators(tiny, adapters=False)
    [found] = ops.extract([(NOTE, CATALOG)], "two-stage-proposed")
    offered = proposals(NOTE, CATALOG) or {}
    assert found.claims and all(c.value in offered[c.pair] for c in found.claims)
    assert ops.calls["fill"] == len(offered) and ops.calls["select"] == 0


RUN_NOTE = Note(
    id="n2",
    at="2024-03-02T10:00:00+01:00",
    title="Approvals move to the overlay",
    text=(
        'The model asks for "write" access, then waits; the overlay renders it.'
        "\n\nTouched files: approvals.rs."
    ),
)
FREE = Catalog(name="c", entries=(CatalogEntry(entity="a", slot="b", description="d"),))


def test_a_free_text_value_is_a_run_of_its_notes_words() -> None:
    """A run: up to 12 consecutive words of the title or one paragraph, trimmed of edge
    punctuation, never across a quote; the touched files' names are no paragraph of it."""
    every = runs(RUN_NOTE.paragraphs())
    assert {
        "Approvals move to the overlay",
        "The model asks for",
        "access",
        "then waits",
        "renders it",
    } <= set(every)
    schema = held_to(json_schema(fill_model("a.b", ("main",))), "value", run_grammar(RUN_NOTE.paragraphs()))
    assert not {"maxLength", "minLength"} & schema["properties"]["value"].keys()  # vLLM refuses them
    grammar = xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False)

    def accepts_value(value: str) -> bool:
        claim = {"entity": "a", "slot": "b", "value": value, "branch": "main", "env": "production"}
        return _is_grammar_accept_string(grammar, json.dumps({**claim, "evidence_type": "code-change"}))

    assert all(accepts_value(v) for v in every)
    for other in (
        "the overlay renders the model",
        "asks for write access",
        "then waits;",
        "approvals.rs",
        "it.",
    ):
        assert other not in every and not accepts_value(other)
    assert run_grammar(["", " , "]) is None


def test_the_fill_writes_a_free_text_value_its_note_says(tiny_model: Path) -> None:
    """The tiny base, with no adapter, under the fill's grammar on the hf backend."""
    tiny = HFBackend.load(replace(model_config("tiny"), path=str(tiny_model)), {})
    [fill] = LearnedOperators(tiny, adapters=False).fill([(RUN_NOTE, FREE, "a.b")])
    assert isinstance(fill.output, ExtractedClaim), fill.error
    assert fill.output.value in runs(RUN_NOTE.paragraphs())
