"""Reading a model's log-probability of given continuations, and the key/value caches of shared
prompt starts that make it cheap.

A probe weighs a few answers after one prompt, and the probes of one note share their prompt up
to the task: ``read_continuations`` runs each shared prefix once and every remainder beside it,
teacher-forced, and ``StemCache`` keeps the caches of prompt stems (the catalog and the note) for
the later calls about the same note. The ``hf`` backend and the validation reads after training
both read answers this way.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

IM_END = "<|im_end|>"


Layers = list[tuple[Any, Any]]
"""A prompt start's key/value cache: per decoder layer, its keys and values, [1, heads, tokens, dim]."""


def run_prefix(model: Any, tokens: Sequence[int], start: Layers | None = None) -> Layers:
    """The key/value cache of ``tokens``, continuing ``start``, the cache of their first tokens."""
    import torch
    from transformers import DynamicCache

    done = start[0][0].shape[2] if start else 0
    cache = DynamicCache(ddp_cache_data=start) if start else DynamicCache()
    with torch.inference_mode():
        model(
            input_ids=torch.tensor([tokens[done:]], device=model.device),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,  # the cache is what is wanted; the LM head over every position is not
        )
    return [(layer.keys, layer.values) for layer in cache.layers]


STEM_BYTES = 2 << 30
"""What ``StemCache`` keeps at most: about 60 stems of SmolLM2's extraction prompts (32 MB each)."""


class StemCache:
    """The key/value caches of prompt stems, by adapter and tokens; least recently used out first.

    The two-stage extractor asks about one note in separate calls (stage 1, each stage-2 fill,
    and again in every extraction variant), and their prompts are the same up to the task, the
    last paragraph (``operators.prompts.with_task``); a direct extraction prompt is stage 1's up
    to that paragraph too. Each stem, the catalog and the note, runs once per note and adapter
    instead of once per call.
    """

    def __init__(self, budget: int = STEM_BYTES) -> None:
        self.budget = budget
        self._kept: OrderedDict[tuple[str, tuple[int, ...]], tuple[Layers, int]] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        """Drop every stem once no later call asks about their notes (a fold's operators are
        scored), so the engine replays do not run beside up to 2 GiB of them (tested)."""
        self._kept.clear()
        self._bytes = 0

    def get(self, adapter: str, tokens: Sequence[int]) -> Layers | None:
        key = (adapter, tuple(tokens))
        if key not in self._kept:
            return None
        self._kept.move_to_end(key)
        return self._kept[key][0]

    def put(self, adapter: str, tokens: Sequence[int], layers: Layers) -> Layers:
        size = sum(t.numel() * t.element_size() for pair in layers for t in pair)
        self._kept[(adapter, tuple(tokens))] = (layers, size)
        self._bytes += size
        while self._bytes > self.budget and len(self._kept) > 1:
            self._bytes -= self._kept.popitem(last=False)[1][1]
        return layers

    def start(
        self,
        model: Any,
        adapter: str,
        row: list[int],
        ends: list[int],
        base: Callable[[], tuple[int, Layers | None]],
    ) -> tuple[int, Layers]:
        """The cache of ``row`` up to its longest stem (``ends``, shortest first), run on from the
        longest one kept, or else from ``base()`` (a shorter start of the row), keeping each."""
        kept = next(((n, layers) for n in reversed(ends) if (layers := self.get(adapter, row[:n]))), None)
        done, layers = kept or base()
        for n in ends:
            if n > done:
                layers = self.put(adapter, row[:n], run_prefix(model, row[:n], layers))
        return ends[-1], layers


def stem_ends(tokenizer: Any, text: str, row: Sequence[int]) -> list[int]:
    """Where the stems of a prompt ``text`` end, in tokens of ``row``, shortest first: before the
    last paragraph of its last message (the task of a two-stage step) and at that message's end
    (a direct extraction prompt's end, which is stage 1's stem). Each leaves a token to run."""
    end = text.rfind(IM_END)
    cuts = [c for c in (text.rfind("\n\n", 0, end), end) if c > 0]
    tokens = [tokenizer(text[:c], add_special_tokens=False)["input_ids"] for c in cuts]
    return sorted({min(common_prefix(row, t), len(row) - 1) for t in tokens} - {0})


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


TAIL = 64
"""The most tokens a row may keep of its own and still join a group (``shared_prefixes``)."""


