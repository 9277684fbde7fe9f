"""Local inference with transformers: batched greedy decoding under a JSON-schema grammar.

The grammar engine is xgrammar, the one vLLM uses, so a schema constrains the tiny model on
CPU exactly as it constrains the served model. The prompt is rendered by the tokenizer's chat
template with the generation prompt, the same string training saw before the completion.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

Messages = list[dict[str, str]]


class SchemaCompiler:
    """Compiles JSON schemas once per tokenizer; compiled grammars are reused across batches."""

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        import xgrammar as xgr

        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        self._compiler = xgr.GrammarCompiler(info)
        self._compile = lru_cache(maxsize=256)(self._compiler.compile_json_schema)

    def __call__(self, schema: dict[str, Any]):  # -> xgr.CompiledGrammar
        return self._compile(json.dumps(schema, sort_keys=True))


def generate(
    model: Any,
    tokenizer: Any,
    prompts: list[Messages],
    max_tokens: int,
    grammars: list[Any] | None = None,
) -> list[str]:
    """Greedy completions for a batch of chats; with ``grammars``, each row is constrained."""
    import torch
    import xgrammar as xgr

    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    tokenizer.padding_side = "left"
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
    processors = [xgr.contrib.hf.LogitsProcessor(grammars)] if grammars else []
    with torch.inference_mode():
        out = model.generate(
            **batch,
            max_new_tokens=max_tokens,
            do_sample=False,
            logits_processor=processors,
            eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
            pad_token_id=tokenizer.pad_token_id,
        )
    new = out[:, batch["input_ids"].shape[1] :]
    return [tokenizer.decode(row, skip_special_tokens=True) for row in new]
