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

from operators.backends import BASE, BackendError, Completion, Odds, Probe, Request

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
        """One token per probe, with the top ``TOP_LOGPROBS`` of the model's raw distribution at
        that position (vLLM's default ``logprobs_mode``, as the hf backend reads them)."""
        readings = [Request(p.adapter, p.messages, None, 1) for p in probes]
        answers = asyncio.run(self._all(readings, TOP_LOGPROBS))
        return [self._odds(p, c) for p, c in zip(probes, answers, strict=True)]

    @staticmethod
    def _odds(probe: Probe, completion: Completion) -> Odds:
        if completion.refused:
            return Odds((), completion.latency_s, refused=completion.refused)
        top = completion.top_logprobs or {}
        if not top:
            raise BackendError("the server returned no logprobs for a probe")
        floor = min(top.values())
        found = [_option_logprob(option, top, floor) for option in probe.options]
        peak = max(found)
        weights = [math.exp(x - peak) for x in found]
        return Odds(tuple(w / sum(weights) for w in weights), completion.latency_s)

    async def _all(self, requests: Sequence[Request], top_logprobs: int = 0) -> list[Completion]:
        from openai import AsyncOpenAI

        # Retries are ours (transport errors only), so the client's own are off.
        client = AsyncOpenAI(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=0
        )
        gate = asyncio.Semaphore(self.concurrency)
        async with client:
            if self.base_model is None and any(r.adapter == BASE for r in requests):
                self.base_model = await self._base(client)
            return list(await asyncio.gather(*(self._one(client, gate, r, top_logprobs) for r in requests)))

    async def _base(self, client: AsyncOpenAI) -> str:
        listed = [m.model_dump() async for m in client.models.list()]
        bases = [m["id"] for m in listed if m.get("parent") is None]
        if len(bases) != 1:
            raise BackendError(
                f"{self.base_url}: cannot tell the base model among {[m['id'] for m in listed]}"
            )
        return bases[0]

    async def _one(
        self, client: AsyncOpenAI, gate: asyncio.Semaphore, request: Request, top_logprobs: int = 0
    ) -> Completion:
        import openai

        extra = {"structured_outputs": {"json": request.json_schema}} if request.json_schema else None
        reading = {"logprobs": True, "top_logprobs": top_logprobs} if top_logprobs else {}
        for attempt in range(self.retries + 1):
            async with gate:
                began = time.perf_counter()
                try:
                    response = await client.chat.completions.create(
                        model=self.base_model if request.adapter == BASE else request.adapter,
                        messages=request.messages,  # type: ignore[arg-type]
                        max_tokens=request.max_tokens,
                        temperature=0,
                        extra_body=extra,
                        **reading,
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
            top = {t.token: t.logprob for t in logprobs.content[0].top_logprobs}
        return Completion(text=text, latency_s=seconds, completion_tokens=tokens, top_logprobs=top)


TOP_LOGPROBS = 20
"""The alternatives a probe reads at its token: vLLM's default ``--max-logprobs``."""


def _option_logprob(option: str, top: dict[str, float], floor: float) -> float:
    """An option's first-token log-probability among the server's top alternatives: the token
    that spells the option, else the longest one that begins it. An option outside the top
    gets the lowest listed value, an upper bound on its own: it then weighs no more than it can."""
    starts = [t for t in top if t and option.startswith(t)]
    return top[max(starts, key=len)] if starts else floor