def shared_prefixes(rows: list[list[int]], starts: list[int]) -> list[tuple[int, list[int]]]:
    """Rows grouped by a common token prefix: (prefix length, row indices) per group.

    The probes of one note differ only in their last paragraph and their options, so sorted by
    tokens they sit together. A row joins the group before it when all but its last ``TAIL``
    tokens are the group's; probes of two notes that share only the catalog start groups of
    their own. The prefix stops one token short of the earliest token a member scores
    (``starts``), so the logits that score it come from the member's own remainder.
    """
    order = sorted(range(len(rows)), key=lambda i: rows[i])
    groups: list[tuple[int, list[int]]] = []
    for i in order:
        if groups:
            shared, members = groups[-1]
            common = common_prefix(rows[members[0]][:shared], rows[i])
            if common >= len(rows[i]) - TAIL and (len(members) > 1 or common >= shared - TAIL):
                groups[-1] = (common, [*members, i])
                continue
        groups.append((len(rows[i]), [i]))
    return [(min(shared, *(starts[i] - 1 for i in members)), members) for shared, members in groups]


PROBE_TOKENS = 512
"""The most remainder tokens one forward pass of ``read_continuations`` packs side by side."""

PACK_TOKENS = 2048
"""The most tokens one forward pass of ``read_continuations`` runs whole groups in (prefix and
remainders, a batch row each): a decision prompt's group, about 300 tokens for SmolLM2, run
alone keeps the matmuls too small to use the CPU."""


def packs(lengths: Sequence[int], tokens: int) -> list[range]:
    """Consecutive runs of items whose lengths sum to at most ``tokens`` (a longer item alone)."""
    out: list[range] = []
    begin = total = 0
    for k, n in enumerate(lengths):
        if k > begin and total + n > tokens:
            out.append(range(begin, k))
            begin, total = k, 0
        total += n
    return [*out, range(begin, len(lengths))] if lengths else out


def read_continuations(
    model: Any,
    rows: list[list[int]],
    starts: list[int],
    tokens: int = PROBE_TOKENS,
    stems: Sequence[tuple[int, Layers] | None] | None = None,
    whole: int = PACK_TOKENS,
) -> list[float]:
    """Each row's log-probability of its tokens from ``starts`` on, teacher-forced.

    Rows that share a prefix (``shared_prefixes``) run it once. A group of at most ``whole``
    tokens in all runs whole, one batch row, beside other such groups up to ``whole`` tokens a
    pass: its prefix, then each remainder at the positions it has in its own row, attending to
    the prefix and its own earlier tokens only (a 4-D mask). A longer group, or one whose prefix
    runs on from a kept stem (``stems``, per row: ``StemCache``), runs its prefix into a cache,
    then its remainders packed into passes of at most ``tokens`` tokens, the cache cut back to
    the prefix after each. Only the positions that score a token reach the LM head.
    """
    import torch

    out = [0.0] * len(rows)
    packed: list[tuple[int, list[int]]] = []
    sizes: list[int] = []
    cached: list[tuple[int, list[int], Layers | None]] = []
    for shared, members in shared_prefixes(rows, starts):
        stem = stems[members[0]] if stems else None
        start = stem[1] if stem and stem[0] <= shared else None
        size = shared + sum(len(rows[i]) - shared for i in members)
        if start is None and size <= whole:
            packed.append((shared, members))
            sizes.append(size)
        else:
            cached.append((shared, members, start))
    order = sorted(range(len(packed)), key=sizes.__getitem__)  # rows of a pass alike in length
    with torch.inference_mode():
        for run in packs([sizes[k] for k in order], whole):
            width = max(sizes[order[k]] for k in run)
            _read_groups(model, rows, starts, [packed[order[k]] for k in run], width, out)
        for shared, members, start in cached:
            _read_from_cache(model, rows, starts, shared, members, start, tokens, out)
    return out


def _scored(row: list[int], start: int, at: int, shared: int) -> tuple[list[int], list[int]]:
    """The packed positions whose logits score a row's tokens from ``start`` on, and those
    tokens, for a row whose remainder (from ``shared``) sits at packed position ``at``: the
    position of the row's token t - 1 predicts its token t."""
    return [at + t - 1 - shared for t in range(start, len(row))], row[start:]


