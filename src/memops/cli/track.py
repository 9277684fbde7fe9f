"""The memory of a git repository nobody annotated: memops track <repository> --catalog <yaml>

Each commit of the branch becomes a note (subject, body, touched files, when it landed); learned
extraction reads it against the slot catalog and the engine writes what it says. A memory that
starts at ``--since`` first reads the files as they stood then (``track.git.start``). The memory is
an SQLite store, ``<out>/memory.db`` (default ``outputs/track/<repository name>-<its root
commit>/``), each commit written in one transaction as it is read, so an interrupted run resumes,
and a second run reads only the commits it has not seen; one run at a time holds the folder. Each
run ends by exporting it to ``memory.json``. A commit that cannot be a note (dated in the
future) is recorded as skipped, with why, and the run goes on. A history that was rewritten
under it (a commit it read is no longer on the branch) is reported and refused; ``--reset``
starts over. The state is printed and written as ``state.md`` and ``state.json``, every value
with its commit.

    memops track ~/src/mylib --catalog python-project                 # the shipped example catalog
    memops track ~/src/mylib --catalog slots.yaml --adapters outputs/adapters/smollm2-135m-instruct/all \\
        --model smollm2-135m-instruct --since 2024-01-01
    memops track ~/src/mylib --catalog python-project --endpoint http://127.0.0.1:8000/v1 \
        --endpoint-model Qwen/Qwen2.5-14B-Instruct                  # any OpenAI-compatible endpoint
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

from tqdm import tqdm

from memops.core.files import write_atomic
from memops.core.layout import OUTPUTS, adapters_path
from memops.core.locks import Busy, exclusive
from memops.data.catalog import load_catalog, slots_read
from memops.data.export import ExportError
from memops.data.mine import EMPTY_TREE
from memops.data.problems import DataError
from memops.memory import StateMemory
from memops.operators.backends import BackendError
from memops.operators.backends.endpoint import add_endpoint_arguments
from memops.operators.learned import EXTRACT_MODES, add_decisions_argument
from memops.track.git import SINCE_HELP, check_revision, commits, identity, moment, note, on_branch, start
from memops.track.memory import InputError, ProjectMemory
from memops.track.opening import open_memory, open_store
from memops.track.store import Store


def state_json(state: StateMemory, commits: int) -> dict[str, object]:
    """Every key's current value with its commit, time and evidence, and what is contested."""
    keys = []
    for entry in state.entries():
        if entry.current is None:
            continue
        best = entry.current.best
        keys.append(
            {
                "key": f"{entry.key.entity}.{entry.key.slot}",
                "branch": entry.key.branch,
                "env": entry.key.env,
                "value": best.value,
                "commit": best.evidence.commit,
                "at": best.at.isoformat(),
                "evidence": best.evidence.type,
                "contested": [
                    {"value": i.value, "commit": i.best.evidence.commit, "at": i.best.at.isoformat()}
                    for i in entry.contested()
                ],
            }
        )
    return {"commits": commits, "keys": keys}


def kept_store(out: Path, reset: bool) -> Store:
    """``<out>/memory.db``, the memory each commit is written to as it is read; started afresh
    with ``reset``, or from the ``memory.json`` an earlier memops kept there."""
    db, exported = out / "memory.db", out / "memory.json"
    if reset:
        for path in (db, db.with_name("memory.db-wal"), db.with_name("memory.db-shm"), exported):
            path.unlink(missing_ok=True)
    earlier = ProjectMemory.load(exported) if exported.exists() and not db.exists() else None
    store = open_store(db)
    if earlier is not None:
        store.load_state(earlier.state, earlier.seen, earlier.skipped)
    return store


def positive(text: str) -> int:
    if not text.lstrip("-").isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of characters")
    return int(text)


