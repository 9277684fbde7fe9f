"""The held-out rule (``core/folds.py``) over every kind of fold: ``all``, ``synthetic`` with any
``synthetic_plus``, and each trajectory's fold with any ``real_trajectories``, each with any
``real_validation``, on the shipped
trajectories and one that shares a note with another (as two mined repositories can)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memops.core.folds import Fold
from memops.core.layout import ADAPTER_MANIFEST, ALL, SYNTHETIC, adapters_path
from memops.core.sessions import Episode
from memops.core.sources import SHIPPED
from memops.data.build import fold_splits
from memops.data.trajectory import load_trajectory
from tests.conftest import shipped


@pytest.fixture(scope="module")
def trajectories(export_dir: Path) -> list[Episode]:
    loaded = [load_trajectory(name, shipped(export_dir)) for name in SHIPPED]
    first = loaded[0]
    twin = first.model_copy(update={"id": "twin", "sessions": (first.sessions[0], *loaded[1].sessions)})
    return [*loaded, twin]


NAMES = [*SHIPPED, "twin"]


def notes(trajectories: list[Episode]) -> set[str]:
    return {s.text for t in trajectories for s in t.sessions}


folds = st.builds(
    Fold.of,
    st.sampled_from([ALL, SYNTHETIC, *NAMES]),
    st.sets(st.sampled_from(NAMES)),
    st.one_of(st.none(), st.integers(0, len(NAMES))),
    st.sets(st.sampled_from(NAMES)),
)


@settings(max_examples=300, deadline=None)
@given(fold=folds)
def test_no_trajectory_a_fold_holds_out_is_in_what_it_trains_on(
    trajectories: list[Episode], fold: Fold
) -> None:
    taken, held = fold.takes(trajectories), fold.holds_out(trajectories)
    # synthetic_plus is the user's own list: one that quotes a note of a trajectory the fold
    # holds out is refused by the build's leak check, not dropped here.
    assume(fold.name != SYNTHETIC or not notes(taken) & notes(held))
    # real_validation is the user's list too; the configs refuse a fold named in it, and the
    # build's leak check one that quotes a held-out note.
    validated = fold.validates(trajectories)
    assume(fold.name not in fold.real_validation and not notes(validated) & notes(held))
    splits = fold_splits(fold, [], trajectories, 0.2, real_repeat=2)
    trained = {t.id for t in splits["train"]}
    assert trained == {t.id for t in taken}
    quoted = notes(splits["train"])
    for trajectory in held:
        assert trajectory.id not in trained
        assert not quoted & notes([trajectory]), f"{fold}: {trajectory.id} quoted"
        # Neither the manifest's list nor, where it is lost, the fold's name admits it.
        assert not fold.saw(trajectory.id)
        assert not Fold(fold.name, trained=frozenset(trained)).saw(trajectory.id)
    # The name alone never calls a trajectory the fold took unseen: without a manifest, a check
    # errs toward refusing.
    assert all(Fold(fold.name, fold.synthetic_plus).saw(t.id) for t in taken)
    # Checkpoints chosen on a trajectory make it seen: no train split takes it, nothing scores it.
    assert [t.id for t in splits["validation"]] == [t.id for t in validated]
    assert not {t.id for t in validated} & (trained | {t.id for t in held})
    assert all(fold.saw(t.id) for t in validated)
    assert [t.id for t in splits["test"]] == ([fold.name] if fold.name in NAMES else [])


def test_a_trajectorys_fold_never_takes_one_that_shares_a_note_with_it(trajectories: list[Episode]) -> None:
    taken = [t.id for t in Fold.of(SHIPPED[0]).takes(trajectories)]
    assert "twin" not in taken and taken == list(SHIPPED[1:])
    assert SHIPPED[0] not in [t.id for t in Fold.of("twin").takes(trajectories)]


def test_an_adapters_fold_is_read_from_its_manifest_else_from_its_place(tmp_path: Path) -> None:
    listed = adapters_path(tmp_path, "tiny", SYNTHETIC, "compare")
    listed.mkdir(parents=True)
    (listed / ADAPTER_MANIFEST).write_text(
        json.dumps({"config": {"fold": SYNTHETIC}, "trajectories": [SHIPPED[1]]})
    )
    fold = Fold.of_adapter(listed)
    assert fold is not None and fold.saw(SHIPPED[1]) and not fold.saw(SHIPPED[0])
    placed = Fold.of_adapter(adapters_path(tmp_path, "tiny", SHIPPED[2], "update"))
    assert placed == Fold(SHIPPED[2]) and placed.saw(SHIPPED[0]) and not placed.saw(SHIPPED[2])
    assert Fold.of_adapter("update") is None
