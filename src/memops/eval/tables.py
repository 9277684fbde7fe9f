"""A summary as tables: the report's Markdown sections and the console table."""

from __future__ import annotations

from typing import Any

from memops.eval.contract import contract_markdown
from memops.eval.metrics import BOOTSTRAP_RESAMPLES, SEED
from memops.eval.summary import ENGINE_ONLY, LEARNED, PUBLISHED, VARIANTS
from memops.operators.learned import STAGED_MODES
from memops.operators.registry import DECISIONS, OPS


def cell(stat: dict[str, Any]) -> str:
    if stat["mean"] is None:
        return "–"
    lo, hi = stat["ci"]
    return f"{stat['mean']:.2f} [{lo:.2f}, {hi:.2f}]"


def markdown(summary: dict[str, Any], run: dict[str, Any]) -> str:
    """The report: one function per section, in reading order."""
    sections = (
        header(run),
        variant_tables(summary),
        parse_failure_table(summary),
        value_and_engine_table(summary),
        direct_vs_two_stage(summary),
        extraction_sections(summary),
        learned_vs_prompted(summary),
        misses_by_slot(summary),
        contract_markdown(summary.get("contract", {})),
        references(),
    )
    return "\n".join(line for section in sections for line in section)


def header(run: dict[str, Any]) -> list[str]:
    lines = [
        f"# Leave-one-out report: {run.get('name', '')}",
        "",
        f"Model `{run.get('model')}`, backend `{run.get('backend')}`. Means with bootstrap 95% CIs "
        f"({BOOTSTRAP_RESAMPLES:,} resamples, seed {SEED}); n is the number of held-out examples.",
        "",
        "`symbolic` is the reference ceiling: the engine's rules run on the same inputs, with gold "
        "extraction. Its compare and update labels come from those rules, so 1.00 there is by "
        "construction; its engine rows measure the engine and the reader themselves.",
        "",
    ]
    if run.get("model_note"):  # what the model's config says its rows can mean (configs/model/)
        lines += [run["model_note"], ""]
    return lines


def variant_tables(summary: dict[str, Any]) -> list[str]:
    lines = []
    for variant in (v for v in summary["variants"] if v not in ENGINE_ONLY):
        lines += [
            f"## {variant}",
            "",
            "| Fold | Overall | " + " | ".join(op.capitalize() for op in OPS) + " |",
            "| --- | --- |" + " --- |" * len(OPS),
        ]
        for fold, by_variant in summary["folds"].items():
            s = by_variant[variant]
            lines.append(f"| {fold} | " + " | ".join(cell(s[m]) for m in ("overall", *OPS)) + " |")
        s = summary["mean"][variant]
        lines.append("| **all folds** | " + " | ".join(cell(s[m]) for m in ("overall", *OPS)) + " |")
        lines.append("")
    return lines


def parse_failure_table(summary: dict[str, Any]) -> list[str]:
    shown = summary["variants"]
    lines = [
        "## Answers that failed to parse",
        "",
        "Share of answers that were not valid JSON for the operator's schema (scored 0).",
        "",
        "| Operator | " + " | ".join(shown) + " |",
        "| --- |" + " ---: |" * len(shown),
    ]
    for op, by_variant in summary["parse_failures"].items():
        cells = [
            f"{c['failed'] / c['n']:.0%} ({c['failed']}/{c['n']})" if (c := by_variant.get(v)) else "–"
            for v in shown
        ]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return lines


def value_and_engine_table(summary: dict[str, Any]) -> list[str]:
    lines = ["", "## Extraction by value, and the engine", ""]
    lines += [
        "| Variant | Extract (value) | Engine state | Engine state (value match) | Engine queries |",
        "| --- | --- | --- | --- | --- |",
    ]
    metrics = ("extract_value", "engine_state", "engine_state_value", "engine_queries")
    for variant in summary["variants"]:
        s = summary["mean"][variant]
        if all(s[m]["mean"] is None for m in metrics):  # decisions only: no extraction of its own
            continue
        cells = " | ".join(cell(s[m]) for m in metrics)
        lines.append(f"| {variant} | {cells} |")
    return lines


def direct_vs_two_stage(summary: dict[str, Any]) -> list[str]:
    t = summary["tests"]["extract_direct_vs_two_stage"]
    m, b = t["mcnemar_exact_match"], t["paired_bootstrap"]
    if not m["n"]:  # a run that scored neither (an opt-in mode alone)
        return []
    lines = [
        "",
        "## Direct vs two-stage extraction (paired, all folds)",
        "",
        f"- Exact McNemar on per-example exact match: {m['only_first']} right only direct, "
        f"{m['only_second']} right only two-stage, p = {m['p']:.3g} (n = {m['n']}).",
    ]
    if b["mean_diff"] is not None:
        lines.append(
            f"- Paired bootstrap on schema F1 (two-stage − direct): {b['mean_diff']:+.3f} "
            f"[{b['ci'][0]:+.3f}, {b['ci'][1]:+.3f}], p = {b['p']:.3g}."
        )
    return lines


