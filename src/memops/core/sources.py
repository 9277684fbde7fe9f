"""Where trajectories come from: annotation and export directories, each searched in order.

A trajectory is a name with ``<name>.yaml`` in an annotation directory and ``<name>.jsonl`` in
an export directory. Every ``*.yaml`` found is a trajectory, so a user's repository joins by
adding its directories to ``annotations=[...]`` and ``exports=[...]``; nothing lists names in code.
A relative path is taken from the working directory, as every path in the configs is; the word
``shipped`` names the five trajectories that ship with the package, ``mined`` the mined benchmark.
In a list of trajectories (``folds``, ``synthetic_plus``, ``real_validation``) the words of
``GROUPS`` stand for theirs: ``synthetic_plus=[mined-train] folds=[shipped,mined-held-out]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path

from memops.core.layout import EXPORTED
from memops.core.names import known_names

TRAJECTORIES = Path(__file__).resolve().parents[1] / "data" / "trajectories"
"""The shipped trajectories, package data: each ``<name>.yaml`` annotation beside its
``<name>.jsonl`` commit export (provenance in the folder's README)."""
MINED = TRAJECTORIES.parent / "mined"
"""The mined benchmark, package data: trajectories ``memops mine`` read from public Python
repositories (their card and train/held-out split beside them)."""
SHIPPED_FOLDER = "shipped"
MINED_FOLDER = "mined"
"""How a search path names those folders (``annotations=[shipped,mined,~/mine/annotations]``), so
a config means the same on every machine, wherever the package is installed there."""
ANNOTATIONS = [SHIPPED_FOLDER]
"""The shipped annotations."""
EXPORTS = [SHIPPED_FOLDER, EXPORTED]
"""The shipped exports, then your own exports."""
SHIPPED = ("permissions-flow", "exec-app-server", "browser-surface", "model-routing", "patch-guardrails")
"""The five shipped trajectories, in the paper's order; they come first, the others by name."""
MINED_SPLIT = MINED / "split.json"
"""The mined benchmark's split by family, fixed once (``benchmarks/mine_benchmark.py``):
``train`` and ``heldout`` trajectory names."""
MINED_SIDES = {"mined-train": "train", "mined-held-out": "heldout"}
"""The word a list of trajectories names each side of the mined benchmark's split by: its key
in ``MINED_SPLIT``."""
GROUPS = (SHIPPED_FOLDER, *MINED_SIDES)
"""Words a list of trajectories may hold for a group of them: the shipped five and each side of
the mined benchmark's split."""


@cache
def group(word: str) -> tuple[str, ...]:
    """The trajectories a word of ``GROUPS`` stands for; the split is read once."""
    if word == SHIPPED_FOLDER:
        return SHIPPED
    return tuple(json.loads(MINED_SPLIT.read_text())[MINED_SIDES[word]])


def trajectory_names(names: Iterable[str]) -> list[str]:
    """``names`` with each word of ``GROUPS`` replaced by the trajectories it stands for, in
    order, each name once: the one place a config's group of trajectories is read."""
    out: list[str] = []
    for name in names:
        out += [m for m in (group(name) if name in GROUPS else (name,)) if m not in out]
    return out


@dataclass(frozen=True)
class Sources:
    annotations: tuple[Path, ...]
    exports: tuple[Path, ...]

    @classmethod
    def of(cls, annotations: Sequence[str | Path], exports: Sequence[str | Path]) -> Sources:
        return cls(tuple(map(folder, annotations)), tuple(map(folder, exports)))

    @cached_property
    def found(self) -> dict[str, Path]:
        """Trajectory name -> its annotation file; an earlier directory wins a name. Read once."""
        files: dict[str, Path] = {}
        for folder in self.annotations:
            for path in sorted(folder.glob("*.yaml")):
                files.setdefault(path.stem, path)
        return dict(sorted(files.items(), key=lambda kv: (kv[0] not in SHIPPED, _rank(kv[0]), kv[0])))

    def names(self) -> list[str]:
        return list(self.found)

    def annotation(self, name: str) -> Path:
        """The annotation file, or where one was expected (the first directory)."""
        return self.found.get(name, self.annotations[0] / f"{name}.yaml")

    def export(self, name: str) -> Path:
        """The first export of that name, or where one was expected (the first directory)."""
        for folder in self.exports:
            if (folder / f"{name}.jsonl").exists():
                return folder / f"{name}.jsonl"
        return self.exports[0] / f"{name}.jsonl"


def folder(entry: str | Path) -> Path:
    """A search path's entry as a folder: ``shipped`` and ``mined`` are the package's own."""
    return {SHIPPED_FOLDER: TRAJECTORIES, MINED_FOLDER: MINED}.get(str(entry), Path(entry))


def _rank(name: str) -> int:
    return SHIPPED.index(name) if name in SHIPPED else len(SHIPPED)


@dataclass
class SourcesConfig:
    """The two search paths, as every entry script's config takes them (a base of those configs)."""

    annotations: list[str] = field(default_factory=lambda: list(ANNOTATIONS))
    """Directories of trajectory annotations (``<name>.yaml``), searched in order."""
    exports: list[str] = field(default_factory=lambda: list(EXPORTS))
    """Directories of commit exports (``<name>.jsonl``), searched in order."""

    def sources(self) -> Sources:
        return Sources.of(self.annotations, self.exports)

    def check_folds(self, field_name: str, folds: list[str], extra: tuple[str, ...] = ()) -> None:
        """Every fold named is a trajectory the sources hold (or one of ``extra``)."""
        known_names(field_name, folds, [*self.sources().names(), *extra])

    def named_folds(self, field_name: str, folds: list[str], extra: tuple[str, ...] = ()) -> list[str]:
        """A list of trajectories as a config gives it, its group words (``sources.GROUPS``)
        replaced by their trajectories, each checked as ``check_folds`` checks a name (the sources
        read once)."""
        held = self.sources().names()
        for word in dict.fromkeys(f for f in folds if f in GROUPS):
            if missing := [n for n in group(word) if n not in held]:
                raise ValueError(
                    f"{field_name}: {word} stands for {len(missing)} trajectories the sources do not hold "
                    f"(e.g. {missing[0]}): add their folder to annotations and exports"
                )
        named = trajectory_names(folds)
        known_names(field_name, named, [*held, *extra])
        return named
