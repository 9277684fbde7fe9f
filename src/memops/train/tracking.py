"""Experiment tracking: the Trainer's own ``report_to`` for the losses, and the same TensorBoard
folders for the held-out scores, so one ``tensorboard --logdir outputs/`` shows both.

TensorBoard is the default (its event files land under the adapter's ``checkpoints/runs/``, where
transformers writes them); any tracker transformers integrates is one override away
(``report_to=wandb`` with ``WANDB_MODE=offline``, ``report_to=mlflow`` with
``MLFLOW_TRACKING_URI=file:outputs/mlruns``). A tracker that is not installed is refused before
any work starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from memops.core.extras import installed

NONE = "none"
TENSORBOARD = "tensorboard"
HELDOUT_EVENTS = "tensorboard"
"""The folder of a LOO run (and of an adapter's learning curve) that holds held-out scalars."""


class TrackerError(RuntimeError):
    """``report_to`` names a tracker this environment cannot run."""


def check_tracker(report_to: str) -> None:
    """Fail with the install command when ``report_to`` names a tracker that is missing or unknown."""
    if report_to == NONE or (report_to == TENSORBOARD and installed("tensorboard")):
        return  # the default, checked without loading transformers' tracker table (7 s of imports)
    from transformers.integrations.integration_utils import (
        INTEGRATION_TO_CALLBACK,
        get_available_reporting_integrations,
    )

    if report_to not in INTEGRATION_TO_CALLBACK:
        known = ", ".join([NONE, *sorted(INTEGRATION_TO_CALLBACK)])
        raise TrackerError(f"report_to={report_to!r} is not a tracker transformers knows; known: {known}")
    if report_to not in get_available_reporting_integrations():
        package = {"comet_ml": "comet-ml", "azure_ml": "azureml-core"}.get(report_to, report_to)
        raise TrackerError(
            f"report_to={report_to}: the {report_to} package is not installed in this environment "
            f"(pip install {package}), or pass report_to=none"
        )


def log_scalars(folder: Path, points: Mapping[int, Mapping[str, float | None]]) -> Path:
    """Write ``step -> tag -> value`` (None is skipped) as one TensorBoard event file under ``folder``."""
    from torch.utils.tensorboard import SummaryWriter

    folder.mkdir(parents=True, exist_ok=True)
    with SummaryWriter(log_dir=str(folder)) as writer:
        for step, scalars in points.items():
            for tag, value in scalars.items():
                if value is not None:
                    writer.add_scalar(tag, value, step)
    return folder
