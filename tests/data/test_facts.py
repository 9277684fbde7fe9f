"""The fact readers on the forms real repositories write: each case is one the first edition of the
mined benchmark read wrong (a respelling scored as a change, a 3-clause licence read as 2-clause,
a matrix's systems missed, flit metadata and ``setup(**args)`` skipped)."""

from __future__ import annotations

import pytest

from memops.core.values import spdx, specifier
from memops.data import facts
from memops.data.facts import (
    ci_platforms,
    coverage_threshold,
    dependency_minimums,
    docs_builder,
    line_length,
    requires_python,
    type_checkers,
)
from memops.data.licences import licence
from memops.data.project_files import Disputed, Unreadable

BSD3 = (
    "Redistribution and use in source and binary forms, with or without modification, are permitted...\n"
    "3. Neither the name of the copyright holder nor the names of its contributors may be used to\n"
    "   endorse or promote products derived from this software without specific prior permission.\n"
)
BSD3_OLD = (
    "Redistribution and use in source and binary forms, with or without modification, are permitted...\n"
    "* The names of the contributors may not be used to endorse or promote products derived from\n"
    "  this software without specific prior written permission.\n"
)
BSD2 = "Redistribution and use in source and binary forms, with or without modification, are permitted.\n"
MIT = "Permission is hereby granted, free of charge, to any person obtaining a copy of this software\n"


@pytest.mark.parametrize(
    "spellings, canonical",
    [
        (["MIT", "MIT License", "The MIT License (MIT)", "Expat"], "MIT"),
        (["Apache 2", "Apache-2.0", "Apache License, Version 2.0", "Apache Software License"], "Apache-2.0"),
        (["BSD-3-Clause", "3-clause BSD", "New BSD License", "Modified BSD"], "BSD-3-Clause"),
        (["BSD-2-Clause", "Simplified BSD", "2-clause BSD"], "BSD-2-Clause"),
        (["MIT OR Apache-2.0", "Apache-2.0 or MIT", "MIT or Apache 2"], "Apache-2.0 OR MIT"),
        (["GPLv3", "GPL-3.0", "GNU General Public License v3 (GPLv3)"], "GPL-3.0"),
        (["GPL-3.0-only", "GPLv3 only"], "GPL-3.0-only"),
        (["GPLv3+", "GNU General Public License v3 or later (GPLv3+)"], "GPL-3.0-or-later"),
        (["PSF", "Python Software Foundation License"], "PSF-2.0"),
    ],
)
def test_licence_respellings_are_one_spdx_id(spellings: list[str], canonical: str) -> None:
    assert {spdx(s) for s in spellings} == {canonical}


def test_a_bare_bsd_is_told_by_its_text_and_the_no_endorsement_clause_makes_it_3_clause() -> None:
    classifier = '[project]\nclassifiers = ["License :: OSI Approved :: BSD License"]\n'
    assert licence({"pyproject.toml": classifier, "LICENSE.rst": BSD3}) == "BSD-3-Clause"
    assert licence({"pyproject.toml": classifier, "LICENSE": BSD3_OLD}) == "BSD-3-Clause"
    assert licence({"pyproject.toml": classifier, "LICENSE": BSD2}) == "BSD-2-Clause"
    assert licence({"LICENSE": BSD3_OLD}) == "BSD-3-Clause"
    assert licence({"setup.cfg": "[metadata]\nlicense = BSD\n"}) is None, "which BSD is unknown"
    lgpl = "GNU LESSER GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007\n"
    assert licence({"setup.cfg": "[metadata]\nlicense = LGPL\n", "LICENSE": lgpl}) == "LGPL-3.0"
    assert licence({"setup.cfg": "[metadata]\nlicense = LGPL\n"}) is None


def test_metadata_and_licence_text_that_disagree_are_disputed_not_picked() -> None:
    with pytest.raises(Disputed, match=r"setup\.py says GPL-3\.0; LICENSE says MIT"):
        licence({"setup.py": "from setuptools import setup\nsetup(license='GPLv3')\n", "LICENSE": MIT})
    assert licence({"setup.py": "setup(license='MIT License')\n", "LICENSE": MIT}) == "MIT"
    dual = {"setup.py": "setup(license='MIT -or- Apache License 2.0')\n", "LICENSE.MIT": MIT}
    assert licence({**dual, "LICENSE.APACHE2": "Apache License Version 2.0"}) == "Apache-2.0 OR MIT"
    vendored = {"pyproject.toml": '[project]\nlicense = "MIT"\n', "LICENSE": MIT}
    assert licence({**vendored, "LICENSE-MPL-2.0": "Mozilla Public License Version 2.0"}) == "MIT"
    bundled = "MIT License\n\n" + MIT + "\nA vendored module's licence:\n" + BSD3
    with pytest.raises(Disputed, match="LICENSE says MIT"):
        licence({"setup.py": "setup(license='GPLv3')\n", "LICENSE": bundled})


def test_an_unparsable_setup_py_is_unknown_not_a_fall_back_to_the_licence_file() -> None:
    python2 = "from setuptools import setup\nprint 'building'\nsetup(license='BSD')\n"
    with pytest.raises(Unreadable, match=r"setup\.py"):
        licence({"setup.py": python2, "LICENSE": BSD2})


