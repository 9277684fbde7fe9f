"""QLoRA supervised fine-tuning of one operator adapter with TRL.

A straight sequence: seed, data, model, trainer, train (resuming if asked or requeued), save.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import re
import resource
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from memops.core.config import check_device
from memops.core.determinism import deterministic_cpu
from memops.core.layout import (
    ADAPTER_MANIFEST,
    adapter_finished,
    adapters_path,
    checkpoint_complete,
    dataset_dir,
    unready,
)
from memops.core.locks import beside, exclusive
from memops.core.models import LoraSpec, load_model
from memops.core.sessions import is_real
from memops.memory.claims import Claim
from memops.operators.adapters import collapse_warning
from memops.operators.examples import example_id
from memops.operators.registry import ADAPTERS, DECISIONS, OPERATORS, Operator
from memops.train.attention import SharedPrefix, attend_per_example
from memops.train.builds import ensure_model
from memops.train.card import write_card
from memops.train.config import TrainConfig
from memops.train.cpu import cpu_model, labelled_positions_only, matmul_flags, native_bf16
from memops.train.tracking import check_tracker
from memops.train.validation import check_decisions, read_sets


class AdapterExists(RuntimeError):
    pass


def adapter_dir(cfg: TrainConfig) -> Path:
    return adapters_path(cfg.adapters_dir, cfg.model.name, cfg.fold, cfg.op.name)


def last_checkpoint(checkpoints: Path) -> str | None:
    """The newest complete checkpoint. A torn one (the run was killed while saving it) would fail
    every resume, and every Slurm requeue, so it is moved aside to ``incomplete-checkpoints/``."""
    found = [p for p in checkpoints.glob("checkpoint-*") if p.is_dir() and p.name.split("-", 1)[1].isdigit()]
    for checkpoint in sorted(found, key=lambda p: int(p.name.split("-", 1)[1]), reverse=True):
        if checkpoint_complete(checkpoint):
            return str(checkpoint)
        aside = checkpoints.parent / "incomplete-checkpoints" / checkpoint.name
        n = 1
        while aside.exists():
            aside, n = aside.with_name(f"{checkpoint.name}.{n}"), n + 1
        aside.parent.mkdir(exist_ok=True)
        checkpoint.rename(aside)
        print(f"warning: {checkpoint} is incomplete (killed while saving); moved to {aside}", file=sys.stderr)
    return None


def requeued() -> bool:
    """Slurm sets SLURM_RESTART_COUNT on a requeued job; such a run always resumes."""
    return int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0) > 0


def prepare(cfg: TrainConfig) -> None:
    """Build what a fresh checkout lacks, through the same code the dedicated scripts run."""
    if unready(cfg.datasets_dir, [cfg.fold], (cfg.op.name,)):
        from memops.data.config import data_config
        from memops.data.pipeline import build as build_data

        print(f"building datasets into {cfg.datasets_dir} (memops build-data)", flush=True)
        build_data(data_config(cfg, extract_stages=ADAPTERS[cfg.op.name].staged))
    ensure_model(cfg.model)


def standing(op: Operator, inputs: str) -> bool | None:
    """Whether a decision's two claims (compare's pair; update's incoming claim and its entry's
    current value as one claim) carry one evidence score; None at a new key."""
    first, second = op.arguments(json.loads(inputs))
    if not isinstance(first, Claim):  # update: its entry, None at a new key
        if first is None or first.current is None:
            return None
        first = first.current.as_claim()
    return first.score == second.score


def balanced(dataset, seed: int, op: Operator | None = None):  # datasets.Dataset -> datasets.Dataset
    """The same number of rows of every ``label``, in dataset order: the rarest label's count, or
    with ``op`` (``balance_standing``) split evenly between the ``standing`` cells each label
    has, as many as the rarest cell allows. A value twin (``twin_of`` in its inputs,
    ``operators.contract.value_twins``) is not drawn but follows its row: the pair stays with its
    twins, so one value and two keep the same standings and times whatever the draw."""
    cells: dict[str, dict[bool | None, list[int]]] = {}
    twins: dict[str, list[int]] = {}
    ids = dataset["id"]
    for i, (label, inputs, op_name, group) in enumerate(
        zip(dataset["label"], dataset["inputs"], dataset["op"], dataset["group"], strict=True)
    ):
        if (of := json.loads(inputs).get("twin_of")) is not None:
            twins.setdefault(example_id(op_name, group, of), []).append(i)
            continue
        cell = standing(op, inputs) if op is not None else None
        cells.setdefault(label, {}).setdefault(cell, []).append(i)
    # n per label, n // len(its cells) from each cell: the largest n every cell can give, and
    # that every label's cells divide.
    n = min(len(rows) * len(split) for split in cells.values() for rows in split.values())
    n -= n % max(map(len, cells.values()))
    rng = random.Random(seed)
    drawn = [
        i for split in cells.values() for rows in split.values() for i in rng.sample(rows, n // len(split))
    ]
    return dataset.select(sorted([*drawn, *(t for i in drawn for t in twins.get(ids[i], []))]))


TRAINED_COLUMNS = ("prompt", "completion")
"""What the trainer reads of a row: the chat and the answer it learns."""


def require_dataset(cfg: TrainConfig) -> Path:
    """The adapter's published dataset folder; a missing one is named with the command that builds it."""
    path = dataset_dir(cfg.datasets_dir, cfg.fold, cfg.op.name)
    if not (path / "dataset_dict.json").exists():
        raise FileNotFoundError(f"no dataset at {path}; build it with: memops build-data")
    return path


