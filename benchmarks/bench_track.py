"""How right ``memops track`` is on repositories nobody trained on: each one's final state
against the facts its own files state at the last commit read.

    python benchmarks/bench_track.py --repos DIR [DIR ...] --adapters DIR \\
        [--model smollm2-135m-instruct] [--since 2024-01-01] [--extract two-stage-proposed] \\
        [--out outputs/bench/track] [overrides ...]

Runs ``memops track`` with the shipped ``python-project`` catalog on each repository (an argument
list; a rerun reads only new commits), then reads the truth at the branch's tip with the miner's
own readers (``data.facts`` through the catalog's ``read_from``: the values ``memops mine`` would
write). Per slot: right (the memory's value on main/production, in its type's one spelling, is
the files' value), wrong, missed (the files state it, the memory holds nothing), and values of
another type (none can be, with typed slots). With ``--since``, the facts are read where the
window starts too (the files ``memops track`` reads first): the verdicts over the facts the
commits in the window changed are counted apart (``changed``). Tables per repository
and in all are printed and written to ``<out>/track.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from memops.data.catalog import load_catalog, load_read_from
from memops.data.mine import Blobs, facts_at, files_at
from memops.track.git import start

CATALOG = "python-project"
VERDICTS = ("right", "wrong", "missed", "no fact")


def tip(repo: Path, branch: str) -> str:
    argv = ["git", "-C", str(repo), "rev-parse", "--verify", "--end-of-options", branch]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def truth(repo: Path, commit: str) -> dict[str, str]:
    """Each slot's value at ``commit`` as the miner reads it; a slot the files do not state (or
    dispute) is left out."""
    _, read_from = load_read_from(CATALOG)
    blobs = Blobs(repo)
    try:
        files = files_at(repo, blobs, commit, [p for r in read_from for p in r.files])
    finally:
        blobs.close()
    values, _ = facts_at(files, read_from)
    return {pair: value for pair, value in values.items() if value is not None}


def verdicts(
    facts: dict[str, str], held: dict[str, str], earlier: dict[str, str] | None = None
) -> list[dict[str, str | bool | None]]:
    """Per catalog slot, the files' value, the memory's and the verdict; ``changed``: the commits
    read set the value (it differs from ``earlier``, the facts before them; all, without)."""
    catalog = load_catalog(CATALOG)
    rows = []
    for pair in catalog.pairs():
        fact, value = facts.get(pair), held.get(pair)
        typed = catalog.value_type(pair).normalise(value) if value is not None else None
        if fact is None:
            verdict = "no fact"
        elif value is None:
            verdict = "missed"
        else:
            verdict = "right" if typed == fact else "wrong"
        changed = fact is not None and (earlier is None or earlier.get(pair) != fact)
        rows.append(
            {
                "slot": pair,
                "fact": fact,
                "memory": value,
                "typed": typed is not None,
                "verdict": verdict,
                "changed": changed,
            }
        )
    return rows


def track(repo: Path, args: argparse.Namespace, out: Path) -> float:
    argv = [sys.executable, "-m", "memops", "track", str(repo), "--catalog", CATALOG]
    argv += ["--adapters", str(args.adapters), "--model", args.model, "--branch", args.branch]
    argv += ["--extract", args.extract]
    argv += ["--out", str(out), *(["--since", args.since] if args.since else []), *args.overrides]
    began = time.perf_counter()
    subprocess.run(argv, check=True)
    return time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=Path, nargs="+", required=True)
    ap.add_argument("--adapters", type=Path, required=True)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--branch", default="HEAD")
    ap.add_argument("--since")
    ap.add_argument("--extract", default="two-stage-overlap", help="memops track's --extract")
    ap.add_argument("--out", type=Path, default=Path("outputs/bench/track"))
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    report, total, changed = [], Counter(), Counter()
    for repo in args.repos:
        name = repo.resolve().name if repo.name != "repo" else repo.resolve().parent.name
        out = args.out / name
        took = track(repo, args, out)
        state = json.loads((out / "state.json").read_text())
        held = {
            k["key"]: k["value"] for k in state["keys"] if (k["branch"], k["env"]) == ("main", "production")
        }
        at = tip(repo, args.branch)
        # The facts where the window starts, which memops track reads first (track.git.start).
        base = start(repo, args.branch, args.since, load_read_from(CATALOG)[1]) if args.since else None
        rows = verdicts(truth(repo, at), held, truth(repo, base.sha) if base else None)
        count = Counter(r["verdict"] for r in rows)
        total.update(count)
        changed.update(r["verdict"] for r in rows if r["changed"])
        report.append(
            {"repository": name, "tip": at, "commits": state["commits"], "minutes": took / 60, "slots": rows}
        )
        print(f"\n{name} at {at[:12]}, {state['commits']} commits read in {took / 60:.1f} min\n")
        print("| slot | the files | memory | verdict | set in the window |\n| --- | --- | --- | --- | --- |")
        for r in rows:
            mark = "yes" if r["changed"] else ""
            print(f"| {r['slot']} | {r['fact'] or '-'} | {r['memory'] or '-'} | {r['verdict']} | {mark} |")
        print("; ".join(f"{v} {count[v]}" for v in VERDICTS))
    facts = total["right"] + total["wrong"] + total["missed"]
    print(
        f"\nin all, {facts} facts stated by the files: " + "; ".join(f"{v} {total[v]}" for v in VERDICTS[:3])
    )
    untyped = sum(1 for r in report for s in r["slots"] if s["memory"] is not None and not s["typed"])
    if args.since:
        print(
            f"of them set by the commits read ({sum(changed.values())}): "
            + "; ".join(f"{v} {changed[v]}" for v in VERDICTS[:3])
        )
    print(f"values not of their slot's type: {untyped}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "track.json").write_text(
        json.dumps({"repositories": report, "total": dict(total), "changed": dict(changed)}, indent=1) + "\n"
    )
    print(f"-> {args.out / 'track.json'}")


if __name__ == "__main__":
    main()
