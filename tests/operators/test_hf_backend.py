"""The hf backend on the tiny model in 4-bit: constrained outputs, adapter switching, two stages."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from memops.core.models import ModelConfig
from memops.data.trajectory import load_trajectory
from memops.operators.backends import BASE, BackendError, Request
from memops.operators.backends.hf import HFBackend, prompt_text
from memops.operators.backends.prefixes import StemCache, stem_ends
from memops.operators.learned import LearnedOperators
from memops.operators.prompts import extract_messages, fill_messages, select_messages
from memops.operators.registry import OPS
from memops.operators.schemas import CompareOutput, ExtractOutput, Selection, json_schema
from tests.conftest import shipped

pytestmark = pytest.mark.slow


def tiny_config(path: Path) -> ModelConfig:
    return ModelConfig(name="tiny", path=str(path), compute_dtype="float32", gradient_checkpointing=False)


@pytest.fixture(scope="module")
def bare(tiny_model: Path) -> HFBackend:
    """The base with no adapter: an operator that was never trained."""
    return HFBackend.load(tiny_config(tiny_model), {})


@pytest.fixture(scope="module")
def random_adapters(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three LoRA adapters with random (not zero) B matrices, so each changes the output."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("adapters")
    out = {}
    for seed, op in enumerate(OPS):
        torch.manual_seed(seed)
        base = AutoModelForCausalLM.from_pretrained(str(tiny_model), dtype=torch.float32)
        lora = LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        get_peft_model(base, lora).save_pretrained(str(root / op))
        (root / op / "manifest.json").write_text('{"note": "random LoRA weights, made by the test"}')
        out[op] = root / op
    return out


@pytest.fixture(scope="module")
def notes(export_dir: Path):
    episode = load_trajectory("patch-guardrails", shipped(export_dir))
    return episode, [(s.note(), episode.catalog) for s in episode.sessions[:6]]


def test_two_stage_outputs_validate_even_untrained(bare: HFBackend, notes) -> None:
    episode, sourced = notes
    ops = LearnedOperators(bare)
    selects = ops.select(sourced)
    assert all(o.error is None and isinstance(o.output, Selection) for o in selects), [o.raw for o in selects]
    pairs = set(episode.catalog.pairs())
    assert all(set(o.output.pairs) <= pairs for o in selects)
    # Stage 2 for every catalog pair of two notes, so fills are exercised whatever stage 1 chose.
    items = [(note, catalog, pair) for note, catalog in sourced[:2] for pair in catalog.pairs()]
    fills = ops.fill(items)
    for (_, _, pair), outcome in zip(items, fills, strict=True):
        assert outcome.error is None, outcome.raw
        assert f"{outcome.output.entity}.{outcome.output.slot}" == pair
    extractions = ops.extract(sourced, "two-stage")
    assert all(e.error is None for e in extractions)
    for e in extractions:
        ExtractOutput.model_validate({"claims": [c.model_dump() for c in e.claims]})  # raises if invalid
    assert ops.calls["select"] == 2 * len(sourced) and ops.calls["fill"] == len(items) + sum(
        len(e.calls) - 1 for e in extractions
    )


def test_a_batch_decodes_each_prompt_as_it_decodes_alone(bare: HFBackend, tiny_model: Path, notes) -> None:
    """A batch runs its prompts' common start once (the catalog of a select prompt) and pads in
    the middle; every row still decodes what it decodes on its own, prompts of unequal length
    included."""
    _, sourced = notes
    assert bare.batch_size >= len(sourced)  # one batch
    alone = HFBackend.load(tiny_config(tiny_model), {}, batch_size=1)
    requests = [Request(BASE, select_messages(n, c), None, 16) for n, c in sourced]
    assert len({len(prompt_text(bare.tokenizer, r.messages)) for r in requests}) > 1
    assert [c.text for c in bare.complete(requests)] == [c.text for c in alone.complete(requests)]


def test_the_calls_about_one_note_run_its_stem_once_and_decode_as_without(tiny_model: Path, notes) -> None:
    """A direct extraction, stage 1 and each stage-2 fill of a note are separate calls whose
    prompts are the same up to the task, the last paragraph of the later ones. Each later call
    finds that stem (catalog and note) kept by an earlier one and runs on from it, a single
    request too, and decodes what it decodes with no stem kept. A request that does not ask for
    its stems to be kept (``Request.stem``: a compare or update call) keeps none."""
    _, sourced = notes
    kept = HFBackend.load(tiny_config(tiny_model), {})
    plain = HFBackend.load(tiny_config(tiny_model), {})
    plain.stems = None
    first = sourced[1][1].pairs()[2]
    steps = [
        [Request(BASE, extract_messages(n, c), None, 16, stem=True) for n, c in sourced[:3]],
        [Request(BASE, select_messages(n, c), None, 16, stem=True) for n, c in sourced[:3]],
        [
            Request(BASE, fill_messages(n, c, p), None, 16, stem=True)
            for n, c in sourced[:3]
            for p in c.pairs()[:2]
        ],
        [Request(BASE, fill_messages(*sourced[1], first), None, 16, stem=True)],
    ]
    for k, requests in enumerate(steps):
        for r in requests:
            text = prompt_text(kept.tokenizer, r.messages)
            row = kept.tokenizer(text, add_special_tokens=False)["input_ids"]
            task = stem_ends(kept.tokenizer, text, row)[0]  # the stem before the last paragraph
            assert (kept.stems.get(BASE, row[:task]) is not None) == (k > 0)
        assert [c.text for c in kept.complete(requests)] == [c.text for c in plain.complete(requests)]
    stems = len(kept.stems)
    kept.complete([Request(BASE, select_messages(*sourced[4]), None, 16)])
    assert len(kept.stems) == stems


def test_a_stem_cache_drops_the_least_recently_used_past_its_budget() -> None:
    import torch

    def layers(tokens: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(torch.zeros(1, 1, tokens, 4), torch.zeros(1, 1, tokens, 4))]  # 32 bytes a token

    stems = StemCache(budget=32 * 10)
    stems.put("a", [1], layers(4))
    stems.put("b", [1], layers(4))
    assert stems.get("a", [1]) is not None  # "b" is now the least recently used
    stems.put("a", [2], layers(4))
    assert stems.get("b", [1]) is None and stems.get("a", [1]) and stems.get("a", [2])
    stems.put("a", [3], layers(20))  # over the budget alone: kept, and every other stem dropped
    assert len(stems) == 1 and stems.get("a", [3])
    stems.clear()
    assert len(stems) == 0 and stems.get("a", [3]) is None
    stems.put("a", [4], layers(10))  # the budget counts from nothing again: 10 tokens fit
    stems.put("b", [4], layers(0))
    assert len(stems) == 2


def test_constrained_decoding_matches_the_schema(bare: HFBackend, notes) -> None:
    episode, sourced = notes
    claims = [c for s in episode.sessions[:4] for c in s.memory_claims()]
    outcomes = LearnedOperators(bare).compare(list(pairwise(claims)))
    assert outcomes and all(isinstance(o.output, CompareOutput) for o in outcomes), [o.raw for o in outcomes]
    free = LearnedOperators(bare, constrained=False).extract(sourced[:2])
    assert all(len(e.calls) == 1 for e in free)  # free text may or may not parse; it never raises


def test_adapters_switch_per_request(tiny_model: Path, random_adapters: dict[str, Path]) -> None:
    prompt = [{"role": "user", "content": "Which database does the app use?"}]
    mixed = HFBackend.load(tiny_config(tiny_model), random_adapters, batch_size=4)
    assert mixed.adapters == OPS
    order = ["update", "extract", "compare", "extract", "update"]
    replies = mixed.complete([Request(op, prompt, None, 12) for op in order])
    alone = {}
    for op in OPS:
        single = HFBackend.load(tiny_config(tiny_model), {op: random_adapters[op]})
        alone[op] = single.complete([Request(op, prompt, None, 12)])[0].text
    assert [r.text for r in replies] == [alone[op] for op in order]
    assert len(set(alone.values())) > 1, "adapters with random weights should not all agree"
    with pytest.raises(BackendError, match="no adapter named 'judge'"):
        mixed.complete([Request("judge", prompt, json_schema(CompareOutput), 8)])


def test_base_requests_run_without_any_adapter(
    bare: HFBackend, tiny_model: Path, random_adapters: dict[str, Path]
) -> None:
    """The prompted baseline: BASE on a backend holding adapters answers as the bare base."""
    prompt = [{"role": "user", "content": "Which database does the app use?"}]
    mixed = HFBackend.load(tiny_config(tiny_model), random_adapters)
    replies = mixed.complete([Request(op, prompt, None, 12) for op in ("compare", BASE, "update", BASE)])
    base = bare.complete([Request(BASE, prompt, None, 12)])[0].text
    assert replies[1].text == replies[3].text == base
    assert replies[0].text != base, "the compare adapter should change the answer"
    assert mixed.complete([Request("compare", prompt, None, 12)])[0].text == replies[0].text


def test_a_prompt_past_the_models_positions_fails_one_sample(bare: HFBackend, notes) -> None:
    """As vLLM answers 400 to it: that note's extraction fails with the reason, the next is answered."""
    _, sourced = notes
    note, catalog = sourced[0]
    long = note.model_copy(update={"text": "word " * 20_000})
    too_long, fine = LearnedOperators(bare).extract([(long, catalog), sourced[1]], "direct")
    [call] = too_long.calls
    assert call.output is None and call.raw == ""
    assert call.error.startswith("refused by the backend: the prompt's") and "4096 positions" in call.error
    assert fine.calls[0].raw


