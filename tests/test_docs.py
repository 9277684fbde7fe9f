"""Docs that cannot rot: every command in the README's and the guides' shell blocks composes its
config (config names, groups and fields exist; nothing runs), the Python of the README and of the
engine guide runs, and the configuration reference is the one the code generates."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from pathlib import Path

import pytest

from memops.cli import COMMANDS, named_config
from memops.core.config import compose_config
from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
HYDRA = {"train": "train", "build-data": "data", "loo": "loo", "demo": "smollm2-demo", "submit": "submit"}
HYDRA |= {"preflight": "submit", "replay": "replay", "report": "report"}
"""Each Hydra command and the config it composes by default."""
HYDRA_BENCHMARKS = {"learning_curve.py": "curve", "parity.py": "parity", "bench_heldout.py": "smollm2-cpu"}
"""The benchmarks that take Hydra overrides, and the config those reach."""
STAND_IN = {"mylib": "patch-guardrails"}
"""The own-repository guide's trajectory does not exist here: a shipped one stands in for it."""
HASH = re.compile(r"`[0-9a-f]{7,40}`")


def shell_lines(page: Path) -> list[str]:
    """The commands of a page's bash blocks: continuations joined, comments dropped, the
    variables the page has set so far (``SRC=...``, in this block or an earlier one, as a
    reader runs them in order) and the first value of a ``for`` loop substituted."""
    lines = []
    names: dict[str, str] = {}
    for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" # ")[0].strip()
            if line.startswith("#") or not line:
                continue
            if m := re.match(r"for (\w+) in (\S+)", line):
                names[m[1]] = m[2].rstrip(";")
                continue
            if m := re.fullmatch(r'(\w+)="(.*)"', line):
                names[m[1]] = m[2]
                continue
            for name, value in names.items():
                line = line.replace(f"${name}", value)
            lines += [part.strip() for part in line.split("&&")]
    return lines


def overrides(args: list[str]) -> list[str]:
    """``key=value`` arguments; an option's value (``--root X``) is not one."""
    return [a for a in args if "=" in a and not a.startswith("-")]


def config_name(args: list[str], default: str) -> str:
    return named_config(args)[0] or default


def checked_commands() -> list[tuple[str, str, list[str]]]:
    found = []
    for page in PAGES:
        for line in shell_lines(page):
            for stand_in, shipped in STAND_IN.items():
                line = line.replace(f"[{stand_in}]", f"[{shipped}]").replace(f"={stand_in} ", f"={shipped} ")
            words = shlex.split(line)
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value before a command
                words = words[1:]
            words = [w.removeprefix(".venv/bin/") for w in words]
            if not words or words[0] in ("do", "done"):
                continue
            where = f"{page.relative_to(ROOT)}: {line}"
            if words[0] == "memops":
                found.append((where, "memops", words[1:]))
            elif words[:2] == ["accelerate", "launch"]:
                rest = words[2:]
                at = rest.index("train.py") if "train.py" in rest else rest.index("memops.train")
                found.append((where, "memops", ["train", *rest[at + 1 :]]))
            elif words[0] == "python" and len(words) > 1 and words[1].startswith(("benchmarks/", "scripts/")):
                found.append((where, "python", words[1:]))
            elif words[0] == "make":
                found.append((where, "make", words[1:]))
    return found


COMMANDS_IN_DOCS = checked_commands()


def test_the_readme_is_short_and_tells_no_history() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for page in PAGES:
        text = page.read_text()
        assert not re.search(r"\b(session|issue) \d+", text, re.I), page
        if page.name not in ("README.md", "results.md"):
            assert not HASH.search(text), f"{page}: a commit hash outside the results"
    assert len(HASH.findall(readme)) == 1, "the README names the commit once, under its results"


def test_every_page_links_to_pages_that_exist() -> None:
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#]+)\)", page.read_text()):
            if not target.startswith("http"):
                assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} -> {target}"


def test_the_docs_have_commands_to_check() -> None:
    kinds = {kind for _, kind, _ in COMMANDS_IN_DOCS}
    assert kinds == {"memops", "python", "make"} and len(COMMANDS_IN_DOCS) > 60


@pytest.mark.parametrize(("where", "kind", "args"), COMMANDS_IN_DOCS, ids=[c[0] for c in COMMANDS_IN_DOCS])
def test_every_documented_command_composes(where: str, kind: str, args: list[str]) -> None:
    if kind == "make":
        targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
        assert args[0] in targets, where
        return
    if kind == "python":
        script = ROOT / args[0]
        assert script.is_file(), where
        if script.name in HYDRA_BENCHMARKS:
            compose_config(config_name(args, HYDRA_BENCHMARKS[script.name]), overrides(args[1:]))
        return
    command, rest = args[0], args[1:]
    assert command in COMMANDS, where
    if command in HYDRA and "--help" not in rest:
        compose_config(config_name(rest, HYDRA[command]), overrides(rest))


def test_a_renamed_field_fails_the_check() -> None:
    """The check above is a real one: a field the schema does not have is refused."""
    with pytest.raises(Exception, match="scenarios_per_famly"):
        compose_config("data", ["scenarios_per_famly=3"])


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)


def test_the_readme_engine_example_runs(capsys: pytest.CaptureFixture) -> None:
    engine = python_blocks(ROOT / "README.md")[0]
    exec(compile(engine, "README.md", "exec"), {})
    assert capsys.readouterr().out.split() == ["add", "contested", "PostgreSQL", "15"]


def adapters_here(block: str, adapters: Path) -> str:
    """The docs' adapters are those ``memops demo --config-name tiny-demo`` trains; the tests
    give the tiny model's adapters of one fold, trained by the same recipe."""
    return block.replace('"outputs/adapters/tiny/synthetic"', repr(str(adapters)))


@pytest.mark.slow
def test_the_readme_learned_memory_runs(
    trained_adapters: Path, tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # model=tiny reads the tiny base where the fixture built it
    learned = python_blocks(ROOT / "README.md")[1]
    assert len(learned.strip().splitlines()) <= 15
    block = adapters_here(learned, trained_adapters).replace(
        '"outputs/memory.json"', repr(str(tmp_path / "m.json"))
    )
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    saved = json.loads((tmp_path / "m.json").read_text())
    assert saved["engine"] == "learned" and saved["seen"] == ["a684a36"]


@pytest.mark.slow
def test_the_engine_guide_runs_top_to_bottom(
    trained_adapters: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    for block in python_blocks(ROOT / "docs" / "engine.md"):
        exec(compile(adapters_here(block, trained_adapters), "docs/engine.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "supersede  'PostgreSQL 16'" in out and "['dependency-cycle', 'resource-collision']" in out
    assert "PostgreSQL 16 current 06f82c1" in out
    assert namespace["saved"].with_name("project.json").exists()  # type: ignore[attr-defined]


def test_the_configuration_reference_is_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "config_reference", ROOT / "scripts" / "config_reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert page == module.reference(), "run: python scripts/config_reference.py > docs/configuration.md"
