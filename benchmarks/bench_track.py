"""How right ``memops track`` is on a repository nobody annotated: its final state against the
facts the repository's own files state at the last commit read.

    python benchmarks/bench_track.py --repo <git dir> --adapters outputs/adapters/smollm2-135m-instruct/all \\
        --model smollm2-135m-instruct [--since 2020-01-01] [--out outputs/bench/track]

Runs ``memops track`` with the shipped ``python-project`` catalog, then reads the truth from the
files at the branch's tip: ``requires-python`` and the build backend from ``pyproject.toml``
(``setup.cfg`` for the first), the licence, the test runner (pytest configured or required,
tox or nox files), the linter and formatter from ``.pre-commit-config.yaml`` and ``pyproject.toml``,
the CI platform and its systems from ``.github/workflows``, and the lower bounds of the runtime
dependencies. Per slot it prints: found (the memory holds a value), right (the value names the
fact: every one of the fact's tokens appears in it), wrong, missed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path


def show(repo: Path, rev: str, path: str) -> str | None:
    done = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


def files(repo: Path, rev: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", rev],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def truth(repo: Path, rev: str) -> dict[str, list[str]]:
    """Each catalog pair's fact as the tokens a right value must name; absent when the files do
    not state it."""
    facts: dict[str, list[str]] = {}
    names = files(repo, rev)
    project = tomllib.loads(show(repo, rev, "pyproject.toml") or "")
    meta = project.get("project", {})
    if requires := meta.get("requires-python"):
        facts["python.supported_versions"] = re.findall(r"\d+\.\d+", requires)
    if backend := project.get("build-system", {}).get("build-backend"):
        facts["build.backend"] = [backend.split(".")[0].replace("_", "-").split("-")[0]]
    license_ = meta.get("license")
    if isinstance(license_, str):
        facts["project.license"] = re.findall(r"[A-Za-z]+", license_)[:1]
    text = json.dumps(project) + (show(repo, rev, "tox.ini") or "") + (show(repo, rev, "setup.cfg") or "")
    if "pytest" in text:
        facts["tests.runner"] = ["pytest"]
    hooks = show(repo, rev, ".pre-commit-config.yaml") or ""
    tools = {t for t in ("ruff", "flake8", "pylint") if t in hooks or f"tool.{t}" in text}
    if tools:
        facts["lint.linter"] = sorted(tools)[:1]
    formatter = "ruff" if "ruff-format" in hooks else "black" if "black" in hooks else None
    if formatter:
        facts["lint.formatter"] = [formatter]
    workflows = [n for n in names if n.startswith(".github/workflows/")]
    if workflows:
        systems = set()
        for name in workflows:
            body = show(repo, rev, name) or ""
            systems |= {s for s in ("windows", "macos", "ubuntu") if s in body.lower()}
        facts["ci.platforms"] = ["github"]  # the platform; its systems vary in wording (ubuntu, Linux)
    bounds = [re.split(r"[<>=!~ ;\[]", d)[0] for d in meta.get("dependencies", []) if ">=" in d]
    if bounds:
        facts["dependencies.minimums"] = bounds
    return facts


def tokens(text: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9.]+", text.lower()) if t}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, required=True)
    ap.add_argument("--adapters", type=Path, required=True)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--branch", default="HEAD")
    ap.add_argument("--since")
    ap.add_argument("--out", type=Path, default=Path("outputs/bench/track"))
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    argv = [sys.executable, "-m", "memops", "track", str(args.repo), "--catalog", "python-project"]
    argv += ["--adapters", str(args.adapters), "--model", args.model, "--branch", args.branch]
    argv += ["--out", str(args.out), *(["--since", args.since] if args.since else []), *args.overrides]
    began = time.perf_counter()
    subprocess.run(argv, check=True)
    took = time.perf_counter() - began
    state = json.loads((args.out / "state.json").read_text())
    held = {k["key"]: k for k in state["keys"] if (k["branch"], k["env"]) == ("main", "production")}
    tip = subprocess.run(
        ["git", "-C", str(args.repo), "rev-parse", args.branch], capture_output=True, text=True, check=True
    ).stdout.strip()
    facts = truth(args.repo, tip)
    print(f"\n{args.repo.name} at {tip[:12]}, {state['commits']} commits read in {took / 60:.1f} min\n")
    print("| slot | fact (from the files) | memory | verdict |")
    print("| --- | --- | --- | --- |")
    count = {"right": 0, "wrong": 0, "missed": 0, "no fact": 0}
    for pair in sorted(set(facts) | set(held)):
        fact, value = facts.get(pair), held.get(pair, {}).get("value")
        if fact is None:
            verdict = "no fact"
        elif value is None:
            verdict = "missed"
        else:
            verdict = "right" if {t.lower() for t in fact} <= tokens(value) else "wrong"
        count[verdict] += 1
        print(f"| {pair} | {' '.join(fact) if fact else '-'} | {value or '-'} | {verdict} |")
    found, right, wrong, missed = (
        count["right"] + count["wrong"],
        count["right"],
        count["wrong"],
        count["missed"],
    )
    print(f"\nfacts {len(facts)}: found {found}, right {right}, wrong {wrong}, missed {missed}")


if __name__ == "__main__":
    main()