def learned_vs_prompted(summary: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Learned (two-stage) vs prompted (paired, all folds)",
        "",
        "`prompted` is the base model without adapters, with the same prompts and grammar and "
        "two-stage extraction: an instruct model used as a judge, as memory systems such as Mem0, "
        "Graphiti and Zep run these operators.",
        "",
        "| Metric | right only prompted | right only learned | McNemar p | learned − prompted [95% CI] |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for metric, t in summary["tests"]["learned_vs_prompted"].items():
        m, b = t["mcnemar_exact_match"], t["paired_bootstrap"]
        diff = (
            "–" if b["mean_diff"] is None else f"{b['mean_diff']:+.3f} [{b['ci'][0]:+.3f}, {b['ci'][1]:+.3f}]"
        )
        lines.append(f"| {metric} | {m['only_first']} | {m['only_second']} | {m['p']:.3g} | {diff} |")
    return lines


MISSED_SLOTS = 6
"""Slots listed per decision in the report's misses section."""


def misses_by_slot(summary: dict[str, Any]) -> list[str]:
    """Where the learned decisions went wrong, by the slot each was about, the most missed first."""
    missed = {op: v["learned"] for op, v in summary.get("decision_misses", {}).items() if v.get("learned")}
    if not missed:
        return []
    lines = [
        "",
        "## Learned decisions missed, by slot",
        "",
        "| Operator | slot | wrong / asked |",
        "| --- | --- | ---: |",
    ]
    for op, slots in missed.items():
        for slot, c in list(slots.items())[:MISSED_SLOTS]:
            lines.append(f"| {op} | `{slot}` | {c['wrong']} / {c['n']} |")
        if len(slots) > MISSED_SLOTS:
            rest = list(slots.values())[MISSED_SLOTS:]
            wrong, asked = sum(c["wrong"] for c in rest), sum(c["n"] for c in rest)
            lines.append(f"| {op} | {len(rest)} more slots with misses | {wrong} / {asked} |")
    return lines


def references() -> list[str]:
    ref = ", ".join(f"{k} {d:.2f} / {s:.2f}" for k, (d, s) in PUBLISHED.items())
    confusions = ", ".join(f"`figures/confusion_{op}.png`" for op in DECISIONS)
    return [
        "",
        f"Published reference for Qwen2.5-14B-Instruct adapters (direct / two-stage): {ref}.",
        "",
        f"Figures: `figures/folds.png`, {confusions}.",
        "",
    ]


ERROR_HEADERS = {
    "correct": "correct",
    "missing_pair": "missing pair",
    "wrong_pair": "wrong pair",
    "wrong_scope": "wrong branch/env/evidence",
    "wrong_value": "wrong value",
    "extra": "extra claim",
    "spurious": "spurious (empty gold)",
}


def _claim(c: dict[str, Any]) -> str:
    value = str(c.get("value", "")).replace("|", "\\|")
    scope = f"{c.get('branch')}/{c.get('env')}, {c.get('evidence_type')}"
    return f"`{c.get('entity')}.{c.get('slot')}` [{scope}] = {value}"


def _test_row(name: str, t: dict[str, Any]) -> str:
    m, b = t["mcnemar_exact_match"], t["paired_bootstrap"]
    diff = "–" if b["mean_diff"] is None else f"{b['mean_diff']:+.3f} [{b['ci'][0]:+.3f}, {b['ci'][1]:+.3f}]"
    p = "–" if b["p"] is None else f"{b['p']:.3g}" if b["p"] else f"< {1 / BOOTSTRAP_RESAMPLES:g}"
    return f"| {name} | {m['only_first']} | {m['only_second']} | {m['p']:.3g} | {diff} | {p} |"


def selection_lines(summary: dict[str, Any]) -> list[str]:
    """Stage 1 per fold and selection method, and value F1 by how the gold value is worded."""
    lines = []
    if summary.get("selection"):
        lines += [
            "",
            "## Selection (stage 1)",
            "",
            "The `entity.slot` pairs each variant selected, against the pairs the gold names, pooled "
            "over the fold's notes (direct: the pairs its claims name). Pair AUC, for a scoring "
            "selection: how often a stated pair scores above an unstated one of the same note.",
            "",
            "| Fold | Variant | precision | recall | selected | gold | pair AUC |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for fold, by in summary["selection"].items():
            for v, c in by.items():
                name = f"**{fold}**" if fold == "all folds" else fold
                shares = f"{c['precision']:.2f} | {c['recall']:.2f}"
                auc = "–" if c["pair_auc"] is None else f"{c['pair_auc']:.2f}"
                lines.append(f"| {name} | {v} | {shares} | {c['selected']} | {c['gold']} | {auc} |")
    if summary.get("value_by_wording"):
        lines += [
            "",
            "Value F1 apart for gold values written verbatim in their note and for paraphrased ones "
            "(each side's gold claims against the predictions of their scope; notes with such gold):",
            "",
            "| Variant | verbatim | paraphrased |",
            "| --- | --- | --- |",
        ]
        for v, sides in summary["value_by_wording"].items():
            cells = [f"{cell(sides[k])} (n = {sides[k]['n']})" for k in ("verbatim", "paraphrased")]
            lines.append(f"| {v} | {' | '.join(cells)} |")
    return lines


def extraction_sections(summary: dict[str, Any]) -> list[str]:
    """The three extraction variants side by side, their paired tests, where extraction fails
    per fold, and a few notes with gold and predictions."""
    shown = [v for v in summary["variants"] if v != "symbolic"]
    lines = ["", "## Extraction variants (all folds)", ""]
    lines += [
        "`direct` asks for every claim at once; `two-stage` selects the pairs, then fills each, under "
        "grammars, on the extract adapter trained on direct prompts only (the paper's decoder); "
        "`two-stage-trained` makes the same calls on an adapter trained with the stage examples too; "
        "`two-stage-scored` reads that adapter's stage-1 answer instead of decoding it: each answer of "
        "one catalog pair, and the empty answer, is weighed by how much likelier the note makes it "
        "than a blank note does (to a power placed on validation notes), and the likeliest is kept; "
        "`two-stage-overlap` selects with no model, the "
        "one catalog pair whose words (names and description) the note uses most, and fills it on the "
        "same adapter. The opt-in studies: `two-stage-mixed` mixes `two-stage-scored`'s pair scores "
        "with the overlap rule's, each standardised over the catalog, by a weight placed on "
        "validation notes; `direct-trained` is `direct`'s call on that adapter; "
        "`two-stage-read` reads each typed value again among those the note states; "
        "`two-stage-proposed` takes a commit's note's pairs and values from the lines it added "
        "(`EXTRACT_MODES` in operators/learned.py says each in full).",
        "",
        "",
        "Engine keys: the share of final-state keys right when this variant's extraction feeds the "
        "engine with the learned decisions (the prompted base: its own extraction and decisions): "
        "the final value equal to the gold one, and within value F1's match (token F1 ≥ 0.5).",
        "",
        "| Variant | Schema F1 | Value F1 | Engine keys | Engine keys (value match) | n |",
        "| --- | --- | --- | --- | --- | ---: |",
    ]
    for v in (v for v in shown if summary["mean"][v]["extract"]["n"]):
        s = summary["mean"][v]
        metrics = ("extract", "extract_value", "engine_state", "engine_state_value")
        cells = " | ".join(cell(s[m]) for m in metrics)
        lines.append(f"| {v} | {cells} | {s['extract']['n']} |")
    for mode in STAGED_MODES:
        if not (tests := summary["tests"].get(mode.replace("-", "_"))):
            continue
        lines += [
            "",
            f"Paired tests of {mode} against the variants before it (exact McNemar on per-note exact "
            f"match; paired bootstrap on F1, {mode} − other):",
            "",
            f"| Comparison | right only other | right only {mode} | McNemar p | {mode} − other [95% CI] "
            "| bootstrap p |",
            "| --- | ---: | ---: | ---: | --- | ---: |",
        ]
        for vs, by_metric in tests.items():
            for metric, t in by_metric.items():
                level = "schema" if metric == "extract" else "value"
                lines.append(_test_row(f"{vs}, {level}", t))
    lines += selection_lines(summary)
    lines += ["", "## Where extraction fails", ""]
    lines += [
        "Claims per class, per fold (`extraction_errors` in eval/metrics.py): gold claims are "
        "correct, missing pair, wrong branch/env/evidence or wrong value (token-F1 < 0.5); "
        "predictions left over are a wrong pair, an extra claim for a gold pair, or spurious on a "
        "note whose gold is empty. Missing and wrong pairs are selection errors.",
        "",
        "| Fold | Variant | notes (empty gold) | " + " | ".join(ERROR_HEADERS.values()) + " |",
        "| --- | --- | ---: |" + " ---: |" * len(ERROR_HEADERS),
    ]
    totals: dict[str, dict[str, int]] = {}
    for fold, by_variant in summary["extraction_errors"].items():
        for v, c in by_variant.items():
            cells = " | ".join(str(c[k]) for k in ERROR_HEADERS)
            lines.append(f"| {fold} | {v} | {c['notes']} ({c['empty_gold_notes']}) | {cells} |")
            total = totals.setdefault(v, dict.fromkeys(c, 0))
            for k, n in c.items():
                total[k] += n
    for v, c in sorted(totals.items(), key=lambda kv: VARIANTS.index(kv[0])):
        cells = " | ".join(f"**{c[k]}**" for k in ERROR_HEADERS)
        lines.append(f"| **all folds** | {v} | {c['notes']} ({c['empty_gold_notes']}) | {cells} |")
    if summary["extraction_examples"]:
        lines += ["", "### Notes side by side", ""]
    for ex in summary["extraction_examples"]:
        lines += [f"`{ex['id']}` ({ex['fold']})", "", "| | Claims | Schema F1 |", "| --- | --- | ---: |"]
        lines.append(f"| gold | {'<br>'.join(map(_claim, ex['gold'])) or '(none)'} | |")
        for v, p in ex["predictions"].items():
            lines.append(f"| {v} | {'<br>'.join(map(_claim, p['claims'])) or '(none)'} | {p['score']:.2f} |")
        lines.append("")
    return lines


def table(summary: dict[str, Any]) -> str:
    """The console table: per fold, overall and extract for both learned variants; then the
    prompted baseline and the rules, and every decision operator over all folds. A run with no
    learned extraction (a decisions-only run) gets the decisions' table instead."""
    if all(summary["mean"][v]["extract"]["mean"] is None for v in LEARNED if v in summary["mean"]):
        return decisions_table(summary)
    names = ("Overall direct", "Overall 2-stage", "Extract direct", "Extract 2-stage")
    lines = [f"{'Fold':<18}" + "".join(f"{n:>22}" for n in names)]
    rows = [*summary["folds"].items(), ("all folds", summary["mean"])]
    for fold, s in rows:
        cells = [cell(s[v][m]) for m in ("overall", "extract") for v in ("direct", "two-stage")]
        lines.append(f"{fold:<18}" + "".join(f"{c:>22}" for c in cells))
    if s := summary["mean"].get("prompted"):  # two-stage extraction, like the learned row it pairs with
        base = f"{'':>22}{cell(s['overall']):>22}{'':>22}{cell(s['extract']):>22}"
        lines.append(f"{'prompted (base)':<18}{base}")
    s = summary["mean"]["symbolic"]
    lines.append(f"{'symbolic (ref.)':<18}{cell(s['overall']):>22}{'':>22}{cell(s['extract']):>22}")
    for mode in (m for m in STAGED_MODES if m in summary["mean"]):
        s = summary["mean"][mode]
        label = mode.replace("two-stage-", "2-stage ")
        lines.append(f"{label:<18}{'':>22}{cell(s['overall']):>22}{'':>22}{cell(s['extract']):>22}")
    lines += ["", f"{'All folds':<18}" + "".join(f"{op.capitalize():>22}" for op in DECISIONS)]
    for variant, label in (
        ("two-stage", "learned"),
        ("prompted", "prompted (base)"),
        ("symbolic", "symbolic"),
    ):
        if variant not in summary["mean"]:  # the prompted base, in a run that left it out
            continue
        s = summary["mean"][variant]
        lines.append(f"{label:<18}" + "".join(f"{cell(s[op]):>22}" for op in DECISIONS))
    return "\n".join(lines)


def decisions_table(summary: dict[str, Any]) -> str:
    """The console table of a decisions-only run: per fold, each decision operator learned and the
    engine's final-state keys with gold extraction and the learned decisions; then the prompted
    base (unless the run left it out: ``prompted=false``) and the rules over all folds. A run
    without replays (``replay=false``) has no engine row."""
    names = (*(f"{op.capitalize()} learned" for op in DECISIONS), "Engine keys")
    lines = [f"{'Fold':<18}" + "".join(f"{n:>22}" for n in names)]
    unreplayed = {"mean": None}
    for fold, s in [*summary["folds"].items(), ("all folds", summary["mean"])]:
        engine = s["decisions"]["engine_state"] if "decisions" in s else unreplayed
        cells = [*(cell(s["two-stage"][op]) for op in DECISIONS), cell(engine)]
        lines.append(f"{fold:<18}" + "".join(f"{c:>22}" for c in cells))
    for variant, label in (("prompted", "prompted (base)"), ("symbolic", "symbolic (ref.)")):
        if variant not in summary["mean"]:
            continue
        s = summary["mean"][variant]
        cells = [cell(s[op]) for op in (*DECISIONS, "engine_state")]
        lines.append(f"{label:<18}" + "".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)
