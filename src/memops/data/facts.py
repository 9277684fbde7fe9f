"""What a Python project's own files say about it: one reader per fact, no code run.

A reader takes the files a catalog slot names (``read_from`` in the catalog: path -> text, at
one commit) and returns the fact's value as those files state it, or None where they state
none. Values are canonical *by meaning*, so that only a real change is a change: licences as
SPDX ids (``MIT License`` is ``MIT``; a bare ``BSD`` is told 2- or 3-clause by its licence
text), version specifiers in one order and spelling (``>= 3.8.0`` is ``>=3.8``), tools and CI
systems by one name; lists are sorted and joined with ", ".

Two outcomes are not values. A file the fact is read from that is there but does not parse (a
broken TOML, a Python 2 ``setup.py``) makes the fact unknown at that commit (``Unreadable``): the
reader does not fall back to a file of lower standing, and the miner keeps the last value, since
unknown is not a change. Two files that state different values (the metadata's licence against
the LICENSE text) make it ``Disputed``: left out, and flagged where the benchmark is described.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Callable

import yaml
from packaging.requirements import InvalidRequirement, Requirement

from memops.core.values import (
    CI_FILES,
    SYSTEMS,
    listed,
    lower_bound,
    one_line,
    percent,
    platforms,
    poetry_constraint,
    python_specifier,
    themed,
)
from memops.data.licences import licence
from memops.data.project_files import (
    Files,
    Unreadable,
    constants,
    flit_metadata,
    ini,
    parse_python,
    parse_toml,
    parse_yaml,
    pyproject,
    setup_py,
    tool,
)

Reader = Callable[[Files], "str | None"]


# -- versions ------------------------------------------------------------------------------------


def requires_python(files: Files) -> str | None:
    """``requires-python`` (PEP 621, or flit's metadata), Poetry's ``python`` dependency,
    ``python_requires`` of setup.cfg or setup.py."""
    project = pyproject(files)
    poetry = tool(files).get("poetry", {})
    value = (
        project.get("project", {}).get("requires-python")
        or flit_metadata(files).get("requires-python")
        or (poetry.get("dependencies", {}) if isinstance(poetry, dict) else {}).get("python")
        or ini(files, "setup.cfg").get("options", "python_requires", fallback=None)
        or setup_py(files).get("python_requires")
    )
    return python_specifier(value) if isinstance(value, str) and value.strip() else None


def build_backend(files: Files) -> str | None:
    """``[build-system] build-backend`` of pyproject.toml."""
    return one_line(pyproject(files).get("build-system", {}).get("build-backend"))


# -- tools ---------------------------------------------------------------------------------------


def tox_ini(files: Files) -> configparser.ConfigParser:
    """tox's configuration: tox.ini, or the ini text pyproject.toml carries under
    ``[tool.tox] legacy_tox_ini``."""
    if "tox.ini" in files:
        return ini(files, "tox.ini")
    legacy = tool(files).get("tox", {})
    legacy = legacy.get("legacy_tox_ini") if isinstance(legacy, dict) else None
    return ini({"tox.ini": legacy}, "tox.ini") if isinstance(legacy, str) else ini({}, "tox.ini")


def tox_commands(files: Files) -> str:
    """Every ``commands`` line of every tox environment, joined."""
    tox = tox_ini(files)
    return "\n".join(
        tox.get(section, "commands", fallback="")
        for section in tox.sections()
        if section.startswith("testenv")
    )


_PYTEST = re.compile(r"(?<![\w-])(?:py\.test|pytest)(?![\w-])")


def runners(files: Files) -> dict[str, tuple[str, str]]:
    """Each test runner the files set up, with the first line (path, line) that shows it:
    pytest where it is configured (pyproject, setup.cfg, pytest.ini, tox.ini) or where tox or nox
    runs it; tox where tox.ini or ``[tool.tox]`` sets it up; nox where there is a noxfile."""
    tools = tool(files)
    tox = tox_ini(files)
    tox_path = "tox.ini" if "tox.ini" in files else "pyproject.toml"
    commands = tox_commands(files)
    noxfile = files.get("noxfile.py", "")
    environments = [s for s in tox.sections() if s.startswith("testenv")]
    ways = {
        "pytest": [
            ("pytest" in tools, "pyproject.toml", "[tool.pytest.ini_options]"),
            (ini(files, "setup.cfg").has_section("tool:pytest"), "setup.cfg", "[tool:pytest]"),
            ("pytest.ini" in files, "pytest.ini", "[pytest]"),
            (tox.has_section("pytest"), tox_path, "[pytest]"),
            (
                _PYTEST.search(commands) is not None,
                tox_path,
                f"commands = {_holding(commands, _PYTEST, True)}",
            ),
            (_PYTEST.search(noxfile) is not None, "noxfile.py", _holding(noxfile, _PYTEST)),
        ],
        "tox": [
            ("tox" in tools, "pyproject.toml", "[tool.tox]"),
            (tox.has_section("tox"), tox_path, "[tox]"),
            (bool(environments), tox_path, f"[{environments[0]}]" if environments else ""),
        ],
        "nox": [("noxfile.py" in files, "noxfile.py", "import nox")],
    }
    return {
        runner: next((path, line) for holds, path, line in shown if holds)
        for runner, shown in ways.items()
        if any(holds for holds, _, _ in shown)
    }


def _holding(text: str, pattern: re.Pattern[str], from_match: bool = False) -> str:
    """The first line of ``text`` that ``pattern`` matches in, its spaces folded; ``from_match``:
    from the match on (``pytest tests/`` of ``poetry run pytest tests/``, a command whose
    launcher names no runner and would name a build backend)."""
    for line in text.splitlines():
        if found := pattern.search(line):
            return " ".join(line[found.start() if from_match else 0 :].split())
    return ""


def test_runner(files: Files) -> str | None:
    """The test runners the files set up (:func:`runners`)."""
    return listed(runners(files))


def runner_lines(files: Files) -> list[tuple[str, str]]:
    """The lines that show each test runner the files set up (:func:`runners`): how ``memops
    track`` shows the runners it reads whole, since a diff that configures pytest says nothing of
    the tox that runs it."""
    return list(runners(files).values())


LINTERS = {
    "ruff": "ruff",
    "ruff-check": "ruff",
    "flake8": "flake8",
    "pylint": "pylint",
    "pyflakes": "pyflakes",
}
FORMATTERS = {"black": "black", "ruff-format": "ruff format", "yapf": "yapf", "autopep8": "autopep8"}
TYPE_CHECKERS = {"mypy": "mypy", "pyright": "pyright", "basedpyright": "basedpyright", "pytype": "pytype"}
"""Pre-commit hook ids and ``[tool.*]`` tables, by the tool's one name."""


def hook_ids(files: Files) -> set[str]:
    if ".pre-commit-config.yaml" not in files:
        return set()
    try:
        config = parse_yaml(files[".pre-commit-config.yaml"]) or {}
    except yaml.YAMLError:
        raise Unreadable(".pre-commit-config.yaml does not parse") from None
    repos = config.get("repos", []) if isinstance(config, dict) else []
    return {
        str(hook.get("id"))
        for repo in repos
        if isinstance(repo, dict)
        for hook in repo.get("hooks", []) or []
        if isinstance(hook, dict)
    }


def linters(files: Files) -> str | None:
    """The linters pre-commit runs, those with a ``[tool.*]`` table in pyproject.toml, flake8
    with its own section or file, pylint with its rc file."""
    found = {LINTERS[h] for h in hook_ids(files) if h in LINTERS}
    found |= {name for name in ("ruff", "pylint", "flake8") if name in tool(files)}
    if ".flake8" in files or any(ini(files, f).has_section("flake8") for f in ("setup.cfg", "tox.ini")):
        found.add("flake8")
    if ".pylintrc" in files or "pylintrc" in files:
        found.add("pylint")
    return listed(found)


def formatters(files: Files) -> str | None:
    """The formatters pre-commit runs and black or yapf where pyproject.toml configures them."""
    found = {FORMATTERS[h] for h in hook_ids(files) if h in FORMATTERS}
    found |= {name for name in ("black", "yapf") if name in tool(files)}
    if ".style.yapf" in files:
        found.add("yapf")
    return listed(found)


def type_checkers(files: Files) -> str | None:
    """The type checkers pre-commit or tox runs, those with a ``[tool.*]`` table, mypy with its
    ini file or section, pyright with its config file."""
    found = {TYPE_CHECKERS[h] for h in hook_ids(files) if h in TYPE_CHECKERS}
    found |= {name for name in TYPE_CHECKERS.values() if name in tool(files)}
    commands = tox_commands(files)
    found |= {name for name in TYPE_CHECKERS.values() if re.search(rf"(?<![\w-]){name}(?![\w-])", commands)}
    if {"mypy.ini", ".mypy.ini"} & set(files) or any(
        ini(files, f).has_section("mypy") for f in ("setup.cfg", "tox.ini")
    ):
        found.add("mypy")
    if "pyrightconfig.json" in files:
        found.add("pyright")
    return listed(found)


def line_length(files: Files) -> str | None:
    """The line length the formatter or linter is set to: ruff's, else black's, else flake8's
    ``max-line-length``, as a number of characters."""
    tools = tool(files)
    for table in (tools.get("ruff"), ruff_toml(files), tools.get("black")):
        if isinstance(table, dict) and isinstance(table.get("line-length"), int):
            return str(table["line-length"])
    for name, section in ((".flake8", "flake8"), ("setup.cfg", "flake8"), ("tox.ini", "flake8")):
        value = ini(files, name).get(section, "max-line-length", fallback=None)
        if value and value.strip().isdigit():
            return str(int(value))
    return None


def ruff_toml(files: Files) -> dict:
    for name in ("ruff.toml", ".ruff.toml"):
        if name in files:
            try:
                return parse_toml(files[name])
            except tomllib.TOMLDecodeError as exc:
                raise Unreadable(f"{name}: {exc}") from None
    return {}


_FAIL_UNDER = re.compile(r"--(?:cov-)?fail-under[= ]\s*(\d+(?:\.\d+)?)")


def coverage_threshold(files: Files) -> str | None:
    """The coverage a test run must reach: ``fail_under`` of coverage's configuration
    (pyproject, .coveragerc, setup.cfg, tox.ini), else the highest ``--cov-fail-under`` or
    ``--fail-under`` a test command passes (pytest options, tox, nox, CI workflows)."""
    report = tool(files).get("coverage", {})
    report = report.get("report", {}) if isinstance(report, dict) else {}
    if isinstance(report, dict) and "fail_under" in report:
        return percent(report["fail_under"])
    for name, section in (
        (".coveragerc", "report"),
        ("setup.cfg", "coverage:report"),
        ("tox.ini", "coverage:report"),
    ):
        value = ini(files, name).get(section, "fail_under", fallback=None)
        if value:
            return percent(value)
    texts = workflows(files)
    texts += [
        files.get(name, "") for name in ("tox.ini", "noxfile.py", "pytest.ini", "setup.cfg", "pyproject.toml")
    ]
    found = [float(m) for text in texts for m in _FAIL_UNDER.findall(text)]
    return percent(max(found)) if found else None


_THEME = re.compile(r"^theme:[ \t]*[\"']?([\w.-]*)[\"']?[ \t]*((?:\n[ \t]+.*)*)", re.MULTILINE)
_NAME = re.compile(r"^[ \t]+name:[ \t]*[\"']?([\w.-]+)", re.MULTILINE)


def mkdocs_theme(text: str) -> str | None:
    """The ``theme`` of mkdocs.yml, written inline or as the ``name`` of its block (read as text:
    mkdocs.yml often carries ``!!python`` tags no safe YAML loader takes)."""
    found = _THEME.search(text)
    if not found:
        return None
    name = found.group(1) or (_NAME.search(found.group(2)) or [None, None])[1]
    return name or None


SPHINX_CONFS = ("docs/conf.py", "doc/conf.py", "docs/source/conf.py", "doc/source/conf.py")


def sphinx_theme(text: str) -> str | None:
    """``html_theme`` of a Sphinx conf.py where it is a literal."""
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise Unreadable("conf.py does not parse") from None
    theme = constants(tree).get("html_theme")
    return theme.strip() if isinstance(theme, str) and theme.strip() else None


def docs_builder(files: Files) -> str | None:
    """Sphinx where a docs conf.py is, MkDocs where mkdocs.yml is, each with the theme it sets
    (``Sphinx (furo theme)``)."""
    found = []
    for path in SPHINX_CONFS:
        if path in files:
            theme = sphinx_theme(files[path])
            found.append(themed("Sphinx", theme))
            break
    for path in ("mkdocs.yml", "mkdocs.yaml"):
        if path in files:
            theme = mkdocs_theme(files[path])
            found.append(themed("MkDocs", theme))
            break
    return listed(found)


# -- CI ------------------------------------------------------------------------------------------

_RUNNER = re.compile(r"\b(ubuntu|macos|windows)-(?:latest|\d[\w.]*)", re.IGNORECASE)
_SYSTEM = re.compile(r"(ubuntu|macos|windows)\b")
_MATRIX = re.compile(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}")


def runs_on(job: dict) -> set[str]:
    """Every machine label a job runs on, its ``${{ matrix.x }}`` filled with each value the
    job's matrix (and its ``include``) gives ``x``."""
    labels = job.get("runs-on")
    labels = [labels] if isinstance(labels, str) else [x for x in labels or [] if isinstance(x, str)]
    strategy = job.get("strategy")
    matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
    matrix = matrix if isinstance(matrix, dict) else {}
    out = set()
    for label in labels:
        names = _MATRIX.findall(label)
        if not names:
            out.add(label)
            continue
        values = matrix.get(names[0])
        values = list(values) if isinstance(values, list) else []
        values += [row.get(names[0]) for row in matrix.get("include") or [] if isinstance(row, dict)]
        for value in values:
            if isinstance(value, str):
                out.add(_MATRIX.sub(value, label, count=1))
    return out


def workflows(files: Files) -> list[str]:
    """The texts of the GitHub Actions workflows among ``files``."""
    return [text for path, text in files.items() if path.startswith(".github/workflows/")]


def workflow_systems(text: str) -> set[str]:
    """The systems a GitHub Actions workflow runs on: its jobs' labels, matrices filled in, and any
    ``ubuntu-*``, ``macos-*``, ``windows-*`` it names elsewhere."""
    labels = {m.group(0) for m in _RUNNER.finditer(text)}
    try:
        workflow = parse_yaml(text)
    except yaml.YAMLError:
        workflow = None
    jobs = workflow.get("jobs") if isinstance(workflow, dict) else None
    for job in (jobs or {}).values() if isinstance(jobs, dict) else ():
        if isinstance(job, dict):
            labels |= runs_on(job)
    return {SYSTEMS[m.group(1)] for x in labels if (m := _SYSTEM.match(x.lower()))}


def ci_platforms(files: Files) -> str | None:
    """GitHub Actions with the systems its workflows run on, and every other CI service with a
    config file (``core.values.CI_FILES``), in the one spelling of ``core.values.platforms``."""
    texts = workflows(files)
    services = {service for path, service in CI_FILES.items() if path in files}
    systems = set().union(*(workflow_systems(text) for text in texts))
    return platforms(services | ({"GitHub Actions"} if texts else set()), systems)


# -- dependencies --------------------------------------------------------------------------------


def requirements(files: Files) -> list[str]:
    """The install requirements, from the first file that lists them."""
    return stated_requirements(files)[1]


def stated_requirements(files: Files) -> tuple[str, list[str]]:
    """The first file that lists the install requirements, and them (``("", [])`` where none
    does)."""
    data = pyproject(files)
    if deps := data.get("project", {}).get("dependencies"):
        return "pyproject.toml", [str(d) for d in deps]
    if deps := flit_metadata(files).get("requires"):
        return "pyproject.toml", [str(d) for d in deps] if isinstance(deps, list) else []
    if poetry := tool(files).get("poetry", {}).get("dependencies"):
        return "pyproject.toml", [poetry_requirement(n, spec) for n, spec in poetry.items() if n != "python"]
    cfg = ini(files, "setup.cfg").get("options", "install_requires", fallback="")
    if cfg.strip():
        return "setup.cfg", [
            line.split("#")[0].strip() for line in cfg.splitlines() if line.split("#")[0].strip()
        ]
    deps = setup_py(files).get("install_requires")
    return ("setup.py", [str(d) for d in deps]) if isinstance(deps, list | tuple) else ("", [])


def requirement_lines(files: Files) -> list[tuple[str, str]]:
    """The install requirements as the lines that state them, a requirement a line after the key
    that sets them (``pyproject.toml``, ``dependencies = python-dateutil>=2.6``; a Poetry table
    as the PEP 508 requirements it means; setuptools' ``install_requires``), each spelled as
    ``packaging`` writes it: how ``memops track`` shows a list it reads whole (``STATING``)."""
    path, found = stated_requirements(files)
    key = "dependencies" if path == "pyproject.toml" else "install_requires"
    lines = []
    for text in found:
        try:
            lines.append((path, f"{key} = {Requirement(text)}"))
        except InvalidRequirement:
            continue
    return lines


def poetry_requirement(name: str, spec: object) -> str:
    """A Poetry dependency as a PEP 508 requirement (``^1.2`` is ``>=1.2,<2``)."""
    constraint = spec.get("version", "") if isinstance(spec, dict) else str(spec)
    constraint = poetry_constraint(constraint.strip())
    return f"{name}{'' if constraint == '*' else constraint}"


def dependency_minimums(files: Files) -> str | None:
    """Each install requirement with a lower bound (``>=``, ``~=``, ``>``), as ``name>=version``
    with its name normalised (PEP 503) and its version spelled by :func:`version`."""
    bounds = set()
    for text in requirements(files):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        for spec in req.specifier:
            if spec.operator in (">=", "~=", ">"):
                bounds.add(lower_bound(req.name, spec.operator, spec.version))
    return listed(bounds)


READERS: dict[str, Reader] = {
    "requires-python": requires_python,
    "build-backend": build_backend,
    "test-runner": test_runner,
    "linters": linters,
    "formatters": formatters,
    "type-checkers": type_checkers,
    "line-length": line_length,
    "coverage-threshold": coverage_threshold,
    "docs-builder": docs_builder,
    "ci-platforms": ci_platforms,
    "licence": licence,
    "dependency-minimums": dependency_minimums,
}
"""Every reader a catalog's ``read_from`` may name."""
STATING: dict[str, Callable[[Files], list[tuple[str, str]]]] = {
    "dependency-minimums": requirement_lines,
    "test-runner": runner_lines,
}
"""The readers of a whole list (the install requirements one file states, the test runners the
files set up), and the lines (path, line) that state it: what a note that reads such a slot whole
shows (``data.mine.changed_summary``), not the files' every line, of which the list is a few
among others (a build's requirements, an extra's; a tox environment's every setting)."""
KEYWORDS: dict[str, tuple[str, ...]] = {
    "requires-python": ("requires-python", "python_requires", "python="),
    "build-backend": ("build-backend",),
    "test-runner": ("pytest", "[tox]", "testenv", "nox"),
    "linters": ("id:",),
    "formatters": ("id:",),
    "type-checkers": ("mypy", "pyright", "pytype"),
    "line-length": ("line-length", "line_length", "max-line-length"),
    "coverage-threshold": ("fail_under", "fail-under"),
    "docs-builder": ("html_theme", "theme", "sphinx", "mkdocs"),
    "ci-platforms": ("runs-on", "os:", "ubuntu", "macos", "windows"),
    "licence": ("license",),
    "dependency-minimums": (),
}
"""Words that mark the line stating a reader's fact, for the note's excerpt of changed lines
where no line holds the changed value itself."""