def load_splits(cfg: TrainConfig):  # -> (train, validation, fingerprint, real validation rows)
    """The train split, the validation split's scenarios (at most ``max_eval_samples`` of them:
    the evaluation loss) and its rows of real trajectories (``real_validation``), which a decision
    adapter's answers are read on whole."""
    from datasets import load_from_disk

    path = require_dataset(cfg)
    # In memory, so the trainer's shuffles, selections and tokenizing maps never write cache
    # files into the published folder (which may be shared or read-only); the sets are small.
    dd = load_from_disk(str(path), keep_in_memory=True)
    keep = list(TRAINED_COLUMNS)
    # A decision's validation answers are also read within the contract: its call's arguments.
    read = (
        [*keep, "inputs"] if cfg.op.name in DECISIONS and "inputs" in dd["validation"].column_names else keep
    )
    train = dd["train"]
    if cfg.balance_labels and cfg.op.name in DECISIONS:
        train = balanced(train, cfg.seed, OPERATORS[cfg.op.name] if cfg.balance_standing else None)
    validation, real = dd["validation"], []
    sources = validation["source"] if "source" in validation.column_names else []
    if rows := [i for i, source in enumerate(sources) if is_real(source)]:
        real = validation.select(rows).select_columns(read).to_list()
        validation = validation.select([i for i, source in enumerate(sources) if not is_real(source)])
    if cfg.max_eval_samples is not None and cfg.max_eval_samples < len(validation):
        validation = validation.shuffle(seed=cfg.seed).select(range(cfg.max_eval_samples))
    return (
        train.select_columns(keep),
        validation.select_columns(read),
        train._fingerprint + "/" + validation._fingerprint,
        real,
    )


def trained_trajectories(cfg: TrainConfig) -> list[str] | None:
    """The trajectories the fold's train and validation splits hold examples of (an example's
    ``group`` is its episode; checkpoints may be chosen on the validation split), for the
    manifest: what decides where scoring this adapter would be a leak. None for a dataset made
    elsewhere, without the column: its fold's name decides then."""
    from datasets import load_from_disk

    splits = load_from_disk(str(dataset_dir(cfg.datasets_dir, cfg.fold, cfg.op.name)))
    if any("group" not in splits[name].column_names for name in ("train", "validation")):
        return None
    groups = set(splits["train"]["group"]) | set(splits["validation"]["group"])
    return [name for name in cfg.sources().names() if name in groups]


def conversation_tokens(row: dict[str, Any], tokenizer: Any) -> int:
    """The tokens SFT gives an example: its prompt and completion through the chat template."""
    messages = row["prompt"] + row["completion"]
    return len(tokenizer.apply_chat_template(messages, return_dict=True)["input_ids"])