@pytest.mark.parametrize(
    "text, canonical",
    [(">= 3.8.0", ">=3.8"), ("<4, >=3.8", ">=3.8,<4"), ("^3.8", ">=3.8,<4"), ("~3.7", ">=3.7,<3.8")],
)
def test_version_specifiers_have_one_spelling(text: str, canonical: str) -> None:
    assert specifier(text) == canonical


def test_a_python_bound_below_4_says_nothing() -> None:
    for text in (">=3.6", ">=3.6, <4", "^3.6", ">=3.6.0,<4.0"):
        assert requires_python({"pyproject.toml": f'[project]\nrequires-python = "{text}"\n'}) == ">=3.6"


def test_setup_py_arguments_read_through_constants_and_a_dict_without_running_it() -> None:
    setup = (
        "from setuptools import setup\n"
        "REQUIRED = ['click>=7.0.0', 'attrs']\n"
        "args = dict(python_requires='>=3.7', license='MIT')\n"
        "setup(install_requires=REQUIRED, **args)\n"
    )
    files = {"setup.py": setup}
    assert (requires_python(files), licence(files), dependency_minimums(files)) == (
        ">=3.7",
        "MIT",
        "click>=7.0",
    )


def test_flit_metadata_states_versions_requirements_and_licence() -> None:
    flit = (
        "[tool.flit.metadata]\nmodule = 'typer'\nrequires = ['click >= 7.1.1, <7.2.0']\n"
        "requires-python = '>=3.6'\nclassifiers = ['License :: OSI Approved :: MIT License']\n"
    )
    files = {"pyproject.toml": flit}
    assert (requires_python(files), licence(files), dependency_minimums(files)) == (
        ">=3.6",
        "MIT",
        "click>=7.1.1",
    )


def test_a_matrix_of_bare_system_names_fills_runs_on() -> None:
    workflow = (
        "on: push\njobs:\n  test:\n    runs-on: ${{ matrix.os }}-latest\n    strategy:\n      matrix:\n"
        "        os: [ubuntu, macos, windows]\n        python: ['3.12']\n"
    )
    assert ci_platforms({".github/workflows/test.yml": workflow}) == "GitHub Actions on Linux, Windows, macOS"


def test_tox_running_pytest_and_a_commented_section_are_read_as_written() -> None:
    tox = (
        "[tox]\nenvlist = py3\n# [pytest]\n# addopts = -x\n[testenv]\ncommands = python -m pytest {posargs}\n"
    )
    assert facts.test_runner({"tox.ini": tox}) == "pytest, tox"
    assert (
        facts.test_runner({"tox.ini": "[tox]\nenvlist = py3\n# [pytest]\n[testenv]\ncommands = trial x\n"})
        == "tox"
    )


def test_each_runner_is_shown_by_the_first_line_that_sets_it_up() -> None:
    """``memops track`` reads the runners whole from these lines: one per runner, so a project
    that pytest configures and tox runs shows both, and the reader's list is theirs."""
    files = {
        "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n",
        "tox.ini": "[tox]\nenvlist = py3\n[testenv]\ncommands = pytest {posargs}\n",
    }
    assert facts.runner_lines(files) == [
        ("pyproject.toml", "[tool.pytest.ini_options]"),
        ("tox.ini", "[tox]"),
    ]
    assert facts.test_runner(files) == "pytest, tox"
    run_by_tox = {"tox.ini": "[testenv]\ncommands =\n    poetry run  pytest tests/\n"}  # poetry: no runner
    assert facts.runner_lines(run_by_tox) == [
        ("tox.ini", "commands = pytest tests/"),
        ("tox.ini", "[testenv]"),
    ]
    nox = {
        "noxfile.py": "import nox\n\n@nox.session\ndef tests(session):\n    session.run('pytest',  '-q')\n"
    }
    assert facts.runner_lines(nox) == [
        ("noxfile.py", "session.run('pytest', '-q')"),
        ("noxfile.py", "import nox"),
    ]
    assert facts.test_runner(nox) == "nox, pytest"
    assert facts.runner_lines({"setup.py": "setup()"}) == [] and facts.test_runner({}) is None


def test_the_new_slots_read_what_their_files_set() -> None:
    pyproject = (
        "[tool.ruff]\nline-length = 100\n[tool.black]\nline-length = 88\n[tool.mypy]\nstrict = true\n"
        "[tool.coverage.report]\nfail_under = 95\n"
    )
    files = {
        "pyproject.toml": pyproject,
        "docs/conf.py": "project = 'x'\nhtml_theme = 'furo'\n",
        "mkdocs.yml": "site_name: x\ntheme:\n  name: material\n",
        ".pre-commit-config.yaml": "repos:\n  - repo: x\n    hooks:\n      - id: pyright\n",
    }
    assert line_length(files) == "100"
    assert type_checkers(files) == "mypy, pyright"
    assert coverage_threshold(files) == "95%"
    assert docs_builder(files) == "MkDocs (material theme), Sphinx (furo theme)"
    assert coverage_threshold({"tox.ini": "[testenv]\ncommands = pytest --cov-fail-under=100\n"}) == "100%"
    assert docs_builder({"mkdocs.yml": "theme:\n  custom_dir: o\n  name: 'readthedocs'\nnav: []\n"}) == (
        "MkDocs (readthedocs theme)"
    )
    assert docs_builder({"mkdocs.yml": "site_name: x\ntheme: material\n"}) == "MkDocs (material theme)"
    assert line_length({".flake8": "[flake8]\nmax-line-length = 120\n"}) == "120"