def output_folder(repo: Path, branch: str) -> Path:
    """``outputs/track/<name>-<first root commit>``: two repositories with one folder name keep
    two memories, and the same repository keeps one wherever it is checked out."""
    root = identity(repo, branch)
    return Path(OUTPUTS) / "track" / (f"{repo.name}-{root[:12]}" if root else repo.name)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="memops track", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("repository", type=Path)
    parser.add_argument("--catalog", required=True, help="a catalog YAML, or a shipped one: python-project")
    parser.add_argument("--branch", default="HEAD", help="the branch (or any revision) to follow")
    parser.add_argument("--since", type=moment, help=SINCE_HELP)
    parser.add_argument(
        "--until", type=moment, help="only commits that landed until this date (git's --until)"
    )
    parser.add_argument("--adapters", type=Path, help="a fold's adapters (default: the model's all fold)")
    parser.add_argument("--model", default="tiny", help="the base the adapters were trained on")
    parser.add_argument("--backend", default="hf", choices=("hf", "vllm"))
    parser.add_argument("--engine", default="learned", choices=("learned", "hybrid"))
    parser.add_argument("--extract", default="two-stage-overlap", choices=EXTRACT_MODES)
    add_decisions_argument(parser)
    parser.add_argument("--out", type=Path, help="default: outputs/track/<repository name>-<its root commit>")
    parser.add_argument("--budget", type=positive, default=1700, help="characters of the printed state")
    parser.add_argument("--reset", action="store_true", help="forget the saved memory and start over")
    add_endpoint_arguments(parser)
    parser.add_argument("overrides", nargs="*", help="overrides of the model and backend (model.path=...)")
    args = parser.parse_intermixed_args()
    repo = args.repository.expanduser().resolve()
    try:
        check_revision(args.branch)
    except ExportError as exc:
        parser.error(str(exc))
    adapters = args.adapters or adapters_path(Path(OUTPUTS) / "adapters", args.model, "all")
    try:
        out = args.out or output_folder(repo, args.branch)
        if out.exists() and not out.is_dir():
            raise InputError(f"--out {out}: a file, not a folder")
        # One run per memory: a second would read the same commits again.
        with exclusive(out / ".lock", "memops track"):
            rendered, summary = follow(args, repo, out, adapters)
    except (BackendError, Busy, DataError, ExportError, InputError, FileNotFoundError) as exc:
        sys.exit(f"memops track: {exc}")
    print(rendered)
    print(summary)


def follow(args: argparse.Namespace, repo: Path, out: Path, adapters: Path) -> tuple[str, str]:
    """Read the commits the stored memory has not, each written as it is read, then write the
    state files and the memory's JSON export."""
    history = commits(repo, args.branch, args.since, args.until)
    read_from, catalog = slots_read(args.catalog), load_catalog(args.catalog)
    store = kept_store(out, args.reset)
    kept = ProjectMemory(engine=args.engine, store=store)  # answers when nothing is new
    seen = kept.seen
    if seen:
        on = on_branch(repo, args.branch)
        if gone := [sha for sha in seen if sha not in on]:
            raise InputError(
                f"{repo}: {len(gone)} commit(s) this memory read are no longer on {args.branch} "
                f"(first: {gone[0][:9]}): its history was rewritten; --reset reads it again"
            )
    read = set(seen)
    new = [c for c in history if c.sha not in read]
    # A memory that starts at --since first reads the files as they stood then, once.
    base = start(repo, args.branch, args.since, read_from) if args.since and not seen and new else None
    if base is not None:
        new.insert(0, base)
    began = f" (from the files at {base.sha[:9]}, {base.at[:10]})" if base else ""
    print(f"{repo.name}: {len(history)} commits on {args.branch}, {len(new)} new{began}", flush=True)
    # Nothing to read: the stored memory answers without its operators, and no model loads.
    opened = (
        nullcontext(kept)
        if not new
        else open_memory(
            args.engine,
            adapters=adapters,
            backend=args.backend,
            model=args.model,
            extract=args.extract,
            decisions=args.decisions,
            catalog=args.catalog,
            store=store,
            overrides=args.overrides,
            endpoint=args.endpoint,
            models=args.endpoint_model,
            log=out / "serve.log",
        )
    )
    actions: Counter[str] = Counter()
    failed = skipped = 0
    with opened as memory:
        for commit in tqdm(new, desc="commits", unit="commit", disable=not sys.stderr.isatty()):
            try:
                parent = EMPTY_TREE if commit is base else None
                text = note(repo, commit, read_from, catalog, parent=parent)
                result = memory.add_note(
                    text, commit.at, title=commit.subject, commit=commit.sha, files=commit.files
                )
            except InputError as exc:  # this commit cannot be a note (a date in the future): go on
                memory.skip(commit.sha, str(exc))
                skipped += 1
                tqdm.write(f"{commit.sha[:9]}: skipped: {exc}", file=sys.stderr)
            else:
                actions.update(d.action for d in result.decisions)
                if result.error:
                    failed += 1
                    tqdm.write(f"{commit.sha[:9]}: {result.error}", file=sys.stderr)
        saved = memory.save(out / "memory.json")
        state = memory.state  # read from the store once for the three views
        rendered = state.render(args.budget)
        write_atomic(out / "state.md", f"# {repo.name}\n\n{state.render(10**9)}\n")
        write_atomic(out / "state.json", json.dumps(state_json(state, len(memory.seen)), indent=1) + "\n")
    said = ", ".join(f"{a} {n}" for a, n in sorted(actions.items())) or "no claim"
    summary = (
        f"\n{len(new)} commits read: {said}; {failed} note(s) failed, {skipped} skipped "
        f"({len(memory.skipped)} in all, with why: {saved})\n"
        f"state: {out / 'state.md'}, {out / 'state.json'}; memory: {store.path} (exported to {saved})"
    )
    return rendered, summary
