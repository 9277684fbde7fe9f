"""What the trainer sees: completion-only labels, and the prompt inference will send, for
operator examples and for the two-stage extractor's stage examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memops.core.models import load_model, model_config
from memops.operators.registry import STAGES_ADAPTER
from memops.train.config import OpConfig, TrainConfig
from memops.train.recipe import conversation_tokens, lora_config, sft_config, within_length

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["tiny", "smollm2-135m-instruct"])
def trainer(request: pytest.FixtureRequest, small_datasets: Path, tmp_path_factory: pytest.TempPathFactory):
    """Both models the project builds: the tiny one's own tokenizer and SmolLM2's, whose pad
    token is its end-of-turn token (a collator that masked padding by id would drop the stop)."""
    from datasets import concatenate_datasets, load_from_disk
    from trl import SFTTrainer

    path = request.getfixturevalue("tiny_model" if request.param == "tiny" else "smollm2_model")
    model = model_config(request.param)
    model.path = str(path)
    cfg = TrainConfig(op=OpConfig(name="update", max_length=1024), model=model)
    update = load_from_disk(str(small_datasets / "all" / "update"))["train"].select(range(4))
    staged = load_from_disk(str(small_datasets / "all" / STAGES_ADAPTER))["train"]
    model, tokenizer = load_model(cfg.model)
    staged, _ = within_length(staged, tokenizer, cfg.op.max_length)  # as the recipe does
    stage = [json.loads(i).get("stage") for i in staged["inputs"]]
    picks = [stage.index("select"), *[i for i, s in enumerate(stage) if s == "fill"][:2]]
    train = concatenate_datasets([update, staged.select(picks)])
    args = sft_config(cfg, tmp_path_factory.mktemp("ckpt"))
    args.packing = False  # one example per row, so each row can be checked on its own
    args.padding_free = False
    args.eval_strategy = "no"
    t = SFTTrainer(
        model=model,
        args=args,
        train_dataset=train.select_columns(["prompt", "completion"]),
        processing_class=tokenizer,
        peft_config=lora_config(cfg.model.lora),
    )
    return t, train, tokenizer


def test_labels_cover_exactly_the_completion(trainer) -> None:
    t, raw, tokenizer = trainer
    rows = [t.train_dataset[i] for i in range(len(raw))]
    batch = t.data_collator(rows)
    for i, row in enumerate(rows):
        ids, labels = row["input_ids"], row["labels"]
        prompt = tokenizer.apply_chat_template(
            raw[i]["prompt"], tokenize=True, add_generation_prompt=True, return_dict=False
        )
        n = len(prompt)
        assert ids[:n] == prompt
        assert all(label == -100 for label in labels[:n])  # every prompt token is masked
        assert labels[n:] == ids[n:] and -100 not in labels[n:]  # no completion token is
        completion = tokenizer.decode(ids[n:])
        assert completion == raw[i]["completion"][0]["content"] + "<|im_end|>\n"
        assert batch["labels"][i][: len(ids)].tolist() == labels


def test_rows_longer_than_max_length_are_left_out_not_cut(trainer) -> None:
    """TRL would truncate them, and the adapter would learn a completion cut mid-JSON."""
    _, raw, tokenizer = trainer
    rows = raw.select_columns(["prompt", "completion"])
    n = conversation_tokens(rows[0], tokenizer)
    kept, dropped = within_length(rows.select([0]), tokenizer, n)
    assert (len(kept), dropped) == (1, 0)
    kept, dropped = within_length(rows.select([0]), tokenizer, n - 1)
    assert (len(kept), dropped) == (0, 1)


def test_hf_backend_feeds_the_model_what_training_used(trainer) -> None:
    """Chat-template parity: the string and the token ids the hf backend conditions on."""
    from memops.operators.backends.hf import prompt_text

    t, raw, tokenizer = trainer
    for i in range(len(raw)):
        row = t.train_dataset[i]
        prompt_ids = [
            tok for tok, label in zip(row["input_ids"], row["labels"], strict=True) if label == -100
        ]
        rendered = prompt_text(tokenizer, raw[i]["prompt"])
        assert tokenizer.decode(prompt_ids) == rendered
        assert tokenizer(rendered, add_special_tokens=False)["input_ids"] == prompt_ids