def _pick(model: Any, keep: list[int], tokens: list[int], **inputs: Any) -> Any:
    """The log-probabilities of ``tokens`` at the packed positions ``keep``."""
    import torch

    logits = model(**inputs, logits_to_keep=torch.tensor(keep, device=model.device)).logits[0]
    logprobs = logits.float().log_softmax(-1)
    return logprobs[torch.arange(len(keep)), torch.tensor(tokens, device=logprobs.device)]


def _read_groups(
    model: Any,
    rows: list[list[int]],
    starts: list[int],
    groups: list[tuple[int, list[int]]],
    width: int,
    out: list[float],
) -> None:
    """One forward pass over whole groups, one batch row each of ``width`` tokens (the longest
    group's), each row's sum into ``out``.

    A group's row is its prefix, then its members' remainders; a 4-D mask lets each remainder
    see the prefix and its own earlier tokens. Groups sit in rows of their own rather than one
    long sequence, whose attention over masked-out pairs took half the pass. Padding attends to
    itself only, so no position's softmax is empty."""
    import torch

    ids = torch.zeros(len(groups), width, dtype=torch.long)  # padding: any token
    positions = torch.zeros_like(ids)
    mask = torch.eye(width, dtype=torch.bool).repeat(len(groups), 1, 1)
    keep = torch.zeros_like(ids, dtype=torch.bool)
    picked: list[int] = []
    owners: list[tuple[int, int]] = []  # per row: its index and its number of scored tokens
    for g, (shared, members) in enumerate(groups):
        ids[g, :shared] = torch.tensor(rows[members[0]][:shared], dtype=torch.long)
        positions[g, :shared] = torch.arange(shared)
        mask[g, :shared, :shared] = torch.ones(shared, shared, dtype=torch.bool).tril()
        at = shared
        for i in members:
            tail = rows[i][shared:]
            end = at + len(tail)
            ids[g, at:end] = torch.tensor(tail, dtype=torch.long)
            positions[g, at:end] = torch.arange(shared, shared + len(tail))
            mask[g, at:end, :shared] = True
            mask[g, at:end, at:end] = torch.ones(len(tail), len(tail), dtype=torch.bool).tril()
            where, tokens = _scored(rows[i], starts[i], at, shared)
            keep[g, where] = True  # ascending within the row: the flattened order is rows' order
            picked += tokens
            owners.append((i, len(tokens)))
            at = end
    device = model.device
    logits = model(
        input_ids=ids.to(device),
        attention_mask=mask[:, None].to(device),
        position_ids=positions.to(device),
        logits_to_keep=keep.to(device),
    ).logits
    logprobs = logits.float().log_softmax(-1)[torch.arange(len(picked)), torch.tensor(picked)]
    at = 0
    for i, count in owners:
        out[i] = logprobs[at : at + count].sum().item()
        at += count


def _read_from_cache(
    model: Any,
    rows: list[list[int]],
    starts: list[int],
    shared: int,
    members: list[int],
    start: Layers | None,
    tokens: int,
    out: list[float],
) -> None:
    """A group's prefix run once into a cache (on from ``start``), its remainders in passes of
    at most ``tokens`` tokens, each row's sum into ``out``."""
    import torch
    from transformers import DynamicCache

    device = model.device
    cache = DynamicCache(ddp_cache_data=run_prefix(model, rows[members[0]][:shared], start))
    for run in packs([len(rows[i]) - shared for i in members], tokens):
        chunk = [members[k] for k in run]
        tails = [rows[i][shared:] for i in chunk]
        n = sum(map(len, tails))
        own = torch.block_diag(*(torch.ones(len(t), len(t), dtype=torch.bool).tril() for t in tails))
        mask = torch.cat([torch.ones(n, shared, dtype=torch.bool), own], dim=1)
        positions = torch.cat([torch.arange(shared, shared + len(t)) for t in tails])
        keep: list[int] = []
        picked: list[int] = []
        at = 0
        for i, tail in zip(chunk, tails, strict=True):
            where, scored = _scored(rows[i], starts[i], at, shared)
            keep += where
            picked += scored
            at += len(tail)
        logprobs = _pick(
            model,
            keep,
            picked,
            input_ids=torch.tensor([[t for tail in tails for t in tail]], device=device),
            attention_mask=mask[None, None].to(device),
            position_ids=positions[None].to(device),
            past_key_values=cache,
            use_cache=True,
        )
        cache.crop(-n)
        at = 0
        for i in chunk:
            count = len(rows[i]) - starts[i]
            out[i] = logprobs[at : at + count].sum().item()
            at += count