def within_length(dataset, tokenizer: Any, max_length: int | None):  # -> (datasets.Dataset, int)
    """The rows that fit ``max_length``, and how many did not. TRL truncates a longer row, which
    would teach the adapter a completion cut mid-JSON (a few long trajectory notes exceed 1,024
    SmolLM2 tokens), so such rows are left out and counted in the manifest instead."""
    if max_length is None:
        return dataset, 0
    fits = [conversation_tokens(row, tokenizer) <= max_length for row in dataset]
    return dataset.select([i for i, ok in enumerate(fits) if ok]), fits.count(False)


def precision(cfg: TrainConfig) -> str:
    """What the matmuls run in: ``bf16`` (autocast) or the model's own dtype."""
    import torch

    if torch.cuda.is_available():
        return "bf16" if cfg.model.compute_dtype == "bfloat16" else cfg.model.compute_dtype
    return "bf16" if cfg.cpu_bf16 and native_bf16() else cfg.model.compute_dtype


def packed_attention(cfg: TrainConfig) -> str:
    """How a packed row attends here: the config's choice, except that ``varlen`` needs CUDA and
    runs as ``segments`` without it (the same attention, example by example, on sdpa)."""
    import torch

    if cfg.packed_attention == "varlen" and not torch.cuda.is_available():
        return "segments"
    return cfg.packed_attention


def autocast(precision: str) -> contextlib.AbstractContextManager[object]:
    """The matmuls in bf16 where the recipe trains in bf16 (``precision``), as the Trainer's
    autocast runs them; nothing otherwise."""
    if precision != "bf16":
        return contextlib.nullcontext()
    import torch

    return torch.autocast(device_type="cuda" if torch.cuda.is_available() else "cpu", dtype=torch.bfloat16)


def selects_by_answers(cfg: TrainConfig) -> bool:
    """Whether this adapter keeps the checkpoint its validation answers rank best (``select``):
    a decision adapter's choice; extraction adapters keep their last step."""
    return cfg.select == "decisions" and cfg.op.name in DECISIONS


def sft_config(cfg: TrainConfig, checkpoints: Path):  # -> trl.SFTConfig
    """The fields this config names, then ``cfg.sft`` as it is (``RECIPE_SFT`` by default)."""
    import dataclasses

    import torch
    import trl

    on_gpu = torch.cuda.is_available()
    named = dict(
        output_dir=str(checkpoints),
        seed=cfg.seed,
        max_length=cfg.op.max_length,
        num_train_epochs=cfg.op.epochs,
        max_steps=cfg.max_steps,
        learning_rate=cfg.op.learning_rate,
        per_device_train_batch_size=cfg.op.per_device_batch,
        per_device_eval_batch_size=cfg.op.per_device_batch,
        gradient_accumulation_steps=cfg.op.grad_accum,
        gradient_checkpointing=cfg.model.gradient_checkpointing,
        eval_strategy="steps",
        eval_steps=cfg.eval_steps,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        logging_steps=cfg.logging_steps,
        report_to=[] if cfg.report_to == "none" else [cfg.report_to],
        bf16=precision(cfg) == "bf16",
        use_cpu=not on_gpu,
        # The tokens trained on: a padded batch's padding is not (its attention mask counts them);
        # a padding-free row has none and no mask, and is counted whole.
        include_num_input_tokens_seen="non_padding" if not cfg.sft.get("padding_free") else "all",
        dataset_num_proc=None,
    )
    if selects_by_answers(cfg):
        named.update(
            load_best_model_at_end=True, metric_for_best_model="decisions_rank", greater_is_better=True
        )
    if twice := sorted(set(cfg.sft) & set(named)):
        raise ValueError(f"sft: {twice} are set from this config's own fields; override those instead")
    known = {f.name for f in dataclasses.fields(trl.SFTConfig)}
    if unknown := sorted(set(cfg.sft) - known):
        raise ValueError(f"sft: {unknown} are not fields of trl.SFTConfig (trl {trl.__version__})")
    return trl.SFTConfig(**named, **cfg.sft)


def lora_config(lora: LoraSpec):  # -> peft.LoraConfig
    from peft import LoraConfig

    return LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules),
        layers_to_transform=None if lora.layers_to_transform is None else list(lora.layers_to_transform),
        task_type="CAUSAL_LM",
    )


