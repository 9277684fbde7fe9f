"""``memops <command> [args]``: the one command a user runs.

Every subcommand is a module of this package with a ``main()``. The Hydra ones take
``key=value`` overrides, ``--config-name`` and ``--config-dir`` exactly as their module would
(``memops loo --config-name smollm2-cpu folds=[patch-guardrails]``); the others take options.
Modules are imported only when their command runs, so ``memops --help`` starts in a blink
rather than after torch.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("train", "train one adapter (Hydra; several processes: accelerate launch -m memops.train)"),
    "build-data": ("build_data", "build the operator datasets of every fold (Hydra)"),
    "loo": ("loo", "five-way leave-one-out: data, adapters, backend, scores, report (Hydra)"),
    "demo": ("demo", "the SmolLM2 demo: `memops loo --config-name smollm2-demo` (Hydra)"),
    "submit": ("submit", "submit the LOO pipeline to Slurm (Hydra)"),
    "preflight": ("preflight", "check this machine for a cluster run before booking it (Hydra)"),
    "replay": ("replay", "replay one trajectory through the engine and print the memory (Hydra)"),
    "report": ("report", "rebuild a LOO run's summary, report and figures from its records (Hydra)"),
    "export-merged": ("export_merged", "merge an adapter into its base as plain safetensors"),
    "make-model": ("make_model", "build a base the project makes itself (tiny, SmolLM2 from its wheel)"),
    "export-commits": ("export_commits", "export a trajectory's commit metadata from a git checkout"),
    "mine": ("mine", "mine a trajectory from a git repository: facts read from its own files"),
    "track": ("track", "the memory of a git repository's history, read by learned extraction"),
    "serve": ("serve", "the memory behind HTTP: notes in, state, history and corrections out"),
    "engine-demo": ("engine_demo", "the symbolic engine alone on a built-in history"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {about}" for name, (_, about) in COMMANDS.items()]
    return "\n".join(
        [
            "usage: memops <command> [args]",
            "",
            "Learned memory operators: data, QLoRA training, serving and leave-one-out evaluation.",
            "",
            "commands:",
            *lines,
            "",
            "memops <command> --help describes one command.",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        sys.exit(0 if args else 2)
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"memops: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        sys.exit(2)
    sys.argv = [f"memops {name}", *rest]
    with refusing_missing_extras():
        module = importlib.import_module(f"{__name__}.{COMMANDS[name][0]}")
        if hasattr(module, "CONFIG"):
            check_config(name, module.CONFIG, rest)
        module.main()


@contextmanager
def refusing_missing_extras() -> Iterator[None]:
    """End the command in one line, rc 2, when it reaches a module of an extra that is not
    installed (``core.extras``); any other missing module is a bug and keeps its traceback."""
    try:
        yield
    except ModuleNotFoundError as exc:
        from memops.core.extras import missing_extra

        if (missing := missing_extra(exc)) is None:
            raise
        print(f"{sys.argv[0]}: {missing}", file=sys.stderr)
        sys.exit(2)


def hydra_entry(config: str) -> Callable[[Callable[[Any], None]], Callable[[], None]]:
    """``@hydra.main`` on the package's configs, ``config`` by default, for a command's task.
    Hydra prints a task's exception as a traceback; a missing extra is refused in one line first."""
    import hydra

    from memops import schemas
    from memops.core.config import CONFIGS

    schemas.register()

    def wrap(task: Callable[[Any], None]) -> Callable[[], None]:
        @functools.wraps(task)
        def guarded(raw: Any) -> None:
            with refusing_missing_extras():
                task(raw)

        return hydra.main(version_base="1.3", config_path=str(CONFIGS), config_name=config)(guarded)

    return wrap


HYDRA_FLAGS = (
    *("-h", "--help", "--hydra-help", "-c", "--cfg", "-p", "--package", "-i", "--info", "-m", "--multirun"),
    *("-sc", "--shell-completion", "-cd", "--config-dir", "-cp", "--config-path"),
)
"""Hydra's own flags: with one of them the command does something other than run its config, or
reads configs from elsewhere, and Hydra checks the arguments itself."""


def named_config(args: list[str]) -> tuple[str | None, list[str]]:
    """The config a Hydra command line names (``--config-name X``, ``-cn X`` or
    ``--config-name=X``; None when it names none) and its other arguments."""
    name, rest, words = None, [], iter(args)
    for arg in words:
        if arg in ("--config-name", "-cn"):
            name = next(words, None)
        elif arg.startswith("--config-name="):
            name = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return name, rest


def check_config(command: str, default: str, args: list[str]) -> None:
    """A Hydra command's config composed and type-checked before the command starts, so a
    misspelt key, a wrong type or a value its schema refuses ends it with one line."""
    from memops.core.config import ConfigError, validate

    if any(a.split("=")[0] in HYDRA_FLAGS for a in args):
        return
    name, overrides = named_config(args)
    try:
        validate(name or default, overrides)
    except ConfigError as exc:
        print(f"memops {command}: {exc}", file=sys.stderr)
        sys.exit(2)
