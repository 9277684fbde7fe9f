"""Input problems that point at a file, a line and a field.

Builders collect every problem they find before failing, so one ``validate`` run lists all
the fixes an annotator needs instead of one per attempt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError


@dataclass(frozen=True)
class Problem:
    file: Path
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else str(self.file)
        return f"{where}: {self.field}: {self.message}"


class DataError(ValueError):
    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) in the input data:\n{lines}")


Path_ = tuple[str | int, ...]


def decode(path: Path, data: bytes, offset: int = 0, line: int = 1) -> tuple[str | None, list[Problem]]:
    """``data`` (found at byte ``offset``, line ``line`` of ``path``) as UTF-8, or the problem
    naming the first byte that is not: its line and its offset in the file."""
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        at = offset + exc.start
        line += data.count(b"\n", 0, exc.start)
        why = f"not UTF-8: byte 0x{data[exc.start]:02x} at byte offset {at}"
        return None, [Problem(path, line, "<encoding>", why)]


class _HashesAsText(yaml.SafeLoader):
    """YAML 1.1 reads an all-digit short hash as a number (``0123456`` as octal 42798), which would
    silently name another commit. A ``commit`` value is kept as the text that was written."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        for key, value in node.value:
            if key.value == "commit" and isinstance(value, yaml.ScalarNode) and value.value:
                value.tag = "tag:yaml.org,2002:str"
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> object:
    return yaml.load(text, Loader=_HashesAsText)  # a SafeLoader: plain data only


def yaml_with_lines(path: Path) -> tuple[object, dict[Path_, int]]:
    """Parse YAML and remember the 1-based line of every node, keyed by its path."""
    text, problems = decode(path, path.read_bytes())
    if text is None:
        raise DataError(problems)
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DataError([Problem(path, mark.line + 1 if mark else None, "<yaml>", str(exc))]) from exc
    lines: dict[Path_, int] = {}

    def walk(node: yaml.Node, at: Path_) -> None:
        lines[at] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                walk(value, (*at, key.value))
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                walk(value, (*at, i))

    if root is not None:
        walk(root, ())
    return load_yaml(text), lines


def line_of(lines: dict[Path_, int], at: Path_) -> int | None:
    """The line of the deepest known node on ``at`` (a missing field points at its parent)."""
    for cut in range(len(at), -1, -1):
        if at[:cut] in lines:
            return lines[at[:cut]]
    return None


def field_name(at: Path_) -> str:
    out = ""
    for part in at:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


def from_validation(
    error: ValidationError, file: Path, lines: dict[Path_, int], prefix: Path_
) -> list[Problem]:
    problems = []
    for e in error.errors():
        at = (*prefix, *e["loc"])
        message = e["msg"].removeprefix("Value error, ")
        if e["type"] == "literal_error" and "evidence_type" in e["loc"]:
            message = f"unknown evidence type {e['input']!r}; {message}"
        problems.append(Problem(file, line_of(lines, at), field_name(at), message))
    return problems
