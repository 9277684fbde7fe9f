"""The vLLM client against VLLMTestDouble, a stand-in that speaks vLLM's documented HTTP shapes.

Only faults a real server cannot be made to show on demand are tested here (scripted 5xx and
429, malformed 200 replies, slow replies); the real server is tested in tests/serve/.
"""

from __future__ import annotations

import socket

import pytest

from memops.memory.example import example_claims
from memops.operators.backends import BackendError, Probe, Request
from memops.operators.backends.vllm import VLLMBackend
from memops.operators.learned import LearnedOperators
from memops.operators.prompts import compare_messages
from memops.operators.schemas import CompareOutput, json_schema
from tests.operators.vllm_double import VLLMTestDouble

KEY = "test-key"
ADAPTERS = ["Qwen/Qwen2.5-14B-Instruct", "extract", "compare", "update"]


def backend(double: VLLMTestDouble, **kw) -> VLLMBackend:
    return VLLMBackend(base_url=double.base_url, api_key=KEY, backoff_s=0.01, **kw)


def test_payload_is_exactly_the_documented_request() -> None:
    messages = compare_messages(*example_claims()[:2])
    schema = json_schema(CompareOutput)
    with VLLMTestDouble(ADAPTERS, KEY) as double:
        double.default = (200, '{"relation":"unrelated","winner":"none"}')
        [reply] = backend(double).complete([Request("compare", messages, schema, 24)])
    assert reply.text == '{"relation":"unrelated","winner":"none"}'
    assert reply.completion_tokens == 5
    [payload] = double.payloads
    assert payload == {
        "model": "compare",
        "messages": messages,
        "max_tokens": 24,
        "temperature": 0,
        "structured_outputs": {"json": schema},
    }


def test_unconstrained_request_sends_no_structured_outputs() -> None:
    with VLLMTestDouble(ADAPTERS, KEY) as double:
        backend(double).complete([Request("update", [{"role": "user", "content": "hi"}], None, 8)])
    assert "structured_outputs" not in double.payloads[0]


def test_concurrency_is_bounded() -> None:
    requests = [Request("update", [{"role": "user", "content": str(i)}], None, 8) for i in range(12)]
    with VLLMTestDouble(ADAPTERS, KEY, delay_s=0.15) as double:
        replies = backend(double, concurrency=3).complete(requests)
    assert len(replies) == 12 and len(double.payloads) == 12
    assert double.max_in_flight == 3


def test_a_500_then_a_200_is_one_retry() -> None:
    with VLLMTestDouble(ADAPTERS, KEY) as double:
        double.replies.extend([(500, "engine hiccup"), (200, '{"action":"add"}')])
        [reply] = backend(double).complete([Request("update", [{"role": "user", "content": "x"}], None, 8)])
    assert reply.text == '{"action":"add"}'
    assert len(double.payloads) == 2
    assert double.payloads[0] == double.payloads[1]


def test_invalid_json_is_a_recorded_failure_not_a_retry() -> None:
    with VLLMTestDouble(ADAPTERS, KEY) as double:
        double.default = (200, '{"relation": "conflicting", "winn')
        ops = LearnedOperators(backend(double))
        [outcome] = ops.compare([tuple(example_claims()[:2])])
    assert len(double.payloads) == 1
    assert outcome.output is None
    assert outcome.raw == '{"relation": "conflicting", "winn'
    assert outcome.error is not None and outcome.error.startswith("invalid JSON")


def test_a_429_is_retried_with_backoff() -> None:
    with VLLMTestDouble(ADAPTERS, KEY) as double:
        double.replies.extend([(429, "slow down"), (429, "slow down"), (200, '{"action":"add"}')])
        [reply] = backend(double).complete([Request("update", [{"role": "user", "content": "x"}], None, 8)])
    assert reply.text == '{"action":"add"}'
    assert len(double.payloads) == 3


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/json", b'{"id":"x","object":"chat.completion","model":"update","choices":[]}'),
        ("text/html", b"<html><body>502 Bad Gateway</body></html>"),
    ],
    ids=["empty-choices", "html"],
)
def test_a_malformed_200_is_a_backend_error_naming_url_and_adapter(content_type: str, body: bytes) -> None:
    with VLLMTestDouble(ADAPTERS, KEY) as double:
        double.raw_replies.append((content_type, body))
        with pytest.raises(BackendError, match=r"127\.0\.0\.1:\d+/v1: the reply to a update request"):
            backend(double).complete([Request("update", [{"role": "user", "content": "x"}], None, 8)])


def test_unreachable_server_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = VLLMBackend(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, retries=2, backoff_s=0.01)
    with pytest.raises(BackendError, match=rf"127.0.0.1:{port}/v1.*after 3 attempts.*is the server up"):
        client.complete([Request("extract", [{"role": "user", "content": "x"}], None, 8)])


def test_a_server_that_does_not_force_a_probes_tokens_is_a_clear_error() -> None:
    """A probe reads an option's log-probability from the tokens the server decoded along it; a
    server without the forced-tokens logits processor decodes its own, and the probe says so
    rather than scoring them."""
    messages = [{"role": "user", "content": "does the note state ci.runner?"}]
    options = ('{"pairs":["ci.runner"]}', '{"pairs":[]}')
    with (
        VLLMTestDouble(ADAPTERS, KEY) as double,
        pytest.raises(BackendError, match=r"does not force tokens.*plugins/vllm-forced-tokens"),
    ):
        backend(double).probe([Probe("extract", messages, options)])
    sent = [p for p in double.payloads if "prompt" in p]
    assert sent and all(p["vllm_xargs"]["forced_tokens"] for p in sent)
