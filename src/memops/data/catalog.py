"""Slot catalogs from YAML: what a memory tracks and, for mining, where each value is read.

A catalog file is a list of ``{entity, slot, description}``, or a mapping with that list under
``catalog`` (a trajectory annotation's own). A catalog that ``memops mine`` can read also maps
each slot to a reader of :mod:`memops.data.facts` and the files it reads, under ``read_from``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from memops.core.records import Catalog, CatalogEntry
from memops.data.facts import READERS
from memops.data.problems import (
    DataError,
    Path_,
    Problem,
    field_name,
    from_validation,
    line_of,
    yaml_with_lines,
)

CATALOGS = Path(__file__).resolve().parent / "catalogs"
"""Shipped catalogs, named without ``.yaml``: ``python-project``."""


def catalog_file(path: str | Path) -> Path:
    """The file itself, or a shipped catalog by its name; refused when neither exists."""
    shipped = CATALOGS / f"{path}.yaml"
    path = shipped if not Path(path).exists() and shipped.is_file() else Path(path)
    if not path.is_file():
        raise DataError([Problem(path, None, "<file>", "no such catalog file")])
    return path


def load_catalog(path: str | Path) -> Catalog:
    """The catalog of a file or of a shipped name. A malformed slot is refused with the file,
    its line and the field (``DataError``)."""
    path = catalog_file(path)
    return parse_catalog(path, *yaml_with_lines(path))


def parse_catalog(path: Path, data: object, lines: dict[Path_, int]) -> Catalog:
    rows, prefix = (data.get("catalog"), ("catalog",)) if isinstance(data, dict) else (data, ())
    if not isinstance(rows, list) or not rows:
        why = "expected a list of {entity, slot, description} (or one under catalog:)"
        raise DataError([Problem(path, line_of(lines, prefix), field_name(prefix), why)])
    entries, problems = [], []
    for i, row in enumerate(rows):
        try:
            entries.append(CatalogEntry.model_validate(row))
        except ValidationError as exc:
            problems += from_validation(exc, path, lines, (*prefix, i))
    if problems:
        raise DataError(problems)
    return Catalog(name=path.stem, entries=tuple(entries))


@dataclass(frozen=True)
class ReadFrom:
    """Where a slot's value is read at a commit: a reader and the files (root-relative
    patterns, ``*`` within one folder) it is given."""

    pair: str
    reader: str
    files: tuple[str, ...]

    def reads(self, path: str) -> bool:
        """Whether the slot's reader is given this file."""
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.files)

    def mine(self, files: Mapping[str, str]) -> dict[str, str]:
        """The files of ``files`` (path -> text) that the slot's reader is given."""
        return {path: text for path, text in files.items() if self.reads(path)}


def slots_read(path: str | Path) -> list[ReadFrom]:
    """Where a catalog's slots are read (:func:`load_read_from`), or none for a catalog without
    ``read_from``: a catalog that names sources must name them right."""
    path = catalog_file(path)
    data, lines = yaml_with_lines(path)
    return parse_read_from(path, data, lines)[1] if isinstance(data, dict) and "read_from" in data else []


def load_read_from(path: str | Path) -> tuple[Catalog, list[ReadFrom]]:
    """A catalog and, in its order, where each slot is read; a slot without a source, a source
    without a slot, an unknown reader or an empty file list is refused with its line."""
    path = catalog_file(path)
    return parse_read_from(path, *yaml_with_lines(path))


def parse_read_from(path: Path, data: object, lines: dict[Path_, int]) -> tuple[Catalog, list[ReadFrom]]:
    catalog = parse_catalog(path, data, lines)
    table = data.get("read_from") if isinstance(data, dict) else None
    if not isinstance(table, dict) or not table:
        why = "no read_from: mapping each entity.slot to {reader, files}, so nothing can be mined"
        raise DataError([Problem(path, None, "read_from", why)])
    problems, found = [], []
    for pair in catalog.pairs():
        spec = table.get(pair)
        where = ("read_from", pair)
        if not isinstance(spec, dict):
            problems.append(Problem(path, line_of(lines, ("read_from",)), field_name(where), "missing"))
            continue
        reader, files = spec.get("reader"), spec.get("files")
        if reader not in READERS:
            why = f"unknown reader {reader!r}; expected one of {', '.join(READERS)}"
            problems.append(Problem(path, line_of(lines, where), field_name((*where, "reader")), why))
        if not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files):
            why = "expected a non-empty list of file patterns"
            problems.append(Problem(path, line_of(lines, where), field_name((*where, "files")), why))
        else:
            found.append(ReadFrom(pair, str(reader), tuple(files)))
    for pair in table:
        if pair not in catalog.pairs():
            where = ("read_from", pair)
            problems.append(
                Problem(path, line_of(lines, where), field_name(where), "not a slot of the catalog")
            )
    if problems:
        raise DataError(problems)
    return catalog, found
