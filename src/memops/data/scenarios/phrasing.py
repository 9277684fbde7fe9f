"""Sentence templates that turn a gold claim into note text.

Each evidence type has its own cue words (a merged commit, a hotfix, a config diff, a runtime
log, an experiment branch, a wiki note, an outdated doc), so the evidence type must be read
from the text, not guessed from the slot. Distractor sentences mention slots without asserting
a value, so naming a slot is not enough to make a claim.
"""

from __future__ import annotations

import random

TEMPLATES: dict[str, tuple[str, ...]] = {
    "code-change": (
        "Merged {commit}: {noun} now uses {value}{scope}.",
        "PR landed as {commit}, switching {noun} to {value}{scope}.",
        "Commit {commit} moves {noun} over to {value}{scope}; the old setup is gone from the code.",
        "After {commit} was merged, {noun} is {value}{scope}.",
        "Code review done and merged ({commit}): {noun} -> {value}{scope}.",
        "{commit} rewires {noun} to run on {value}{scope}.",
        "We merged the migration ({commit}); {noun} is {value} from now on{scope}.",
        "The refactor in {commit} puts {noun} on {value}{scope}.",
    ),
    "incident-hotfix": (
        "Incident response: hotfix {commit} rolled {noun} back to {value}{scope}.",
        "Sev-2 tonight. Hotfix {commit} pins {noun} to {value}{scope} until the root cause is fixed.",
        "Emergency patch {commit}: {noun} reverted to {value}{scope} after errors spiked.",
        "During the outage we shipped hotfix {commit}, putting {noun} on {value}{scope}.",
        "Rollback: {commit} restores {noun} to {value}{scope} to stop the incident.",
        "Pager went off; the mitigation was hotfix {commit}, which sets {noun} to {value}{scope}.",
        "Post-incident note: the hotfix in {commit} leaves {noun} at {value}{scope}.",
        "Hotfix {commit} deployed: {noun} back on {value}{scope} while we investigate.",
    ),
    "config-observation": (
        "Config diff{scope}: {noun} is set to {value}.",
        "Checked the deployed config{scope}; {noun} reads {value}.",
        "The values file{scope} has {noun} = {value}.",
        "Terraform plan{scope} shows {noun} configured as {value}.",
        "Looked at the environment variables{scope}: {noun} points to {value}.",
        "Helm values{scope} list {value} for {noun}.",
        "In the config repo{scope}, {noun} is {value}.",
        "Config dump{scope} confirms {noun}: {value}.",
    ),
    "runtime-observation": (
        "Runtime logs{scope} show {noun} running {value}.",
        "From the dashboards{scope}: {noun} is serving on {value}.",
        "Traced a request{scope}; it went through {noun} on {value}.",
        "The health endpoint{scope} reports {noun} = {value}.",
        "Metrics{scope} confirm {noun} is {value} at the moment.",
        "Observed{scope} during the load test: {noun} on {value}.",
        "kubectl describe{scope} shows {noun} as {value}.",
        "Startup log{scope}: {noun} came up with {value}.",
    ),
    "branch-experiment": (
        "Trying {value} for {noun}{scope}, experiment only.",
        "Experiment{scope} swaps {noun} to {value}; not merged.",
        "Spike{scope}: {noun} running {value} to compare numbers.",
        "Prototype{scope} uses {value} as {noun}.",
        "Opened a draft PR{scope} that moves {noun} to {value}.",
        "Benchmarking {value} for {noun}{scope}.",
        "Sandbox{scope} runs {noun} on {value} for now.",
        "Testing {noun} with {value}{scope} before anyone decides.",
    ),
    "human-note": (
        "Wiki note: {noun} is {value}{scope}.",
        "From Slack: someone mentioned {noun} being {value}{scope}.",
        "My understanding is that {noun} is {value}{scope}.",
        "Meeting notes say {noun} = {value}{scope}.",
        "The onboarding doc lists {noun} as {value}{scope}.",
        "Heard from the platform team that {noun} uses {value}{scope}.",
        "Quick note to self: {noun} -> {value}{scope}.",
        "Team wiki, edited today: {noun} runs {value}{scope}.",
    ),
    "stale-observation": (
        "The old runbook still says {noun} is {value}{scope}.",
        "An outdated README claims {noun} uses {value}{scope}.",
        "Last quarter's architecture diagram shows {noun} on {value}{scope}.",
        "A cached status page lists {noun} as {value}{scope}.",
        "Archived ticket from last year: {noun} = {value}{scope}.",
        "Old onboarding slides mention {value} for {noun}{scope}.",
        "A stale comment in the code says {noun} is {value}{scope}.",
        "Legacy docs, not updated since the migration, say {noun}: {value}{scope}.",
    ),
}