def test_a_favoured_text_is_copied_at_a_large_bias(bare: HFBackend, notes) -> None:
    """``Request.favour``: at +100 on the favoured tokens every token decoded is one of them, so
    the answer is spelled with the favoured text's characters; without it, it is not."""
    _, sourced = notes
    note, catalog = sourced[0]
    messages = LearnedOperators(bare).extract([(note, catalog)], "direct")[0].calls[0].messages
    favour = "retry budget of three attempts"
    plain, favoured = bare.complete(
        [Request(BASE, messages, None, 12), Request(BASE, messages, None, 12, favour, 100.0)]
    )
    assert favoured.text.strip() and set(favoured.text) <= set(favour)
    assert not set(plain.text) <= set(favour)


def test_backend_dtype_is_what_the_base_scores_in(tiny_model: Path, tmp_path: Path) -> None:
    """``backend.dtype`` loads the base in that dtype for scoring only; unset, the model's own.
    A base in bf16 decodes other logits, so its greedy text may differ: that is the trade."""
    import torch

    from memops.operators.backends.factory import BackendConfig, open_backend

    model = tiny_config(tiny_model)
    for dtype, torch_dtype in (("", torch.float32), ("bfloat16", torch.bfloat16)):
        cfg = BackendConfig(kind="hf", dtype=dtype)
        with open_backend(cfg, model, tmp_path, [], tmp_path / "log", needs=()) as backend:
            assert backend.model.dtype == torch_dtype
            assert backend.complete([Request(BASE, [{"role": "user", "content": "hi"}], None, 4)])[0].text
