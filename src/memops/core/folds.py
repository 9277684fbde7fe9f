"""What a fold trains on and holds out: the one home of the held-out rule.

A fold is named ``all`` (every trajectory in training), ``synthetic`` (the scenarios, and the
trajectories ``synthetic_plus`` names) or after the trajectory it holds out (the others in
training, at most ``real_trajectories`` of them, none that shares a note with it). Any fold's
validation split may also hold the trajectories ``real_validation`` names, which no train split
takes and no run scores: real decisions to choose checkpoints by. The data
build asks a ``Fold`` which trajectories its train split takes and which its leak check guards;
the run's checks, before scoring a trajectory with a set of adapters, ask ``saw``, with what the
adapter's manifest lists where it can be read (``Fold.of_adapter``): a held-out figure comes only
from adapters whose fold did not see the trajectory.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from memops.core.layout import ADAPTER_MANIFEST, ALL, SYNTHETIC
from memops.core.sessions import Episode


@dataclass(frozen=True)
class Fold:
    name: str
    synthetic_plus: frozenset[str] = frozenset()
    """The trajectories fold ``synthetic`` takes beside the scenarios."""
    real_validation: frozenset[str] = frozenset()
    """The trajectories its validation split holds beside the scenarios' validation part."""
    real_trajectories: int | None = None
    """How many of the other trajectories a trajectory's fold takes, in order (all when unset)."""
    trained: frozenset[str] | None = None
    """The trajectories its train and validation splits were found to hold (an adapter's
    manifest), where known: they, not the name, settle ``saw``."""

    @classmethod
    def of(
        cls,
        name: str,
        synthetic_plus: Collection[str] = (),
        real_trajectories: int | None = None,
        real_validation: Collection[str] = (),
    ) -> Fold:
        return cls(name, frozenset(synthetic_plus), frozenset(real_validation), real_trajectories)

    @classmethod
    def of_adapter(cls, path: str | Path) -> Fold | None:
        """The fold an adapter was trained on: its manifest's ``config.fold`` and
        ``trajectories`` where the folder is readable here, else the layout's
        ``<model>/<fold>/<op>`` (its name alone); None when neither says."""
        folder = Path(path)
        try:
            manifest = json.loads((folder / ADAPTER_MANIFEST).read_text())
            name = str(manifest["config"]["fold"])
        except (OSError, ValueError, KeyError, TypeError):
            return cls(folder.parent.name) if len(folder.parts) >= 3 else None
        trained = manifest.get("trajectories")
        return cls(name, trained=frozenset(trained) if isinstance(trained, list) else None)

    def takes(self, trajectories: Sequence[Episode]) -> list[Episode]:
        """The trajectories its train split holds examples of, once each, in their order. A
        trajectory that shares a note with the held-out one (one author's same commit in two
        mined repositories) is not among them: its examples would quote the held-out note. Nor is
        one of ``real_validation``: it is read to choose checkpoints, on examples not trained on."""
        if self.name == SYNTHETIC:
            return [t for t in trajectories if t.id in self.synthetic_plus - self.real_validation]
        held = {s.text for t in trajectories if t.id == self.name for s in t.sessions}
        apart = {self.name, *self.real_validation}
        others = [t for t in trajectories if t.id not in apart and not held & {s.text for s in t.sessions}]
        return (
            others if self.name == ALL or self.real_trajectories is None else others[: self.real_trajectories]
        )

    def validates(self, trajectories: Sequence[Episode]) -> list[Episode]:
        """The trajectories its validation split holds beside the scenarios, in their order."""
        return [t for t in trajectories if t.id in self.real_validation and t.id != self.name]

    def holds_out(self, trajectories: Sequence[Episode]) -> list[Episode]:
        """The trajectories its adapters are built to score, which its leak check guards: its
        own, or for ``synthetic`` every one it does not take; ``all`` holds none out."""
        if self.name == SYNTHETIC:
            return [t for t in trajectories if not self.saw(t.id)]
        return [t for t in trajectories if t.id == self.name]

    def saw(self, trajectory: str) -> bool:
        """Whether its train or validation split held ``trajectory``: as ``trained`` lists them
        where known, else as its name says (``all`` every one, ``synthetic`` those of
        ``synthetic_plus``, a trajectory's fold every one but its own) and ``real_validation``
        (checkpoints were chosen on it). Scoring a trajectory it saw is a leak."""
        if self.trained is not None:
            return trajectory in self.trained
        if trajectory in self.real_validation:
            return True
        if self.name == SYNTHETIC:
            return trajectory in self.synthetic_plus
        return self.name == ALL or self.name != trajectory
