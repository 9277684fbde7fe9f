"""VLLMTestDouble: a test double of vLLM's OpenAI-compatible server, not vLLM.

It speaks the documented shapes only: ``GET /v1/models`` (``{"object": "list", "data": [{"id", "object":
"model", ...}]}``, LoRA modules listed by name) and ``POST /v1/chat/completions`` (an OpenAI
chat completion with ``choices[0].message.content`` and ``usage``). It checks the bearer key,
rejects unknown model names with 404 as vLLM does, records every payload, and answers from a
script of ``(status, content)`` replies. It also measures how many requests were in flight
at once.

For probes it also answers ``POST /tokenize`` (the UTF-8 bytes of the messages as token ids)
and ``POST /v1/completions`` on token ids, decoding token 0 every step with its log-probability,
as a server would whose environment lacks ``plugins/vllm-forced-tokens``.

The real server is tested in tests/serve/; this stand-in is kept only for what a real server
cannot be made to do on demand: scripted 5xx and 429 replies, malformed 200 replies, slow
replies, a count of concurrent requests, and a server without the forced-tokens plugin (the
serving venv always installs it).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class VLLMTestDouble:
    def __init__(self, models: list[str], api_key: str, delay_s: float = 0.0, port: int = 0) -> None:
        self.models = models
        self.api_key = api_key
        self.delay_s = delay_s
        self.payloads: list[dict[str, Any]] = []
        self.replies: deque[tuple[int, str]] = deque()
        self.raw_replies: deque[tuple[str, bytes]] = deque()
        """Malformed 200 replies, sent before any scripted one: (content type, body)."""
        self.default = (200, '{"ok":true}')
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> VLLMTestDouble:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _reply(self) -> tuple[int, str]:
        with self._lock:
            return self.replies.popleft() if self.replies else self.default

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorised(self) -> bool:
                if self.headers.get("Authorization") == f"Bearer {double.api_key}":
                    return True
                self._send(401, {"error": "Unauthorized"})
                return False

            def do_GET(self) -> None:
                if not self._authorised():
                    return
                if self.path != "/v1/models":
                    self._send(404, {"detail": "Not Found"})
                    return
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "vllm", "root": m, "parent": None}
                    for m in double.models
                ]
                self._send(200, {"object": "list", "data": data})

            def do_POST(self) -> None:
                if not self._authorised():
                    return
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/tokenize":
                    self._send(200, {"tokens": list(json.dumps(payload["messages"]).encode())})
                    return
                with double._lock:
                    double.payloads.append(payload)
                    double.in_flight += 1
                    double.max_in_flight = max(double.max_in_flight, double.in_flight)
                try:
                    time.sleep(double.delay_s)
                    if payload.get("model") not in double.models:
                        message = f"The model `{payload.get('model')}` does not exist."
                        self._send(404, {"object": "error", "message": message, "type": "NotFoundError"})
                        return
                    with double._lock:
                        raw = double.raw_replies.popleft() if double.raw_replies else None
                    if raw is not None:
                        self.send_response(200)
                        self.send_header("Content-Type", raw[0])
                        self.send_header("Content-Length", str(len(raw[1])))
                        self.end_headers()
                        self.wfile.write(raw[1])
                        return
                    status, content = double._reply()
                    if status != 200:
                        kind = "RateLimitError" if status == 429 else "InternalServerError"
                        self._send(status, {"object": "error", "message": content, "type": kind})
                        return
                    if self.path == "/v1/completions":
                        self._send(200, text_completion(payload["model"], payload["max_tokens"]))
                    else:
                        self._send(200, completion(payload["model"], content))
                finally:
                    with double._lock:
                        double.in_flight -= 1

        return Handler


def reply(kind: str, model: str, choice: dict[str, Any], tokens: int) -> dict[str, Any]:
    """An OpenAI reply of ``kind`` holding one choice, ``tokens`` of them generated."""
    return {
        "id": f"{kind}-double",
        "object": kind,
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, **choice}],
        "usage": {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens},
    }


def completion(model: str, content: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": content, "tool_calls": []}
    choice = {"message": message, "logprobs": None, "finish_reason": "stop", "stop_reason": None}
    return reply("chat.completion", model, choice, 5)


def text_completion(model: str, tokens: int) -> dict[str, Any]:
    """``tokens`` tokens, each token id 0, as ``return_tokens_as_token_ids`` names them."""
    logprobs = {
        "text_offset": [0] * tokens,
        "token_logprobs": [-0.5] * tokens,
        "tokens": ["token_id:0"] * tokens,
        "top_logprobs": [{"token_id:0": -0.5}] * tokens,
    }
    return reply(
        "text_completion", model, {"text": "", "logprobs": logprobs, "finish_reason": "length"}, tokens
    )
