"""Client of a vLLM OpenAI-compatible server with the three adapters served as LoRA modules.

Each request names its adapter as the model and passes its JSON schema as vLLM's
``structured_outputs`` extra parameter; decoding is greedy (temperature 0). Requests run
concurrently under a bound. Only transport failures (connection errors, timeouts, 429, 5xx)
are retried, with exponential backoff; a reply that is not a chat completion (no choices, an
HTML page) is a server fault and raises; an answer that is not valid JSON is a model error for the
operator layer to record, never a reason to ask again. A 400 refuses one request (a prompt
longer than the served context): that sample fails with the server's reason and the run goes on;
any other refusal (401, 404: a wrong key, an adapter not served) stops the run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memops.operators.backends import (
    BASE,
    BackendError,
    Completion,
    Odds,
    Probe,
    Request,
    parting,
    renormalized,
)

if TYPE_CHECKING:
    import httpx
    from openai import AsyncOpenAI

FORCED_TOKENS = "forced_tokens"
"""The ``vllm_xargs`` key of the token ids a probe's request is decoded along: the key the
serving environment's logits processor reads (``KEY`` of ``plugins/vllm-forced-tokens``)."""


@dataclass
class VLLMBackend:
    base_url: str
    """Up to and including ``/v1``, e.g. ``http://127.0.0.1:8000/v1``."""
    api_key: str
    concurrency: int = 32
    timeout_s: float = 120.0
    retries: int = 4
    backoff_s: float = 0.5
    base_model: str | None = None
    """The served base's name, asked for by ``BASE`` requests; unset: the listed model without a
    parent (vLLM lists each LoRA module with its base as parent)."""

    def complete(self, requests: Sequence[Request]) -> list[Completion]:
        return asyncio.run(self._all(requests))

    def served_adapters(self) -> dict[str, str]:
        """The LoRA modules the server lists, by name, with the path each was loaded from
        (``root`` in vLLM's ``/v1/models``)."""
        import openai

        try:
            listed = asyncio.run(self._listed(self._client()))
        except (openai.APIConnectionError, openai.APIStatusError) as exc:
            raise BackendError(
                f"{self.base_url}/models: no listing ({type(exc).__name__}: {exc}); is the server up?"
            ) from exc
        return {m["id"]: str(m.get("root") or "") for m in listed if m.get("parent") is not None}

    @staticmethod
    async def _listed(client: AsyncOpenAI) -> list[dict[str, Any]]:
        return [m.model_dump() async for m in client.models.list()]

    def probe(self, probes: Sequence[Probe]) -> list[Odds]:
        """Each option's tokens read teacher-forced, through the completions endpoint on token
        ids: one request per option, its prompt the tokens the options share, decoded along the
        option's own tokens (``vllm_xargs.forced_tokens``, which the serving environment's
        logits processor enforces, ``plugins/vllm-forced-tokens``) with each step's
        log-probability returned from the raw distribution, as the hf backend reads it. The
        shared prompt is a prefix the cache mostly holds, which vLLM's prompt logprobs would not
        read. The rows come from the served chat template and tokenizer (``/tokenize``), in
        context."""
        return asyncio.run(self._probe(probes))

    async def _probe(self, probes: Sequence[Probe]) -> list[Odds]:
        gate = asyncio.Semaphore(self.concurrency)
        async with self._http() as http:  # every probe's options at once, on one connection pool
            rows = await asyncio.gather(*(self._option_rows(http, gate, p) for p in probes))
        parts = [parting(begun, p.options) for p, begun in zip(probes, rows, strict=True)]
        client = self._client()
        async with client:
            if self.base_model is None and any(p.adapter == BASE for p in probes):
                self.base_model = await self._base(client)
            read = await asyncio.gather(
                *(
                    self._read(client, gate, p.adapter, row[:part], row[part:])
                    for p, begun, part in zip(probes, rows, parts, strict=True)
                    for row in begun
                )
            )
        out, at = [], 0
        for p in probes:
            readings, at = read[at : at + len(p.options)], at + len(p.options)
            seconds = sum(r[1] for r in readings)
            refused = next((r[2] for r in readings if r[2]), None)
            if refused:
                out.append(Odds((), seconds, refused=refused))
            else:
                out.append(Odds(renormalized([r[0] for r in readings]), seconds))
        return out

    async def _option_rows(
        self, http: httpx.AsyncClient, gate: asyncio.Semaphore, probe: Probe
    ) -> list[list[int]]:
        """The token ids of the prompt with each option begun as the reply, as the served chat
        template and tokenizer render them (``/tokenize``, continuing the assistant message)."""
        return list(
            await asyncio.gather(
                *(
                    self._tokenize(
                        http,
                        gate,
                        {
                            "messages": [*probe.messages, {"role": "assistant", "content": option}],
                            "add_generation_prompt": False,
                            "continue_final_message": True,
                        },
                    )
                    for option in probe.options
                )
            )
        )

    def _client(self) -> AsyncOpenAI:
        """An OpenAI client on the server; retries are ours (transport errors only), so the
        client's own are off."""
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=0
        )

    async def _all(self, requests: Sequence[Request]) -> list[Completion]:
        client, gate = self._client(), asyncio.Semaphore(self.concurrency)
        async with client, self._http() as http:
            if self.base_model is None and any(r.adapter == BASE for r in requests):
                self.base_model = await self._base(client)
            texts = list(dict.fromkeys(r.favour for r in requests if r.favour))
            said = [self._tokenize(http, gate, {"prompt": t, "add_special_tokens": False}) for t in texts]
            tokens = dict(zip(texts, await asyncio.gather(*said), strict=True))
            biases = [
                {str(t): r.favour_bias for t in tokens[r.favour]} if r.favour else None for r in requests
            ]
            return list(
                await asyncio.gather(
                    *(self._one(client, gate, r, b) for r, b in zip(requests, biases, strict=True))
                )
            )

    def _http(self) -> httpx.AsyncClient:
        """A client on the server's own routes beside ``/v1`` (``/tokenize``), with the key."""
        import httpx

        root = self.base_url.removesuffix("/").removesuffix("/v1")
        return httpx.AsyncClient(
            base_url=root, timeout=self.timeout_s, headers={"Authorization": f"Bearer {self.api_key}"}
        )

    async def _tokenize(
        self, http: httpx.AsyncClient, gate: asyncio.Semaphore, body: dict[str, Any]
    ) -> list[int]:
        """vLLM's ``/tokenize``: a text, or a chat through the served template."""
        import httpx

        async with gate:
            try:
                reply = await http.post("/tokenize", json=body)
            except httpx.HTTPError as e:
                raise BackendError(
                    f"{http.base_url}tokenize: no answer ({type(e).__name__}: {e}); is the server up?"
                ) from e
        if reply.status_code != 200:
            raise BackendError(
                f"{http.base_url}tokenize answered HTTP {reply.status_code}: {reply.text[:200]}"
            )
        return reply.json()["tokens"]

    async def _base(self, client: AsyncOpenAI) -> str:
        listed = await self._listed(client)
        bases = [m["id"] for m in listed if m.get("parent") is None]
        if len(bases) != 1:
            raise BackendError(
                f"{self.base_url}: cannot tell the base model among {[m['id'] for m in listed]}"
            )
        return bases[0]

    async def _one(
        self,
        client: AsyncOpenAI,
        gate: asyncio.Semaphore,
        request: Request,
        bias: dict[str, float] | None = None,
    ) -> Completion:
        response, seconds, refused = await self._call(
            gate,
            request.adapter,
            lambda: client.chat.completions.create(
                model=self._served(request.adapter),
                messages=request.messages,  # type: ignore[arg-type]
                max_tokens=request.max_tokens,
                temperature=0,
                **self._constrained(request, bias),
            ),
        )
        if refused:
            return Completion("", seconds, 0, refused=refused)
        return self._completion(request, response, seconds)

    async def _read(
        self,
        client: AsyncOpenAI,
        gate: asyncio.Semaphore,
        adapter: str,
        prompt: list[int],
        tokens: list[int],
    ) -> tuple[float, float, str | None]:
        """The log-probability of ``tokens`` following the prompt ``prompt``, decoded along them:
        (log-probability, seconds, why the server refused it)."""
        response, seconds, refused = await self._call(
            gate,
            adapter,
            lambda: client.completions.create(
                model=self._served(adapter),
                prompt=prompt,
                max_tokens=len(tokens),
                temperature=0,
                logprobs=0,
                extra_body={
                    "vllm_xargs": {FORCED_TOKENS: tokens},
                    "ignore_eos": True,
                    "return_tokens_as_token_ids": True,
                },
            ),
        )
        if refused:
            return 0.0, seconds, refused
        try:
            logprobs = response.choices[0].logprobs
            decoded = [int(t.removeprefix("token_id:")) for t in logprobs.tokens]
            read = sum(logprobs.token_logprobs)
        except (AttributeError, IndexError, TypeError, ValueError) as e:
            raise BackendError(
                f"{self.base_url}: the reply to a {adapter} probe holds no log-probabilities "
                f"({type(e).__name__}: {e}): {str(response)[:200]!r}"
            ) from e
        if decoded != tokens:
            raise BackendError(
                f"{self.base_url}: a {adapter} probe decoded {decoded} where it named {tokens}: the "
                "server does not force tokens; its environment needs plugins/vllm-forced-tokens "
                "(make serve-env installs it)"
            )
        return read, seconds, None

    @staticmethod
    def _constrained(request: Request, bias: dict[str, float] | None) -> dict[str, Any]:
        """What a chat request adds to hold its answer to the schema: vLLM's own
        ``structured_outputs`` (and the logit bias of a favoured text)."""
        extra: dict[str, Any] = (
            {"structured_outputs": {"json": request.json_schema}} if request.json_schema else {}
        )
        if bias:
            extra["logit_bias"] = bias
        return {"extra_body": extra or None}

    def _served(self, adapter: str) -> str:
        """The model name a request asks for: the adapter's, or the base's for ``BASE``."""
        return self.base_model if adapter == BASE and self.base_model else adapter

    async def _call(
        self, gate: asyncio.Semaphore, adapter: str, create: Callable[[], Awaitable[Any]]
    ) -> tuple[Any, float, str | None]:
        """One request under the concurrency bound, retried on transport failures only:
        (response, seconds, None), or (None, seconds, reason) when the server refused this request
        alone (HTTP 400: too long, a bad schema)."""
        import openai

        for attempt in range(self.retries + 1):
            async with gate:
                began = time.perf_counter()
                try:
                    response = await create()
                except (openai.APIConnectionError, openai.InternalServerError, openai.RateLimitError) as e:
                    failure: Exception = e
                except openai.AuthenticationError as e:
                    raise BackendError(f"{self.base_url}: the server refused the API key (HTTP 401)") from e
                except openai.BadRequestError as e:
                    return None, time.perf_counter() - began, f"HTTP 400: {e.message}"
                except openai.APIStatusError as e:
                    raise BackendError(
                        f"{self.base_url}: the server refused a {adapter} request "
                        f"(HTTP {e.status_code}): {e.message}"
                    ) from e
                else:
                    return response, time.perf_counter() - began, None
            if attempt < self.retries:
                await asyncio.sleep(self.backoff_s * 2**attempt)
        raise BackendError(
            f"{self.base_url}: no answer to a {adapter} request after {self.retries + 1} attempts "
            f"({type(failure).__name__}: {failure}); is the server up?"
        )

    def _completion(self, request: Request, response: Any, seconds: float) -> Completion:
        try:
            text = response.choices[0].message.content or ""
        except (AttributeError, IndexError, TypeError) as e:
            shown = str(response)[:200]
            raise BackendError(
                f"{self.base_url}: the reply to a {request.adapter} request is not a chat completion "
                f"({type(e).__name__}): {shown!r}"
            ) from e
        usage = getattr(response, "usage", None)
        tokens = usage.completion_tokens if usage else 0
        return Completion(text=text, latency_s=seconds, completion_tokens=tokens)
