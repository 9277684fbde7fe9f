"""What a Python project's own files say about it: one reader per fact, no code run.

A reader takes the files a catalog slot names (``read_from`` in the catalog: path -> text, at
one commit) and returns the fact's value as those files state it, or None where they state
none. A file that does not parse (a broken TOML, a ``setup.py`` whose arguments are computed)
states nothing; the next file in the slot's list may. Values are canonical, so the same
statement written twice is one value and only a real change is a change: lists are sorted and
joined with ", ", whitespace is collapsed.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import re
import tomllib
from collections.abc import Callable, Mapping

import yaml
from packaging.requirements import InvalidRequirement, Requirement

from memops.core.records import MAX_VALUE_CHARS

Files = Mapping[str, str]
"""Path (relative to the repository root) -> text, at one commit."""
Reader = Callable[[Files], "str | None"]


def pyproject(files: Files) -> dict:
    try:
        return tomllib.loads(files.get("pyproject.toml", ""))
    except tomllib.TOMLDecodeError:
        return {}


def ini(files: Files, name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(files.get(name, ""))
    except configparser.Error:
        return configparser.ConfigParser(interpolation=None)
    return parser


def setup_py(files: Files) -> dict[str, object]:
    """The literal keyword arguments of the ``setup(...)`` call in ``setup.py``: what can be read
    without running it (a computed argument is left out)."""
    try:
        tree = ast.parse(files.get("setup.py", ""))
    except (SyntaxError, ValueError):
        return {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            found = {}
            for kw in node.keywords:
                try:
                    found[kw.arg] = ast.literal_eval(kw.value)
                except (ValueError, TypeError, SyntaxError, RecursionError):
                    continue
            return found
    return {}


def matching(files: Files, pattern: str) -> list[str]:
    return sorted(p for p in files if fnmatch.fnmatchcase(p, pattern))


def one_line(value: object) -> str | None:
    text = " ".join(str(value).split()) if isinstance(value, str) else None
    return text[:MAX_VALUE_CHARS] if text else None


def listed(items: set[str] | list[str]) -> str | None:
    """A list fact's value: sorted, joined, cut at whole items to fit a claim
    (``(+N more)`` says how many were left out)."""
    items = sorted(set(items), key=str.lower)
    for keep in range(len(items), 0, -1):
        more = f" (+{len(items) - keep} more)" if keep < len(items) else ""
        text = ", ".join(items[:keep]) + more
        if len(text) <= MAX_VALUE_CHARS:
            return text
    return None


def requires_python(files: Files) -> str | None:
    """``requires-python`` (PEP 621), Poetry's ``python`` dependency, ``python_requires`` of
    setup.cfg or setup.py; spaces dropped (``>= 3.8`` and ``>=3.8`` are one statement)."""
    project = pyproject(files)
    value = (
        project.get("project", {}).get("requires-python")
        or project.get("tool", {}).get("poetry", {}).get("dependencies", {}).get("python")
        or ini(files, "setup.cfg").get("options", "python_requires", fallback=None)
        or setup_py(files).get("python_requires")
    )
    return one_line(value.replace(" ", "")) if isinstance(value, str) else None


def build_backend(files: Files) -> str | None:
    """``[build-system] build-backend`` of pyproject.toml."""
    return one_line(pyproject(files).get("build-system", {}).get("build-backend"))


def test_runner(files: Files) -> str | None:
    """pytest where it is configured (pyproject, setup.cfg, pytest.ini, tox.ini), tox where
    tox.ini or ``[tool.tox]`` sets it up, nox where there is a noxfile."""
    tool = pyproject(files).get("tool", {})
    tox = ini(files, "tox.ini")
    found = set()
    if (
        "pytest" in tool
        or ini(files, "setup.cfg").has_section("tool:pytest")
        or "pytest.ini" in files
        or tox.has_section("pytest")
    ):
        found.add("pytest")
    if "tox" in tool or tox.has_section("tox") or any(s.startswith("testenv") for s in tox.sections()):
        found.add("tox")
    if "noxfile.py" in files:
        found.add("nox")
    return listed(found)


LINTERS = {
    "ruff": "ruff",
    "ruff-check": "ruff",
    "flake8": "flake8",
    "pylint": "pylint",
    "pyflakes": "pyflakes",
}
FORMATTERS = {"black": "black", "ruff-format": "ruff format", "yapf": "yapf", "autopep8": "autopep8"}
"""Pre-commit hook ids and ``[tool.*]`` tables, by the tool's name."""


def hook_ids(files: Files) -> set[str]:
    try:
        config = yaml.safe_load(files.get(".pre-commit-config.yaml", "")) or {}
    except yaml.YAMLError:
        return set()
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
    found |= {name for name in ("ruff", "pylint", "flake8") if name in pyproject(files).get("tool", {})}
    if ".flake8" in files or any(ini(files, f).has_section("flake8") for f in ("setup.cfg", "tox.ini")):
        found.add("flake8")
    if ".pylintrc" in files or "pylintrc" in files:
        found.add("pylint")
    return listed(found)


def formatters(files: Files) -> str | None:
    """The formatters pre-commit runs and black or yapf where pyproject.toml configures them."""
    found = {FORMATTERS[h] for h in hook_ids(files) if h in FORMATTERS}
    found |= {name for name in ("black", "yapf") if name in pyproject(files).get("tool", {})}
    if ".style.yapf" in files:
        found.add("yapf")
    return listed(found)