def device_record(cfg: TrainConfig) -> dict[str, Any]:
    """What the run computed on and the recipe's choices for it, for the manifest."""
    import torch

    on_gpu = torch.cuda.is_available()
    return {
        "device": torch.cuda.get_device_name() if on_gpu else cpu_model(),
        "cpu_flags": [] if on_gpu else matmul_flags(),
        "precision": precision(cfg),
        "lm_head": cfg.lm_head,
        "packed_attention": packed_attention(cfg),
        "torch_compile": bool(cfg.sft.get("torch_compile", False)),
    }


class DiskFull(OSError):
    """Writing a checkpoint or the adapter failed for want of space."""


WRITE_FAILURES = ("No space left on device", "inline_container", "file write failed")
"""How a full disk shows through torch.save (its zip writer) and safetensors."""


@contextlib.contextmanager
def disk_errors(out: Path) -> Iterator[None]:
    """Turn a write that failed for want of space into one message naming the folder and the
    space left there; torch's own says ``[enforce fail at inline_container.cc:672]``."""
    try:
        yield
    except (OSError, RuntimeError) as exc:
        text = str(exc)
        if getattr(exc, "errno", None) != errno.ENOSPC and not any(w in text for w in WRITE_FAILURES):
            raise
        where = next(p for p in (out, *out.parents) if p.exists())
        free = shutil.disk_usage(where).free
        raise DiskFull(
            f"writing under {out} failed, most likely a full disk: {free / 2**30:.2f} GiB free at {where} "
            f"now (free space, or move adapters_dir; resume=true continues from the last checkpoint). "
            f"The error was: {text.splitlines()[0] if text else type(exc).__name__}"
        ) from exc


def peak_memory_bytes() -> int:
    import torch

    if torch.cuda.is_available():
        return int(torch.cuda.max_memory_allocated())
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def train_adapter(cfg: TrainConfig, overrides: list[str] | None = None) -> dict[str, Any] | None:
    """Train and save one adapter; returns its manifest (None on the other ranks of a multi-GPU run).
    One training per adapter folder at a time: the first rank holds the folder's lock."""
    check_tracker(cfg.report_to)
    check_device(cfg)
    out = adapter_dir(cfg)
    first_rank = int(os.environ.get("RANK", "0")) == 0
    lock = exclusive(beside(out), "training of this adapter")
    with lock if first_rank else contextlib.nullcontext():
        return _train(cfg, out, overrides)


class TrainingFailed(RuntimeError):
    pass


