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


def scope_phrase(rng: random.Random, branch: str, env: str) -> str:
    parts = []
    if branch != "main":
        parts.append(f" on branch {branch}")
    phrase = rng.choice(SCOPE_PHRASES[env])
    if phrase or env != "production":
        parts.append(phrase)
    return "".join(parts)


def sentence(rng: random.Random, kind: str, noun: str, value: str, commit: str | None, scope: str) -> str:
    template = rng.choice(TEMPLATES[kind])
    return template.format(noun=noun, value=value, commit=commit or "", scope=scope)


def distractor(rng: random.Random, noun: str) -> str:
    return rng.choice(DISTRACTORS).format(noun=noun)