SERVICES = {
    ".travis.yml": "Travis CI",
    ".circleci/config.yml": "CircleCI",
    "appveyor.yml": "AppVeyor",
    ".appveyor.yml": "AppVeyor",
    "azure-pipelines.yml": "Azure Pipelines",
    ".gitlab-ci.yml": "GitLab CI",
}
SYSTEMS = {"ubuntu": "Linux", "macos": "macOS", "windows": "Windows"}
_RUNNER = re.compile(r"\b(ubuntu|macos|windows)-(?:latest|\d[\w.]*)")


def ci_platforms(files: Files) -> str | None:
    """GitHub Actions with the systems its workflows run on (``ubuntu-*``, ``macos-*``,
    ``windows-*`` named anywhere in them), and every other CI service with a config file."""
    services = []
    workflows = [files[p] for p in files if p.startswith(".github/workflows/")]
    if workflows:
        systems = {SYSTEMS[m] for text in workflows for m in _RUNNER.findall(text)}
        on = f" on {', '.join(sorted(systems))}" if systems else ""
        services.append(f"GitHub Actions{on}")
    services += sorted({service for path, service in SERVICES.items() if path in files})
    return "; ".join(services) or None


_CLASSIFIER = "License :: OSI Approved :: "
LICENCE_TEXTS = (
    ("Apache License", "Apache-2.0"),
    ("Permission is hereby granted, free of charge", "MIT"),
    ("Mozilla Public License Version 2.0", "MPL-2.0"),
    ("GNU LESSER GENERAL PUBLIC LICENSE", "LGPL"),
    ("GNU GENERAL PUBLIC LICENSE", "GPL"),
    ("Neither the name", "BSD-3-Clause"),
    ("Redistribution and use in source and binary forms", "BSD-2-Clause"),
    ("PYTHON SOFTWARE FOUNDATION LICENSE", "PSF-2.0"),
)
"""Phrases of a licence text and the licence they identify, most specific first (a BSD text
with "Neither the name" is the 3-clause one)."""


def licence(files: Files) -> str | None:
    """The licence the metadata states (``license`` of pyproject, setup.cfg or setup.py, else
    its licence classifier), else the one the LICENSE file's text identifies."""
    project, setup = pyproject(files).get("project", {}), setup_py(files)
    stated = project.get("license")
    if isinstance(stated, dict):
        stated = stated.get("text")
    classifiers = project.get("classifiers") or setup.get("classifiers") or []
    from_classifier = [c.removeprefix(_CLASSIFIER) for c in classifiers if str(c).startswith(_CLASSIFIER)]
    stated = (
        stated
        or ini(files, "setup.cfg").get("metadata", "license", fallback=None)
        or setup.get("license")
        or (from_classifier[0] if from_classifier else None)
    )
    if isinstance(stated, str) and stated.strip() and "\n" not in stated.strip():
        return one_line(stated)
    for path in matching(files, "LICENSE*") + matching(files, "COPYING*"):
        text = " ".join(files[path].split())
        for phrase, name in LICENCE_TEXTS:
            if phrase.lower() in text.lower():
                return name
    return None


def requirements(files: Files) -> list[str]:
    """The install requirements, from the first file that lists them."""
    data = pyproject(files)
    if deps := data.get("project", {}).get("dependencies"):
        return [str(d) for d in deps]
    if poetry := data.get("tool", {}).get("poetry", {}).get("dependencies"):
        return [poetry_requirement(name, spec) for name, spec in poetry.items() if name != "python"]
    cfg = ini(files, "setup.cfg").get("options", "install_requires", fallback="")
    if cfg.strip():
        return [line.split("#")[0].strip() for line in cfg.splitlines() if line.split("#")[0].strip()]
    deps = setup_py(files).get("install_requires")
    return [str(d) for d in deps] if isinstance(deps, list | tuple) else []


def poetry_requirement(name: str, spec: object) -> str:
    """Poetry's ``^1.2`` and ``~1.2`` as the lower bound they set (``>=1.2``)."""
    version = spec.get("version", "") if isinstance(spec, dict) else str(spec)
    version = version.strip()
    if version[:1] in "^~" and version[1:2] != "=":
        version = ">=" + version[1:]
    return f"{name}{'' if version == '*' else version}"


def dependency_minimums(files: Files) -> str | None:
    """Each install requirement with a lower bound (``>=``, ``~=``, ``>``), as ``name>=version``
    with its name normalised (PEP 503)."""
    bounds = set()
    for text in requirements(files):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        for spec in req.specifier:
            if spec.operator in (">=", "~=", ">"):
                bounds.add(f"{name}{spec.operator}{spec.version}")
    return listed(bounds)


READERS: dict[str, Reader] = {
    "requires-python": requires_python,
    "build-backend": build_backend,
    "test-runner": test_runner,
    "linters": linters,
    "formatters": formatters,
    "ci-platforms": ci_platforms,
    "licence": licence,
    "dependency-minimums": dependency_minimums,
}
"""Every reader a catalog's ``read_from`` may name."""
KEYWORDS: dict[str, tuple[str, ...]] = {
    "requires-python": ("requires-python", "python_requires", "python="),
    "build-backend": ("build-backend",),
    "test-runner": ("pytest", "[tox]", "testenv", "nox"),
    "linters": ("id:",),
    "formatters": ("id:",),
    "ci-platforms": ("runs-on", "os:", "ubuntu", "macos", "windows"),
    "licence": ("license",),
    "dependency-minimums": (),
}
"""Words that mark the line stating a reader's fact, for the note's excerpt of changed lines
where no line holds the changed value itself."""