TITLES: dict[str, tuple[str, ...]] = {
    "code-change": ("Merged PR", "Code change", "Merge notes", "Refactor landed"),
    "incident-hotfix": ("Incident log", "Hotfix", "Outage follow-up", "On-call notes"),
    "config-observation": ("Config check", "Config audit", "Infra review", "Settings diff"),
    "runtime-observation": ("Runtime check", "Dashboard review", "Load test notes", "Ops notes"),
    "branch-experiment": ("Experiment", "Spike notes", "Prototype", "Draft PR"),
    "human-note": ("Notes", "Wiki update", "Team sync", "Handover"),
    "stale-observation": ("Doc sweep", "Old docs", "Archive review", "Runbook read-through"),
}

DISTRACTORS: tuple[str, ...] = (
    "Standup moved to 10:30 this week.",
    "Reminder: update the changelog before the release.",
    "We should revisit {noun} next quarter.",
    "Nobody has touched {noun} in this change.",
    "The design review for {noun} is still open; no decision yet.",
    "Flaky test in the billing suite again, retried and green.",
    "Dependabot opened six PRs overnight.",
    "Someone asked whether {noun} could change; no answer so far.",
    "Lunch-and-learn on observability is on Thursday.",
    "Docs build is slow, tracked separately.",
    "Renamed a few internal helpers, no behaviour change.",
    "Added more logging around retries.",
    "The on-call handbook needs a new owner.",
    "Bumped the linter version; formatting only.",
    "Question for later: do we still need the legacy export job?",
    "Coverage went up two points.",
)

SCOPE_PHRASES: dict[str, tuple[str, ...]] = {
    "staging": (" on staging", " in the staging environment", " for staging"),
    "preview": (" in preview", " on the preview environment", " for preview deploys"),
    "dev": (" in dev", " on the dev environment", " for local dev"),
    "production": ("", "", " in production", " on prod"),
}


VERBATIM_RATE = 0.2
"""Share of notes that quote the value as the catalog words it (about 1 in 5 in real commit notes)."""

WORDS: dict[str, tuple[str, ...]] = {
    "every": ("each",),
    "each": ("every",),
    "per": ("for each",),
    "only": ("alone",),
    "after": ("following",),
    "no": ("zero",),
    "from": ("out of",),
    "over": ("across",),
    "with": ("using",),
    "expire": ("lapse", "time out"),
    "entries": ("items", "records"),
    "dropped": ("removed", "evicted"),
    "above": ("beyond", "past"),
    "fixed": ("constant", "static"),
    "automatic": ("automated",),
    "directory": ("folder",),
    "file": ("document",),
    "startup": ("launch", "boot"),
    "discovered": ("found",),
    "allowed": ("permitted",),
    "denied": ("blocked",),
    "fresh": ("new",),
    "shared": ("common",),
    "prefer": ("favour", "pick"),
    "highest": ("newest", "latest"),
    "lowest": ("oldest",),
    "retries": ("retry attempts", "re-deliveries"),
    "delay": ("pause", "wait"),
    "starting": ("beginning",),
    "exponential": ("doubling",),
    "sessions": ("logins",),
    "idle": ("inactive",),
    "release": ("ship",),
    "cut": ("branched",),
    "maintainer": ("reviewer",),
    "maintainers": ("reviewers",),
    "required": ("mandatory",),
    "disabled": ("turned off",),
    "variables": ("vars",),
    "split": ("broken up",),
    "rebuild": ("reindex",),
    "incremental": ("partial",),
    "bursts": ("spikes",),
    "revoked": ("invalidated",),
    "valid": ("accepted",),
    "rotation": ("rollover",),
    "shards": ("slices",),
    "balanced": ("weighted",),
    "pinned": ("locked",),
    "shipped": ("included", "bundled"),
    "listed": ("named",),
    "order": ("sequence",),
    "names": ("identifiers",),
    "refreshed": ("updated",),
    "frozen": ("locked",),
    "weekly": ("once a week",),
    "nightly": ("every night",),
    "plugins": ("extensions",),
    "legacy": ("old",),
    "single": ("one",),
    "sharded": ("partitioned",),
    "accepted": ("allowed",),
    "checks": ("validation",),
    "setting": ("option",),
    "written": ("stored",),
    "keeps": ("retains",),
    "adjusted": ("tuned",),
    "traffic": ("load",),
    "extends": ("prolongs",),
    "lifetime": ("lifespan",),
    "whenever": ("any time",),
    "green": ("passing",),
    "recorded": ("logged",),
    "overrides": ("beats",),
    "mapped": ("translated",),
    "map": ("translate",),
    "explicit": ("dedicated",),
    "install": ("installation",),
    "signed": ("signature-checked",),
    "unsigned": ("plain",),
    "separate": ("dedicated",),
    "process": ("subprocess",),
    "temp": ("scratch",),
    "coordinator": ("scheduler node",),
    "ahead": ("in front",),
    "keyed": ("partitioned",),
    "minutes": ("min",),
    "seconds": ("s",),
    "hours": ("h",),
    "percent": ("%",),
}
"""Word-level rewrites for paraphrased values: each keeps the meaning and changes a token."""
PHRASES: dict[str, tuple[str, ...]] = {
    "least recently used": ("LRU", "least-recently-used"),
    "up to": ("at most", "no more than"),
    "at most": ("up to", "a maximum of"),
    "at once": ("immediately", "right away"),
    "on first command use": ("the first time a command needs them",),
    "per-endpoint": ("endpoint-specific",),
    "read-only": ("readonly", "read only"),
    "command-line flags": ("CLI flags",),
}
NUMBERS = {
    "1": "one",
    "2": "two",
    "3": "three",
    "4": "four",
    "5": "five",
    "6": "six",
    "8": "eight",
    "10": "ten",
}


