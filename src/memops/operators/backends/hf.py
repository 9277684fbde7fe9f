"""Local inference with transformers + peft: three adapters on one base, switched per request.

Schemas are enforced with xgrammar, the grammar engine vLLM uses, so a schema constrains the
tiny model on CPU as it constrains the served model. The grammar is compiled for compact JSON
(no free whitespace, ``,`` and ``:`` separators): that is exactly the shape of the training
completions, and it bounds the length of every constrained answer. The prompt is the
tokenizer's chat template with the generation prompt, the string training saw before the
completion.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from memops.core.determinism import deterministic_cpu
from memops.operators.adapters import check_adapter
from memops.operators.backends import (
    BASE,
    BackendError,
    Completion,
    Messages,
    Odds,
    Probe,
    Request,
    parting,
    renormalized,
)
from memops.operators.backends.prefixes import (
    IM_END,
    Layers,
    StemCache,
    common_prefix,
    read_continuations,
    run_prefix,
    stem_ends,
)

PREFIX = "op_"
"""peft names adapters as module attributes; ``update`` would shadow ``nn.Module.update``."""


class SchemaCompiler:
    """Compiles JSON schemas once per tokenizer; compiled grammars are reused across batches."""

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        import xgrammar as xgr

        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        self._compiler = xgr.GrammarCompiler(info)
        self._compile = lru_cache(maxsize=512)(self._compile_text)

    def _compile_text(self, schema: str):  # -> xgr.CompiledGrammar
        return self._compiler.compile_json_schema(schema, any_whitespace=False, separators=(",", ":"))

    def __call__(self, schema: dict[str, Any]):  # -> xgr.CompiledGrammar
        # Never sort the keys: xgrammar emits properties in the order the schema text lists
        # them, and the training completions follow the model's field order.
        return self._compile(json.dumps(schema))


def prompt_text(tokenizer: Any, messages: Messages) -> str:
    """The exact string the model is conditioned on; training renders the same string."""
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def favour_processor(
    tokenizer: Any, favours: list[tuple[str | None, float]], vocab: int
):  # -> LogitsProcessor
    """Adds each row's bias to the logits of the tokens of its own text (``Request.favour``)."""
    import torch
    from transformers import LogitsProcessor

    add = torch.zeros(len(favours), vocab)
    for row, (text, bias) in enumerate(favours):
        if text:
            add[row, tokenizer(text, add_special_tokens=False)["input_ids"]] = bias

    class Favour(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            return scores + add[:, : scores.shape[-1]].to(scores.device, scores.dtype)

    return Favour()


def batched_starts(starts: list[tuple[int, Layers | None]], width: int) -> Layers:
    """The rows' start caches as one batch's, each row's first ``n`` positions its own start and
    the rest zeros (the mask keeps them out), ``width`` positions in all."""
    layers = []
    for k, (keys, _) in enumerate(next(start for _, start in starts if start)):
        batched = [keys.new_zeros(len(starts), keys.shape[1], width, keys.shape[3]) for _ in range(2)]
        for r, (n, start) in enumerate(starts):
            if start:
                batched[0][r, :, :n], batched[1][r, :, :n] = start[k][0][0], start[k][1][0]
        layers.append((batched[0], batched[1]))
    return layers


def generate(
    model: Any,
    tokenizer: Any,
    prompts: list[Messages],
    max_tokens: int,
    grammars: list[Any] | None = None,
    favours: list[tuple[str | None, float]] | None = None,
    stems: StemCache | None = None,
    adapter: str = BASE,
) -> tuple[list[str], list[int]]:
    """Greedy completions and their token counts for a batch of chats.

    ``grammars`` holds one compiled grammar or ``None`` per row; rows without one decode freely.
    ``favours``: per row, a text whose tokens get a bias (or None), applied before the grammar.

    The rows' common token prefix (the system prompt, and for extraction the catalog too: 289
    to 353 tokens of select prompts averaging 573 to 872, per held-out trajectory) is run once
    and its key/value cache handed to every row. With ``stems``, a row whose stems
    (``stem_ends``) reach past that prefix starts from the longest one's cache instead, kept
    under ``adapter`` for the next call that shares it (``StemCache``). Each row is laid out as its
    start, then padding, then the rest of its prompt; positions come from the attention mask,
    so every token sits where it sits in its own unpadded prompt.
    """
    import torch
    import xgrammar as xgr
    from transformers import DynamicCache

    texts = [prompt_text(tokenizer, p) for p in prompts]
    rows = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    shared = (
        min(min(common_prefix(rows[0], row) for row in rows), min(map(len, rows)) - 1) if len(rows) > 1 else 0
    )

    @functools.cache
    def common() -> Layers | None:
        return run_prefix(model, rows[0][:shared]) if shared else None

    starts: list[tuple[int, Layers | None]] = []
    for text, row in zip(texts, rows, strict=True):
        ends = [n for n in stem_ends(tokenizer, text, row) if n > shared] if stems is not None else []
        starts.append(
            stems.start(model, adapter, row, ends, lambda: (shared, common())) if ends else (shared, common())
        )
    begun = max(n for n, _ in starts)
    width = max(len(row) - n for row, (n, _) in zip(rows, starts, strict=True))
    ids = torch.full((len(rows), begun + width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, (row, (n, _)) in enumerate(zip(rows, starts, strict=True)):
        rest = begun + width - (len(row) - n)  # where the row's own tokens begin
        ids[r, :n], ids[r, rest:] = torch.tensor(row[:n]), torch.tensor(row[n:])
        mask[r, :n] = mask[r, rest:] = 1
    cache = DynamicCache(ddp_cache_data=batched_starts(starts, begun)) if begun else None
    processors = []
    if favours and any(text for text, _ in favours):
        processors.append(favour_processor(tokenizer, favours, model.config.vocab_size))
    if grammars and any(g is not None for g in grammars):
        if any(g is None for g in grammars):
            raise ValueError("a batch is either all constrained or all free; split it first")
        processors.append(xgr.contrib.hf.LogitsProcessor(grammars))
    eos = tokenizer.convert_tokens_to_ids(IM_END)
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids.to(model.device),
            attention_mask=mask.to(model.device),
            past_key_values=cache,
            max_new_tokens=max_tokens,
            do_sample=False,
            logits_processor=processors,
            eos_token_id=eos,
            pad_token_id=tokenizer.pad_token_id,
        )
    new = out[:, ids.shape[1] :]
    counts = [int(((row != tokenizer.pad_token_id) & (row != eos)).sum()) for row in new]
    return [tokenizer.decode(row, skip_special_tokens=True) for row in new], counts


class HFBackend:
    """A base model with named LoRA adapters; each request runs under the adapter it names.

    With no adapters at all every request runs on the bare base, which is how an untrained
    model is probed. Requests are grouped by adapter, by whether they are constrained and by
    token budget,
    then batched in order of prompt length so padding stays small.
    """

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 8) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.adapters: tuple[str, ...] = tuple(
            name.removeprefix(PREFIX) for name in getattr(model, "peft_config", {}) or ()
        )
        self.compile = SchemaCompiler(tokenizer, model.config.vocab_size)
        self.stems: StemCache | None = StemCache()
        """Kept stems of prompts (``StemCache``); None keeps none."""

    @classmethod
    def load(cls, model_cfg: Any, adapters: Mapping[str, str | Path], batch_size: int = 8) -> HFBackend:
        """Load the base as training did (4-bit when the model config says so), then the adapters."""
        from memops.core.models import load_model

        deterministic_cpu()
        for name, path in adapters.items():  # before the base: a bad adapter fails in a second
            check_adapter(name, path)
        model, tokenizer = load_model(model_cfg)
        model.eval()
        backend = cls(model, tokenizer, batch_size)
        backend.add_adapters(adapters)
        return backend

    def add_adapters(self, adapters: Mapping[str, str | Path]) -> None:
        """Load more adapters beside those loaded: a run that started while one was still in
        training loads it once it is finished (``LooConfig.wait_for_training_s``)."""
        from peft import PeftModel

        for name, path in adapters.items():
            check_adapter(name, path)
        # peft maps an adapter's keys through the model's ``state_dict()``, and bitsandbytes
        # answers that by unpacking every 4-bit weight it packed for its CPU kernel at the first
        # forward pass; packed again, their scales differ in the last bits (the tiny model's
        # pair scores moved by 3%). The packed weights are put back as they were, so an adapter
        # loaded late scores as one loaded at the start.
        packed = [
            (w, w.data, copy.deepcopy(w.quant_state))
            for w in self.model.parameters()
            if getattr(getattr(w, "quant_state", None), "packing_format_for_cpu", False)
        ]
        for name, path in adapters.items():
            if isinstance(self.model, PeftModel):
                self.model.load_adapter(str(path), adapter_name=PREFIX + name)
            else:
                self.model = PeftModel.from_pretrained(self.model, str(path), adapter_name=PREFIX + name)
        for w, data, state in packed:
            w.data, w.quant_state = data, state
        self.model.eval()
        self.adapters = (*self.adapters, *adapters)

    def too_long(self, request: Request) -> str | None:
        """Why the model cannot take this request, as vLLM refuses it (HTTP 400): the prompt and
        the tokens to generate exceed its positions. Past them the model would decode from
        positions it never saw, with only the tokenizer's warning."""
        text = prompt_text(self.tokenizer, request.messages)
        n = len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        positions = self.model.config.max_position_embeddings
        if n + request.max_tokens <= positions:
            return None
        return (
            f"the prompt's {n} tokens and {request.max_tokens} to generate exceed the model's "
            f"{positions} positions"
        )

    def complete(self, requests: Sequence[Request]) -> list[Completion]:
        out: list[Completion | None] = [None] * len(requests)
        groups: dict[tuple[str, bool, int], list[int]] = {}
        for i, r in enumerate(requests):
            self._check(r.adapter)
            if reason := self.too_long(r):
                out[i] = Completion("", 0.0, 0, refused=reason)
                continue
            groups.setdefault((r.adapter, r.json_schema is not None, r.max_tokens, r.stem), []).append(i)
        for (adapter, _, max_tokens, stem), idx in groups.items():
            with self._running(adapter):
                self._generate(requests, idx, adapter, max_tokens, out, self.stems if stem else None)
        return [c for c in out if c is not None]

    def probe(self, probes: Sequence[Probe]) -> list[Odds]:
        out: list[Odds | None] = [None] * len(probes)
        by_adapter: dict[str, list[int]] = {}
        positions = self.model.config.max_position_embeddings
        for i, p in enumerate(probes):
            self._check(p.adapter)
            by_adapter.setdefault(p.adapter, []).append(i)
        for adapter, idx in by_adapter.items():
            rows: list[list[int]] = []
            starts: list[int] = []
            owners: list[int] = []
            prompts: list[tuple[str, list[int], int]] = []  # per owner: its prompt, first row, rows
            for i in idx:
                text = prompt_text(self.tokenizer, probes[i].messages)
                begun = [
                    self.tokenizer(text + o, add_special_tokens=False)["input_ids"] for o in probes[i].options
                ]
                longest = max(map(len, begun))
                if longest > positions:
                    said = (
                        f"the prompt and its longest option, {longest} tokens, exceed the "
                        f"model's {positions} positions"
                    )
                    out[i] = Odds((), 0.0, refused=said)
                    continue
                part = parting(begun, probes[i].options)
                rows += begun
                starts += [part] * len(begun)
                owners.append(i)
                prompts.append((text, begun[0], len(begun)))
            if not owners:
                continue
            began = time.perf_counter()
            with self._running(adapter):
                kept = [self._stem(adapter, text, row) for text, row, _ in prompts]
                per_row = [stem for stem, (_, _, n) in zip(kept, prompts, strict=True) for _ in range(n)]
                logprobs = iter(read_continuations(self.model, rows, starts, stems=per_row))
            share = (time.perf_counter() - began) / len(owners)
            for i in owners:
                out[i] = Odds(renormalized([next(logprobs) for _ in probes[i].options]), share)
        return [o for o in out if o is not None]

    def _stem(self, adapter: str, text: str, row: list[int]) -> tuple[int, Layers] | None:
        """The longest stem of a prompt ``text`` (tokens ``row``) kept under ``adapter``, if any.
        A probe keeps none of its own: the prior weight's calibration probes notes that no other
        call asks about, and their stems, run apart, made it a quarter slower."""
        ends = stem_ends(self.tokenizer, text, row) if self.stems is not None else []
        return next(((n, kept) for n in reversed(ends) if (kept := self.stems.get(adapter, row[:n]))), None)

    def _check(self, adapter: str) -> None:
        if self.adapters and adapter not in (*self.adapters, BASE):
            raise BackendError(f"no adapter named {adapter!r}; loaded: {', '.join(self.adapters)}")

    def _running(self, adapter: str) -> contextlib.AbstractContextManager[object]:
        """The adapter named, or none at all for ``BASE`` (peft's disable_adapter)."""
        if not self.adapters:
            return contextlib.nullcontext()
        if adapter == BASE:
            return self.model.disable_adapter()
        self.model.set_adapter(PREFIX + adapter)
        return contextlib.nullcontext()

    def _generate(
        self,
        requests: Sequence[Request],
        idx: list[int],
        adapter: str,
        max_tokens: int,
        out: list[Completion | None],
        stems: StemCache | None,
    ) -> None:
        """Greedy batches of the requests at ``idx``, shortest prompts first, into ``out``."""
        idx.sort(key=lambda i: len(prompt_text(self.tokenizer, requests[i].messages)))
        for start in range(0, len(idx), self.batch_size):
            chunk = [requests[i] for i in idx[start : start + self.batch_size]]
            grammars = [self.compile(r.json_schema) if r.json_schema else None for r in chunk]
            began = time.perf_counter()
            texts, counts = generate(
                self.model,
                self.tokenizer,
                [r.messages for r in chunk],
                max_tokens,
                grammars,
                [(r.favour, r.favour_bias) for r in chunk],
                stems,
                adapter,
            )
            share = (time.perf_counter() - began) / len(chunk)
            for i, text, n in zip(idx[start : start + self.batch_size], texts, counts, strict=True):
                out[i] = Completion(text=text, latency_s=share, completion_tokens=n)
