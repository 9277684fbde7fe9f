"""The synthetic project's catalog: tracked slots, how notes refer to them, plausible values.

The project is an invented build-and-delivery toolchain, written for this generator. Its shape
follows what real project state looks like rather than a generic web-app checklist:

- names are code identifiers that share parts: several slots per entity, near misses such as
  ``webhook_dispatch.retry`` beside ``webhook_dispatch.retry_backoff``, and one slot name under
  several entities (``plugin_host.sandbox``, ``job_scheduler.sandbox``), so that telling two
  keys apart takes reading both names whole, not their first token;
- values are short descriptions (2 to 12 words), built from frames with a parameter, so two
  values of one slot often differ in a single significant token (``every 15 minutes`` against
  ``every 60 minutes``).
"""

from __future__ import annotations

from dataclasses import dataclass

from memops.core.records import Catalog, CatalogEntry


@dataclass(frozen=True)
class Slot:
    entity: str
    slot: str
    description: str
    noun: str
    """How a note names the slot in running text ("the cache eviction window")."""
    values: tuple[str, ...]


def frames(*parts: tuple[str, tuple[str, ...]] | str) -> tuple[str, ...]:
    """Values from frames: ``(frame, params)`` gives one value per parameter, a plain string
    is a value of its own. Sibling values of one frame differ in one token."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        else:
            frame, params = part
            out += [frame.format(p) for p in params]
    return tuple(out)


SLOTS: tuple[Slot, ...] = (
    Slot(
        "artifact_cache",
        "eviction",
        "which artifact cache entries are removed, and when",
        "the artifact cache eviction policy",
        frames(
            ("least recently used entries dropped above {} GiB", ("4", "16", "64")),
            ("entries expire {} days after their last read", ("7", "30")),
            "no automatic eviction, pruned by hand",
        ),
    ),
    Slot(
        "artifact_cache",
        "eviction_window",
        "how often the artifact cache eviction pass runs",
        "the cache eviction window",
        frames(
            ("eviction pass every {} minutes", ("5", "15", "60")), "eviction pass at the start of each build"
        ),
    ),
    Slot(
        "artifact_cache",
        "key_scheme",
        "what an artifact cache key is computed from",
        "how cache keys are derived",
        frames(
            ("hash of the lockfile and the {} toolchain version", ("pinned", "host")),
            "content hash of every input file",
            "content hash of every input file and the resolved environment variables",
            "branch name plus target triple",
        ),
    ),
    Slot(
        "lockfile",
        "resolver",
        "which dependency resolver writes the lockfile",
        "the dependency resolver",
        frames(
            ("backtracking resolver with a {} second budget", ("30", "120")),
            "SAT-based resolver shipped in core",
            "legacy greedy resolver",
        ),
    ),
    Slot(
        "lockfile",
        "resolver_strategy",
        "which versions the resolver prefers",
        "the resolver's version preference",
        frames(
            ("prefer the {} compatible versions", ("highest", "lowest")),
            "prefer versions already in the lockfile",
            "highest versions, prereleases allowed on opt-in",
        ),
    ),
    Slot(
        "lockfile",
        "update_policy",
        "when the lockfile may change",
        "lockfile updates",
        frames(
            "rewritten on every install",
            ("frozen in CI, refreshed {} by a bot", ("weekly", "nightly")),
            "only through the explicit update command",
        ),
    ),
    Slot(
        "plugin_host",
        "loading",
        "how the plugin host finds and starts plugins",
        "plugin loading",
        frames(
            ("plugins discovered from the {} directory at startup", ("project", "user")),
            "plugins listed explicitly in the manifest",
            "lazy load on first command use",
            "plugins from the project directory at startup, user plugins ignored in CI",
        ),
    ),
    Slot(
        "plugin_host",
        "load_order",
        "the order in which plugins are initialised",
        "the plugin load order",
        frames(
            ("{} order of plugin names", ("alphabetical", "reverse alphabetical")),
            "dependency order from each plugin's requires list",
            "manifest order, first entry wins on conflicts",
        ),
    ),
    Slot(
        "plugin_host",
        "sandbox",
        "what a plugin process may touch",
        "the plugin sandbox",
        frames(
            ("read-only workspace, network {}", ("denied", "allowed")),
            "separate process with a seccomp filter",
            "no sandbox, plugins run in the host process",
        ),
    ),
    Slot(
        "job_scheduler",
        "queue",
        "where pending build jobs wait",
        "the job queue",
        frames(
            ("single FIFO queue per {}", ("workspace", "organisation")),
            "sharded queues keyed by repository",
            "in-memory queue on the coordinator",
        ),
    ),
    Slot(
        "job_scheduler",
        "priority_queue",
        "how urgent jobs jump the normal queue",
        "the priority lane for jobs",
        frames(
            ("release jobs ahead of everything, capped at {} slots", ("2", "8")),
            "priority taken from the job's label, highest first",
            "no priority lane, strict arrival order",
        ),
    ),
    Slot(
        "job_scheduler",
        "sandbox",
        "the isolation each scheduled job runs in",
        "job isolation",
        frames(
            ("fresh container per job, {} network", ("no", "egress-only")),
            "shared runner with a per-job temp directory",
            "microVM per job with a 10 minute lease",
        ),
    ),
    Slot(
        "job_scheduler",
        "concurrency_limit",
        "how many jobs run at once",
        "the job concurrency limit",
        frames(
            ("at most {} concurrent jobs per workspace", ("4", "16", "32")),
            "unbounded, limited by runner count",
        ),
    ),
    Slot(
        "webhook_dispatch",
        "retry",
        "whether and how often failed webhook deliveries are retried",
        "webhook retries",
        frames(
            ("up to {} retries per delivery", ("3", "5", "10")),
            "no retries, failures go to the dead-letter list",
        ),
    ),
    Slot(
        "webhook_dispatch",
        "retry_backoff",
        "the wait between webhook delivery retries",
        "the webhook retry backoff",
        frames(
            ("exponential backoff starting at {} seconds", ("1", "10", "30")),
            ("fixed {} second delay between attempts", ("5", "60")),
        ),
    ),
    Slot(
        "webhook_dispatch",
        "signing",
        "how webhook payloads are signed",
        "webhook signatures",
        frames(
            ("HMAC-SHA256 header with a {} secret", ("per-endpoint", "per-account")),
            "Ed25519 signature over body and timestamp",
            "unsigned payloads over mutual TLS",
        ),
    ),
    Slot(
        "schema_registry",
        "compatibility",
        "which schema changes the registry accepts",
        "schema compatibility checks",
        frames(
            ("{} compatible changes only", ("backward", "forward", "fully")),
            "any change accepted, checks advisory",
        ),
    ),
    Slot(
        "schema_registry",
        "compatibility_mode",
        "whether compatibility is checked per subject or globally",
        "where the compatibility setting applies",
        frames(
            ("per-subject setting, defaulting to {}", ("backward", "none")),
            "one global setting for every subject",
        ),
    ),
    Slot(
        "telemetry_export",
        "sink",
        "where telemetry is exported to",
        "the telemetry sink",
        frames(
            ("OTLP over gRPC to the {} collector", ("local", "regional")),
            "JSON lines written to the workspace log folder",
            "telemetry disabled unless opted in",
        ),
    ),
    Slot(
        "telemetry_export",
        "sampling",
        "which traces are kept",
        "trace sampling",
        frames(
            ("head sampling of {} percent of traces", ("1", "10", "25")),
            "tail sampling that keeps every failed trace",
        ),
    ),
    Slot(
        "telemetry_export",
        "sampling_rate",
        "how the sampling rate is set",
        "who sets the sampling rate",
        frames(
            ("fixed in the {} config", ("workspace", "organisation")),
            "adjusted by the collector from traffic volume",
        ),
    ),
    Slot(
        "session_store",
        "backend",
        "where CLI login sessions are stored",
        "the session store",
        frames(
            ("OS keychain with a {} fallback", ("plaintext file", "encrypted file")),
            "encrypted file in the config directory",
            "OS keychain",
        ),
    ),
    Slot(
        "session_store",
        "expiry",
        "how long a login session lasts",
        "session expiry",
        frames(
            ("sessions expire after {} hours idle", ("8", "24", "72")), "sessions never expire on their own"
        ),
    ),
    Slot(
        "session_store",
        "expiry_refresh",
        "whether activity extends a session",
        "session refresh on activity",
        frames(
            ("each command extends the session by {} hours", ("1", "8")),
            "no refresh, fixed lifetime from login",
        ),
    ),
    Slot(
        "release_train",
        "cadence",
        "how often releases are cut",
        "the release cadence",
        frames(
            ("minor release every {} weeks", ("2", "4", "6")),
            "release whenever the main branch is green and tagged",
        ),
    ),
    Slot(
        "release_train",
        "freeze_window",
        "how long before a release the branch is frozen",
        "the release freeze window",
        frames(
            ("{} days of code freeze before each cut", ("2", "5")), "no freeze, release branch cut on the day"
        ),
    ),
    Slot(
        "release_train",
        "approval",
        "who must sign off a release",
        "release sign-off",
        frames(
            ("one maintainer from the {} team", ("release", "core")),
            "two maintainers, one outside the owning team",
        ),
    ),
    Slot(
        "release_train",
        "approval_flow",
        "how release sign-off is collected",
        "the release approval flow",
        frames(
            ("required review on the {} pull request", ("release", "changelog")),
            "chat command recorded by the release bot",
        ),
    ),
    Slot(
        "config_loader",
        "precedence",
        "which configuration source wins when several set a key",
        "config precedence",
        frames(
            ("command-line flags, then environment, then {} file", ("project", "user")),
            "project file overrides everything except flags",
        ),
    ),
    Slot(
        "config_loader",
        "search_path",
        "where configuration files are looked for",
        "the config search path",
        frames(
            ("current directory upward to the {} root", ("repository", "filesystem")),
            "only the XDG config directory",
        ),
    ),
    Slot(
        "config_loader",
        "env_override",
        "how environment variables override configuration keys",
        "environment overrides",
        frames(
            ("variables prefixed {} map onto config keys", ("FORGE_", "FORGE_CFG_")),
            "environment overrides disabled in CI mode",
        ),
    ),
    Slot(
        "search_index",
        "tokenizer",
        "how the code search index splits identifiers",
        "the search tokenizer",
        frames(
            ("camelCase and snake_case split, {} kept", ("digits", "punctuation")),
            "whitespace split only",
            "ngram tokenizer",
            "trigram index over raw text",
        ),
    ),
    Slot(
        "search_index",
        "rebuild",
        "how the code search index is rebuilt",
        "index rebuilds",
        frames(("full rebuild every {} hours", ("6", "24")), "incremental update per pushed commit"),
    ),
    Slot(
        "search_index",
        "rebuild_trigger",
        "what starts an index rebuild",
        "what triggers a reindex",
        frames(
            ("schema version bump or {}", ("manual request", "nightly timer")),
            "push to the default branch",
        ),
    ),
    Slot(
        "rate_limiter",
        "algorithm",
        "how the API rate limiter counts requests",
        "the rate limiting algorithm",
        frames(
            ("token bucket refilled {} times per second", ("10", "50")),
            "sliding window over the last minute",
            "sliding window over the last minute, shared across every replica of the gateway",
            "fixed window reset every hour",
        ),
    ),
    Slot(
        "rate_limiter",
        "scope",
        "what one rate limit applies to",
        "the rate limit scope",
        frames(("one limit per {}", ("API token", "IP address", "organisation"))),
    ),
    Slot(
        "rate_limiter",
        "burst",
        "how many requests may exceed the rate at once",
        "the burst allowance",
        frames(("bursts of up to {} requests", ("20", "100")), "no burst allowance"),
    ),
    Slot(
        "auth_tokens",
        "format",
        "the format of API tokens",
        "the API token format",
        frames(
            ("opaque random strings with a {} prefix", ("fg_", "forge_")),
            "signed JWTs with a 15 minute lifetime",
        ),
    ),
    Slot(
        "auth_tokens",
        "rotation",
        "whether API tokens are rotated",
        "token rotation",
        frames(
            ("automatic rotation every {} days", ("30", "90")),
            "rotation on request only",
            "never rotated",
        ),
    ),
    Slot(
        "auth_tokens",
        "rotation_window",
        "how long an old token stays valid after rotation",
        "the token rotation grace period",
        frames(
            ("old token valid for {} hours after rotation", ("1", "24", "48")), "old token revoked at once"
        ),
    ),
    Slot(
        "build_matrix",
        "platforms",
        "which platforms CI builds for",
        "the CI platform matrix",
        frames(
            ("Linux and macOS, {} on nightly only", ("Windows", "FreeBSD")),
            "Linux x86-64 and arm64 only",
            "Linux, macOS and Windows on every push",
        ),
    ),
    Slot(
        "build_matrix",
        "toolchain",
        "which compiler toolchain CI uses",
        "the CI toolchain",
        frames(("stable toolchain pinned to {}", ("1.78", "1.82")), "nightly toolchain with a weekly bump"),
    ),
    Slot(
        "build_matrix",
        "test_shards",
        "how the test suite is split across CI runners",
        "test sharding",
        frames(
            ("{} shards balanced by past timing", ("4", "8", "12")),
            "one shard per crate",
        ),
    ),
)

SYNTHETIC_CATALOG = Catalog(
    name="synthetic",
    entries=tuple(CatalogEntry(entity=s.entity, slot=s.slot, description=s.description) for s in SLOTS),
)