def paraphrase(rng: random.Random, value: str) -> str:
    """The value as a note might word it: about one token in five rewritten (phrases, words, small
    numbers), in the value's own order, so most tokens still match."""
    text = value
    for phrase, options in PHRASES.items():
        if phrase in text and rng.random() < 0.5:
            text = text.replace(phrase, rng.choice(options), 1)
    words = text.split(" ")
    spots = [i for i, w in enumerate(words) if w.lower().rstrip(",") in WORDS or w.rstrip(",") in NUMBERS]
    for i in rng.sample(spots, min(len(spots), max(1, round(len(words) / 5)))):
        word, comma = words[i].rstrip(","), "," if words[i].endswith(",") else ""
        new = NUMBERS.get(word) or rng.choice(WORDS[word.lower()])
        words[i] = new + comma
    return " ".join(words)


def stated(rng: random.Random, value: str) -> str:
    """How one note states a value: quoted as is, or paraphrased."""
    return value if rng.random() < VERBATIM_RATE else paraphrase(rng, value)


def scope_phrase(rng: random.Random, branch: str, env: str) -> str:
    parts = []
    if branch != "main":
        parts.append(f" on branch {branch}")
    phrase = rng.choice(SCOPE_PHRASES[env])
    if phrase or env != "production":
        parts.append(phrase)
    return "".join(parts)


TAILS: tuple[str, ...] = (
    "so that the old path can go in a follow-up",
    "which the design review asked for",
    "to keep the integration tests green",
    "and the docs were updated to match",
    "after a long thread on the PR",
    "because the previous setup kept timing out",
    "as agreed with the platform team",
    "with a migration note in the changelog",
    "to unblock the release",
    "which also simplifies the error handling",
    "so callers no longer need a workaround",
    "behind the same feature flag as before",
)
TAIL_RATE = 0.5
"""Share of claim sentences that go on after the value, as a commit note's do: the value ends
where its words do, not where the sentence does."""


def sentence(rng: random.Random, kind: str, noun: str, value: str, commit: str | None, scope: str) -> str:
    template = rng.choice(TEMPLATES[kind])
    return template.format(noun=noun, value=value, commit=commit or "", scope=scope)


def with_tail(rng: random.Random, sentence: str) -> str:
    """The sentence with a clause after its value (``TAIL_RATE`` of the time): a reason, a
    consequence or a follow-up that states nothing about any slot."""
    if rng.random() >= TAIL_RATE:
        return sentence
    return f"{sentence.removesuffix('.')}, {rng.choice(TAILS)}."


def distractor(rng: random.Random, noun: str) -> str:
    return rng.choice(DISTRACTORS).format(noun=noun)
