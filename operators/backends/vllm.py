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
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from operators.backends import BASE, BackendError, Completion, Messages, Odds, Probe, Request, first_tokens

if TYPE_CHECKING:
    from openai import AsyncOpenAI


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

    def probe(self, probes: Sequence[Probe]) -> list[Odds]:
        """One token per probe, with the log-probabilities of the options' first tokens at that
        position (vLLM's ``logprob_token_ids``, from the raw distribution as the hf backend reads
        it). The first tokens come from the served tokenizer, in context (``_first_tokens``)."""
        out: list[Odds | None] = [None] * len(probes)
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, p in enumerate(probes):
            groups.setdefault(p.options, []).append(i)
        for options, idx in groups.items():
            ids = asyncio.run(self._first_tokens(probes[idx[0]].messages, options))
            reading = {"logprobs": True, "logprob_token_ids": ids, "return_tokens_as_token_ids": True}
            readings = [Request(probes[i].adapter, probes[i].messages, None, 1) for i in idx]
            for i, c in zip(idx, asyncio.run(self._all(readings, reading)), strict=True):
                out[i] = _odds(c, ids)
        return [o for o in out if o is not None]

    async def _first_tokens(self, messages: Messages, options: Sequence[str]) -> list[int]:
        """Each option's first token id after the generation prompt, as the served chat template
        and tokenizer render it (vLLM's ``/tokenize`` on the chat, then with the option begun)."""
        before = await self._tokenize({"messages": messages, "add_generation_prompt": True})
        begun = [
            await self._tokenize(
                {
                    "messages": [*messages, {"role": "assistant", "content": option}],
                    "add_generation_prompt": False,
                    "continue_final_message": True,
                }
            )
            for option in options
        ]
        return first_tokens(before, begun, options)

    async def _all(
        self, requests: Sequence[Request], reading: dict[str, Any] | None = None
    ) -> list[Completion]:
        from openai import AsyncOpenAI

        # Retries are ours (transport errors only), so the client's own are off.
        client = AsyncOpenAI(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=0
        )
        gate = asyncio.Semaphore(self.concurrency)
        async with client:
            if self.base_model is None and any(r.adapter == BASE for r in requests):
                self.base_model = await self._base(client)
            texts = list(dict.fromkeys(r.favour for r in requests if r.favour))
            tokens = dict(zip(texts, await asyncio.gather(*map(self._token_ids, texts)), strict=True))
            biases = [
                {str(t): r.favour_bias for t in tokens[r.favour]} if r.favour else None for r in requests
            ]
            return list(
                await asyncio.gather(
                    *(self._one(client, gate, r, reading, b) for r, b in zip(requests, biases, strict=True))
                )
            )

    async def _token_ids(self, text: str) -> list[int]:
        """The served tokenizer's ids for ``text``, for a ``logit_bias``."""
        return await self._tokenize({"prompt": text, "add_special_tokens": False})

    async def _tokenize(self, body: dict[str, Any]) -> list[int]:
        """vLLM's ``/tokenize`` (beside ``/v1``): a text, or a chat through the served template."""
        import httpx

        root = self.base_url.removesuffix("/").removesuffix("/v1")
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as http:
                reply = await http.post(
                    f"{root}/tokenize", json=body, headers={"Authorization": f"Bearer {self.api_key}"}
                )
        except httpx.HTTPError as e:
            raise BackendError(
                f"{root}/tokenize: no answer ({type(e).__name__}: {e}); is the server up?"
            ) from e
        if reply.status_code != 200:
            raise BackendError(f"{root}/tokenize answered HTTP {reply.status_code}: {reply.text[:200]}")
        return reply.json()["tokens"]

    async def _base(self, client: AsyncOpenAI) -> str:
        listed = [m.model_dump() async for m in client.models.list()]
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
        reading: dict[str, Any] | None = None,
        bias: dict[str, float] | None = None,
    ) -> Completion:
        import openai

        extra: dict[str, Any] = (
            {"structured_outputs": {"json": request.json_schema}} if request.json_schema else {}
        )
        if bias:
            extra["logit_bias"] = bias
        extra |= reading or {}
        for attempt in range(self.retries + 1):
            async with gate:
                began = time.perf_counter()
                try:
                    response = await client.chat.completions.create(
                        model=self.base_model if request.adapter == BASE else request.adapter,
                        messages=request.messages,  # type: ignore[arg-type]
                        max_tokens=request.max_tokens,
                        temperature=0,
                        extra_body=extra or None,
                    )
                except (openai.APIConnectionError, openai.InternalServerError, openai.RateLimitError) as e:
                    failure: Exception = e
                except openai.AuthenticationError as e:
                    raise BackendError(f"{self.base_url}: the server refused the API key (HTTP 401)") from e
                except openai.BadRequestError as e:  # this request only (too long, bad schema)
                    return Completion("", time.perf_counter() - began, 0, refused=f"HTTP 400: {e.message}")
                except openai.APIStatusError as e:
                    raise BackendError(
                        f"{self.base_url}: the server refused a {request.adapter} request "
                        f"(HTTP {e.status_code}): {e.message}"
                    ) from e
                else:
                    return self._completion(request, response, time.perf_counter() - began)
            if attempt < self.retries:
                await asyncio.sleep(self.backoff_s * 2**attempt)
        raise BackendError(
            f"{self.base_url}: no answer to a {request.adapter} request after {self.retries + 1} attempts "
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
        logprobs = getattr(response.choices[0], "logprobs", None)
        top = None
        if logprobs is not None and logprobs.content:
            top = {t.token: t.logprob for t in logprobs.content[0].top_logprobs}  # "token_id:<n>"
        return Completion(text=text, latency_s=seconds, completion_tokens=tokens, top_logprobs=top)


def _odds(completion: Completion, ids: Sequence[int]) -> Odds:
    """The options' probabilities from the logprobs of their first tokens, renormalized."""
    if completion.refused:
        return Odds((), completion.latency_s, refused=completion.refused)
    top = completion.top_logprobs or {}
    try:
        found = [top[f"token_id:{i}"] for i in ids]
    except KeyError as e:
        raise BackendError(
            f"the server returned no logprob for token {e} of a probe: {sorted(top)[:5]}"
        ) from e
    peak = max(found)
    weights = [math.exp(x - peak) for x in found]
    return Odds(tuple(w / sum(weights) for w in weights), completion.latency_s)
