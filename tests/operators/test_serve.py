"""The vLLM launcher before any server starts: its argument list, CPU and GPU settings, and the
inputs it refuses with a clear error. The running server is tested in tests/serve/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memops.core.models import ModelConfig
from memops.operators.backends import BackendError
from memops.operators.backends.hf import HFBackend
from memops.operators.backends.serve import SERVE_ENV_MARKER, ServeConfig, ServerFailed, VLLMServer
from memops.operators.registry import OPS


def adapter(root: Path, name: str, rank: int = 16, weights: bool = True) -> Path:
    """An adapter directory as train.py leaves it (real safetensors, a manifest), only small."""
    import torch
    from safetensors.torch import save_file

    path = root / name
    path.mkdir(parents=True)
    (path / "adapter_config.json").write_text(json.dumps({"r": rank, "lora_alpha": 2 * rank}))
    if weights:
        save_file({"lora_A.weight": torch.zeros(rank, 8)}, str(path / "adapter_model.safetensors"))
    (path / "manifest.json").write_text("{}")
    return path


def serve_env(root: Path, device: str) -> str:
    """A serving venv as scripts/make_serve_env.py leaves it: an interpreter and its marker."""
    python = root / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    (root / "venv" / SERVE_ENV_MARKER).write_text(json.dumps({"device": device, "vllm": "0.32.0"}))
    return str(python)


@pytest.fixture
def adapters(tmp_path: Path) -> dict[str, Path]:
    return {op: adapter(tmp_path / "adapters", op) for op in OPS}


def test_cpu_command_is_an_argument_list_without_gpu_flags(adapters: dict[str, Path], tmp_path: Path) -> None:
    cfg = ServeConfig(
        base="outputs/models/tiny", python=serve_env(tmp_path, "cpu"), port=8123, dtype="float32"
    )
    server = VLLMServer(cfg, adapters, tmp_path / "log")
    cmd = server.command()
    assert cmd[:3] == [cfg.python, "-m", "vllm.entrypoints.openai.api_server"]
    assert cmd[cmd.index("--model") + 1] == "outputs/models/tiny"
    assert cmd[cmd.index("--served-model-name") + 1] == server.served_name
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--port") + 1] == "8123"
    assert cmd[cmd.index("--dtype") + 1] == "float32"
    assert cmd[cmd.index("--max-lora-rank") + 1] == "16"
    assert cmd[cmd.index("--block-size") + 1] == "32"
    start = cmd.index("--lora-modules") + 1
    assert cmd[start : start + len(OPS)] == [f"{op}={adapters[op].resolve()}" for op in OPS]
    outputs = json.loads(cmd[cmd.index("--structured-outputs-config") + 1])
    assert outputs == {"backend": "xgrammar", "disable_any_whitespace": True}
    assert "--gpu-memory-utilization" not in cmd and "--tensor-parallel-size" not in cmd
    assert all(isinstance(a, str) for a in cmd)
    assert not any("api-key" in a for a in cmd), "the key travels in the environment, not argv"
    env = server.environment()
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "2" and env["VLLM_CPU_OMP_THREADS_BIND"] == "auto"
    assert env["VLLM_API_KEY"] == server.api_key


def test_gpu_command_keeps_gpu_flags_and_no_cpu_settings(adapters: dict[str, Path], tmp_path: Path) -> None:
    cfg = ServeConfig(base="Qwen/Qwen2.5-14B-Instruct", python=serve_env(tmp_path, "cuda"), dtype="bfloat16")
    server = VLLMServer(cfg, adapters, tmp_path / "log")
    cmd = server.command()
    assert cmd[cmd.index("--gpu-memory-utilization") + 1] == "0.9"
    assert cmd[cmd.index("--tensor-parallel-size") + 1] == "1"
    assert "VLLM_CPU_KVCACHE_SPACE" not in server.environment()
    assert "--block-size" not in cmd and "VLLM_CPU_NUM_OF_RESERVED_CPU" not in server.environment()


@pytest.mark.parametrize(
    ("cores", "setting", "reserved"), [(2, None, "0"), (4, None, "0"), (16, None, None), (2, 1, "1")]
)
def test_a_small_cpu_gives_the_models_threads_every_core(
    adapters: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cores: int, setting, reserved
) -> None:
    """vLLM keeps one core per worker for its scheduler; on 2 cores that is half the machine."""
    monkeypatch.setattr("memops.operators.backends.serve.os.sched_getaffinity", lambda _: set(range(cores)))
    cfg = ServeConfig(
        base="outputs/models/tiny", python=serve_env(tmp_path, "cpu"), cpu_reserved_cores=setting
    )
    assert (
        VLLMServer(cfg, adapters, tmp_path / "log").environment().get("VLLM_CPU_NUM_OF_RESERVED_CPU")
        == reserved
    )


def test_max_lora_rank_is_read_from_the_adapters(tmp_path: Path) -> None:
    dirs = {"extract": adapter(tmp_path, "extract", rank=8), "compare": adapter(tmp_path, "compare", rank=24)}
    server = VLLMServer(ServeConfig(python=serve_env(tmp_path, "cpu")), dirs, tmp_path / "log")
    assert server.max_lora_rank == 32  # the smallest value vLLM accepts that covers r=24


def test_a_rank_above_the_configured_limit_is_refused(tmp_path: Path) -> None:
    dirs = {"compare": adapter(tmp_path, "compare", rank=32)}
    cfg = ServeConfig(python=serve_env(tmp_path, "cpu"), max_lora_rank=16)
    with pytest.raises(ServerFailed, match=r"above max_lora_rank=16: compare \(r=32\)"):
        VLLMServer(cfg, dirs, tmp_path / "log")


def test_an_adapter_without_weights_is_refused(tmp_path: Path) -> None:
    dirs = {"update": adapter(tmp_path, "update", weights=False)}
    with pytest.raises(BackendError, match=r"'update' \(.*\): no adapter_model\.safetensors"):
        VLLMServer(ServeConfig(python=serve_env(tmp_path, "cpu")), dirs, tmp_path / "log")


def test_an_adapter_directory_without_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"'update' \(.*nope\): no such directory"):
        VLLMServer(
            ServeConfig(python=serve_env(tmp_path, "cpu")), {"update": tmp_path / "nope"}, tmp_path / "l"
        )


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            "truncate",
            r"adapter_model\.safetensors is damaged: the header describes \d+ bytes, the file holds \d+",
        ),
        ("no-config", r"no adapter_config\.json"),
        ("unfinished", r"no manifest\.json, so its training never finished"),
    ],
)
def test_a_damaged_or_unfinished_adapter_is_named_with_its_file(
    damage: str, message: str, tmp_path: Path
) -> None:
    """The same check guards the hf backend and the server (operators/adapters.py)."""
    path = adapter(tmp_path, "compare")
    weights = path / "adapter_model.safetensors"
    if damage == "truncate":
        weights.write_bytes(weights.read_bytes()[:-10])
    elif damage == "no-config":
        (path / "adapter_config.json").unlink()
    else:
        (path / "manifest.json").unlink()
    with pytest.raises(BackendError, match=rf"adapter 'compare' \({path}\): {message}"):
        VLLMServer(ServeConfig(python=serve_env(tmp_path, "cpu")), {"compare": path}, tmp_path / "log")
    with pytest.raises(BackendError, match=rf"adapter 'compare' \({path}\): {message}"):
        HFBackend.load(ModelConfig(name="none", path=str(tmp_path / "no-model")), {"compare": path})


def test_a_missing_serving_env_names_the_command_that_makes_it(
    adapters: dict[str, Path], tmp_path: Path
) -> None:
    cfg = ServeConfig(python=str(tmp_path / "absent" / "bin" / "python"))
    with pytest.raises(ServerFailed, match="make it with: make serve-env"):
        VLLMServer(cfg, adapters, tmp_path / "log")


def test_the_server_computes_in_the_dtype_the_hf_backend_would() -> None:
    """One field, ``backend.dtype``, sets both backends; unset, both use the model's own."""
    from memops.operators.backends.factory import BackendConfig, serving

    model = ModelConfig(name="tiny", path="outputs/models/tiny", compute_dtype="float32")
    assert serving(BackendConfig(kind="vllm"), model).dtype == "float32"
    assert serving(BackendConfig(kind="vllm", dtype="bfloat16"), model).dtype == "bfloat16"
    assert serving(BackendConfig(kind="vllm"), model).base == "outputs/models/tiny"
    apart = BackendConfig(kind="vllm", serve=ServeConfig(dtype="bfloat16"))
    with pytest.raises(BackendError, match=r"set backend\.dtype"):
        serving(apart, model)
