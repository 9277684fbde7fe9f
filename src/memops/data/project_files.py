"""A Python project's files read without running anything: TOML, YAML, INI, and the literal
arguments of ``setup.py`` and constants of a ``conf.py``. Each text is parsed once (every reader of
a commit asks for the same ``pyproject.toml``); a file that is there but does not parse raises
``Unreadable``, so the fact it states is unknown at that commit.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import functools
import tomllib
from collections.abc import Mapping

import yaml

Files = Mapping[str, str]
"""Path (relative to the repository root) -> text, at one commit."""


class Unreadable(ValueError):
    """A file the fact is read from is there but cannot be parsed: the fact is unknown here."""


@functools.lru_cache(maxsize=64)
def parse_toml(text: str) -> dict:
    """A TOML text parsed once: every reader of a commit asks for the same pyproject.toml."""
    return tomllib.loads(text)


@functools.lru_cache(maxsize=64)
def parse_yaml(text: str) -> object:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.lru_cache(maxsize=64)
def parse_python(text: str) -> ast.Module:
    return ast.parse(text)


def pyproject(files: Files) -> dict:
    if "pyproject.toml" not in files:
        return {}
    try:
        return parse_toml(files["pyproject.toml"])
    except tomllib.TOMLDecodeError as exc:
        raise Unreadable(f"pyproject.toml: {exc}") from None


def tool(files: Files) -> dict:
    """pyproject.toml's ``[tool]`` table."""
    found = pyproject(files).get("tool", {})
    return found if isinstance(found, dict) else {}


def ini(files: Files, name: str) -> configparser.ConfigParser:
    try:
        return parse_ini(files.get(name, ""))
    except configparser.Error as exc:
        raise Unreadable(f"{name}: {exc.message}") from None


@functools.lru_cache(maxsize=64)
def parse_ini(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text)
    return parser


def flit_metadata(files: Files) -> dict:
    """flit's own ``[tool.flit.metadata]`` table (before PEP 621), where a flit project stated its
    requirements, Python versions and licence."""
    found = tool(files).get("flit", {})
    found = found.get("metadata", {}) if isinstance(found, dict) else {}
    return found if isinstance(found, dict) else {}


def constants(tree: ast.Module) -> dict[str, object]:
    """Module-level names bound to literals (``REQUIRED = ["click>=7"]``), and dicts built with
    ``dict(...)`` of literal keywords: what a ``setup(**args)`` or ``install_requires=REQUIRED``
    refers to, read without running anything."""
    found: dict[str, object] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        value = literal(node.value, found)
        if value is not None:
            found[target.id] = value
    return found


def literal(node: ast.expr, names: dict[str, object]) -> object:
    """A literal, a name bound to one, or ``dict(key=literal, ...)``; None for anything computed."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict" and not node.args:
        items = {kw.arg: literal(kw.value, names) for kw in node.keywords if kw.arg}
        return {k: v for k, v in items.items() if v is not None}
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None


def setup_py(files: Files) -> dict[str, object]:
    """The keyword arguments of the ``setup(...)`` call in ``setup.py`` that can be read without
    running it: literals, module-level constants, and ``**`` of a dict of them (a computed
    argument is left out)."""
    if "setup.py" not in files:
        return {}
    try:
        tree = parse_python(files["setup.py"])
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise Unreadable(f"setup.py: {exc.__class__.__name__}") from None
    names = constants(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            found: dict[str, object] = {}
            for kw in node.keywords:
                value = literal(kw.value, names)
                if kw.arg is None and isinstance(value, dict):
                    found.update({k: v for k, v in value.items() if isinstance(k, str)})
                elif kw.arg is not None and value is not None:
                    found[kw.arg] = value
            return found
    return {}


def matching(files: Files, pattern: str) -> list[str]:
    return sorted(p for p in files if fnmatch.fnmatchcase(p, pattern))


class Disputed(ValueError):
    """Two files the fact is read from state different values; ``values`` names each."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        super().__init__("; ".join(f"{where} says {value}" for where, value in values.items()))
