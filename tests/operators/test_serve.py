"""The vLLM launcher: its argument list, readiness on /v1/models, and process-group teardown.

The ``vllm`` executable is replaced by a script that runs VLLMTestDouble (a test double, not
vLLM), which is the only part that cannot run here.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from eval.serve import ServeConfig, ServerFailed, VLLMServer, free_port, vllm_command
from operators.backends import Request
from operators.backends.vllm import VLLMBackend

DOUBLE = Path(__file__).with_name("vllm_double.py")


@pytest.fixture
def adapters(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for op in ("extract", "compare", "update"):
        (tmp_path / op).mkdir()
        (tmp_path / op / "adapter_config.json").write_text("{}")
        out[op] = tmp_path / op
    return out


@pytest.fixture
def fake_vllm(tmp_path: Path) -> str:
    """An executable named like the real one that starts the double; argv is passed through."""
    exe = tmp_path / "bin" / "vllm"
    exe.parent.mkdir()
    root = Path(__file__).resolve().parents[2]
    exe.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(root)!r})\n"
        "from tests.operators.vllm_double import main\nmain(sys.argv)\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_command_is_an_argument_list(adapters: dict[str, Path]) -> None:
    cmd = vllm_command(ServeConfig(base="Qwen/Qwen2.5-14B-Instruct", port=8123), adapters)
    assert cmd[:3] == ["vllm", "serve", "Qwen/Qwen2.5-14B-Instruct"]
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--port") + 1] == "8123"
    assert "--enable-lora" in cmd
    assert cmd[cmd.index("--max-loras") + 1] == "3"
    assert cmd[cmd.index("--max-lora-rank") + 1] == "16"
    start = cmd.index("--lora-modules") + 1
    assert cmd[start : start + 3] == [
        f"{op}={adapters[op].resolve()}" for op in ("extract", "compare", "update")
    ]
    assert all(isinstance(a, str) for a in cmd)
    assert not any("api-key" in a for a in cmd), "the key travels in the environment, not argv"


def test_server_is_ready_when_adapters_are_listed_and_group_is_torn_down(
    adapters: dict[str, Path], fake_vllm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "k-123")
    monkeypatch.setenv("DOUBLE_STARTUP_S", "1.5")
    cfg = ServeConfig(base="tiny", port=0, executable=fake_vllm, startup_timeout_s=60)
    with VLLMServer(cfg, adapters, tmp_path / "serve.log") as server:
        port = server.cfg.port
        assert port > 0 and server.base_url == f"http://127.0.0.1:{port}/v1"  # port=0: a free one
        assert {"extract", "compare", "update"} <= server.listed()
        client = VLLMBackend(server.base_url, server.api_key)
        [reply] = client.complete([Request("extract", [{"role": "user", "content": "x"}], None, 8)])
        assert reply.text
        pid = server.process.pid
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_startup_failure_names_the_log_and_cleans_up(
    adapters: dict[str, Path], fake_vllm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOUBLE_CRASH", "1")
    cfg = ServeConfig(base="tiny", port=free_port(), executable=fake_vllm, startup_timeout_s=60)
    server = VLLMServer(cfg, adapters, tmp_path / "serve.log")
    with pytest.raises(ServerFailed, match=r"exited with code 3(.|\n)*CUDA out of memory"):
        server.__enter__()
    assert server.process is not None and server.process.poll() == 3


def test_missing_adapter_is_refused_before_starting(tmp_path: Path) -> None:
    with pytest.raises(ServerFailed, match="update="):
        VLLMServer(ServeConfig(), {"update": tmp_path / "nope"}, tmp_path / "log")