def train_in_child(cfg: TrainConfig) -> dict[str, Any]:
    """Train one adapter in a child process (``python -m memops.train`` on ``cfg`` written as a
    config file) and return its manifest. A process that goes on to start a vLLM server on the
    same GPU trains this way: the child's CUDA memory is the driver's again when it exits, where
    the caching allocator of an in-process training would keep it from the server."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="memops-train-") as configs:
        code = subprocess.run(child_argv(cfg, Path(configs)), check=False).returncode
    if code != 0:
        raise TrainingFailed(f"training the {cfg.op.name} adapter of fold {cfg.fold} exited with code {code}")
    return finished_manifest(cfg)


def train_in_lanes(cfgs: list[TrainConfig], lanes: list[set[int]], logs: Path) -> list[dict[str, Any]]:
    """Train adapters in child processes on lanes of cores (``core.lanes``), each writing to
    ``logs/train-<fold>-<op>.log``, with one progress bar over their steps; their manifests in
    order. Two small trainings side by side, one core each, take about half the time of one
    after the other on both (docs/log/speed.md)."""
    import tempfile

    from tqdm import tqdm

    from memops.core.lanes import LaneFailed, in_lanes

    with tempfile.TemporaryDirectory(prefix="memops-train-") as configs:
        jobs = {
            f"{cfg.fold} {cfg.op.name}": (
                child_argv(cfg, Path(configs)),
                logs / f"train-{cfg.fold}-{cfg.op.name}.log",
            )
            for cfg in cfgs
        }
        with tqdm(
            total=sum(max(c.max_steps or 0, 0) for c in cfgs) or None, desc="training", unit="step"
        ) as bar:

            def watch() -> None:
                done = sum(
                    steps_logged(log, c.max_steps) for c, (_, log) in zip(cfgs, jobs.values(), strict=True)
                )
                bar.update(done - bar.n)

            try:
                in_lanes(jobs, lanes, time.perf_counter(), watch=watch, say=bar.write)
            except LaneFailed as failed:
                raise TrainingFailed(str(failed)) from None
    return [finished_manifest(cfg) for cfg in cfgs]


TRAINER_BAR = re.compile(rb"[\r\n] *\d+%\|[^|\r\n]*\| *(\d+)/(\d+) \[")
"""The trainer's progress bar in a child's log: no description before its percentage, which
every other bar there (tokenizing, packing, loading weights) has."""


def steps_logged(log: Path, steps: int | None) -> int:
    """The last step the trainer's bar wrote to ``log`` out of ``steps`` (0 before the first)."""
    try:
        with log.open("rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            counts = [int(done) for done, total in TRAINER_BAR.findall(f.read()) if int(total) == steps]
    except FileNotFoundError:
        return 0
    return counts[-1] if counts else 0


def child_argv(cfg: TrainConfig, configs: Path) -> list[str]:
    """``python -m memops.train`` on ``cfg``, written into ``configs``."""
    from memops.core.config import write_config

    name = f"{cfg.fold}-{cfg.op.name}"
    write_config(configs / f"{name}.yaml", "train", cfg, by="memops loo")
    return [sys.executable, "-m", "memops.train", "--config-dir", str(configs), "--config-name", name]


def finished_manifest(cfg: TrainConfig) -> dict[str, Any]:
    out = adapter_dir(cfg)
    if not adapter_finished(out):
        raise TrainingFailed(
            f"training the {cfg.op.name} adapter of fold {cfg.fold} left no finished adapter"
        )
    return json.loads((out / ADAPTER_MANIFEST).read_text())


def validation_answers(
    cfg: TrainConfig,
    trainer: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    real: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A decision adapter's own answers on validation data (``real``: the real trajectories' rows),
    read in the precision it trained in, logged with the trainer's metrics, and a one-line warning
    where it collapsed or dropped a label."""
    with autocast(precision(cfg)):
        decisions = check_decisions(
            trainer.model, tokenizer, cfg.op.name, rows, real or [], cfg.contract_per_region
        )
    trainer.log({f"validation_{name}_accuracy": decisions[name]["accuracy"] for name in read_sets(decisions)})
    if not trainer.is_world_process_zero():  # every rank reads (a sharded model runs in step); one says
        return decisions
    print(f"{cfg.op.name} validation answers: {json.dumps(decisions)}", flush=True)
    if warning := collapse_warning(cfg.op.name, {"validation_decisions": decisions}):
        print(warning, file=sys.stderr, flush=True)
    return decisions


def save_adapter(trainer: Any, tokenizer: Any, out: Path) -> bool:
    """The adapter (safetensors), and on rank 0 its tokenizer and a generation config that stops at
    ``<|im_end|>``; whether this process is the one that writes the rest."""
    from transformers import GenerationConfig

    if trainer.is_fsdp_enabled:  # gather the sharded LoRA weights into one adapter file
        trainer.accelerator.state.fsdp_plugin.set_state_dict_type("FULL_STATE_DICT")
    with disk_errors(out):
        trainer.save_model(str(out))
    if not trainer.is_world_process_zero():
        return False
    (out / "training_args.bin").unlink(missing_ok=True)  # a pickle; the manifest records the same
    tokenizer.save_pretrained(str(out))
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    GenerationConfig(
        eos_token_id=im_end, pad_token_id=tokenizer.pad_token_id, do_sample=False
    ).save_pretrained(str(out))
    return True


def _train(cfg: TrainConfig, out: Path, overrides: list[str] | None) -> dict[str, Any] | None:
    if adapter_finished(out) and not cfg.overwrite:
        if requeued():  # the job was requeued after the adapter was saved: nothing is left to do
            print(f"{out} was finished before this requeue; leaving it as it is", flush=True)
            return json.loads((out / ADAPTER_MANIFEST).read_text())
        raise AdapterExists(f"{out} holds a finished adapter; pass overwrite=true to train it again")
    checkpoints = out / "checkpoints"
    resume_from = last_checkpoint(checkpoints) if (cfg.resume or requeued()) else None

    if cfg.prepare:
        prepare(cfg)
    require_dataset(cfg)
    # The training stack loads only now (about 12 s of imports on 2 cores): a finished adapter,
    # a missing dataset or export is said before it.
    from transformers import set_seed
    from trl import SFTTrainer

    from memops.data.manifest import write_manifest

    threads = deterministic_cpu()
    set_seed(cfg.seed)
    train_ds, eval_ds, data_fingerprint, real = load_splits(cfg)
    model, tokenizer = load_model(cfg.model)
    if (attention := packed_attention(cfg)) != "mask":
        attend_per_example(model, attention)
    train_ds, long_train = within_length(train_ds, tokenizer, cfg.op.max_length)
    eval_ds, long_eval = within_length(eval_ds, tokenizer, cfg.op.max_length)
    if long_train or long_eval:
        print(
            f"warning: left out {long_train} train and {long_eval} validation examples longer than "
            f"max_length={cfg.op.max_length} tokens (truncating them would cut their completions)",
            file=sys.stderr,
        )
    trainer = SFTTrainer(
        model=model,
        args=sft_config(cfg, checkpoints),
        train_dataset=train_ds,
        eval_dataset=eval_ds.select_columns(list(TRAINED_COLUMNS)),
        processing_class=tokenizer,
        peft_config=lora_config(cfg.model.lora),
    )
    if cfg.packed_attention == "shared_prefix":  # around the collator TRL built (and set pad tokens for)
        trainer.data_collator = SharedPrefix(trainer.data_collator)
    reader = None
    if selects_by_answers(cfg):
        from memops.train.selection import ReadAnswers, answers_curve

        reader = ReadAnswers(cfg, trainer, tokenizer, list(eval_ds), real)
        trainer.add_callback(reader)
    started = time.perf_counter()
    with (
        disk_errors(out),
        labelled_positions_only() if cfg.lm_head == "labelled" else contextlib.nullcontext(),
    ):
        result = trainer.train(resume_from_checkpoint=resume_from)
        if reader:  # the checkpoint is chosen; a closing evaluation below reads the loss only
            trainer.remove_callback(reader)
        evals = [e for e in trainer.state.log_history if "eval_loss" in e]
        if not evals or evals[-1]["step"] != trainer.state.global_step:
            evals.append(trainer.evaluate())
    seconds = time.perf_counter() - started
    state = trainer.state
    selected = state.best_global_step if reader else None
    if selected:  # the Trainer loaded that checkpoint's adapter back; report its loss and answers
        evals = [e for e in evals if e["step"] == selected][-1:] or evals
    decisions = None
    if cfg.op.name in DECISIONS and trainer.is_world_process_zero():
        decisions = (reader.reads.get(selected) if reader else None) or validation_answers(
            cfg, trainer, tokenizer, list(eval_ds), real
        )

    if not save_adapter(trainer, tokenizer, out):  # multi-GPU: rank 0 writes the rest
        return None
    manifest = write_manifest(
        out,
        config=asdict(cfg),
        overrides=overrides or [],
        seed=cfg.seed,
        dataset_fingerprint=data_fingerprint,
        trajectories=trained_trajectories(cfg),
        over_length={"train": long_train, "validation": long_eval, "max_length": cfg.op.max_length},
        resumed_from=resume_from,
        global_step=state.global_step,
        train_loss=result.training_loss,
        eval_loss=evals[-1]["eval_loss"],
        validation_decisions=decisions,
        selected_step=selected,
        checkpoint_answers=answers_curve(state.log_history) if reader else None,
        tokens_seen=int(state.num_input_tokens_seen),
        wall_seconds=round(seconds, 2),
        threads=threads,
        device=device_record(cfg),
        peak_memory_bytes=peak_memory_bytes(),
        log_history=state.log_history,
    )
    (out / "resolved_config.json").write_text(json.dumps(asdict(cfg), indent=2) + "\n")
    write_card(out)  # replaces the template card peft's save_pretrained leaves
    return manifest
