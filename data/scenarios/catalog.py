"""The synthetic project's catalog: tracked slots, how people refer to them, plausible values."""

from __future__ import annotations

from dataclasses import dataclass

from core.records import Catalog, CatalogEntry


@dataclass(frozen=True)
class Slot:
    entity: str
    slot: str
    description: str
    noun: str
    """How a note names the slot in running text ("the primary database")."""
    values: tuple[str, ...]


SLOTS: tuple[Slot, ...] = (
    Slot(
        "database",
        "engine",
        "primary relational database engine and major version",
        "the primary database",
        ("PostgreSQL 15", "PostgreSQL 16", "MySQL 8.0", "CockroachDB 23.2", "SQLite 3.45"),
    ),
    Slot(
        "database",
        "pool_size",
        "connection pool size per service instance",
        "the DB connection pool",
        ("10 connections", "25 connections", "50 connections", "100 connections"),
    ),
    Slot(
        "orm",
        "library",
        "ORM used by the backend",
        "the ORM layer",
        ("SQLAlchemy 2.0", "Prisma 5", "Django ORM", "Drizzle ORM", "TypeORM"),
    ),
    Slot(
        "orm",
        "migrations",
        "schema migration tool",
        "schema migrations",
        ("Alembic", "Prisma Migrate", "Flyway", "Atlas"),
    ),
    Slot(
        "deployment",
        "platform",
        "where the services are deployed",
        "the deploy target",
        ("Fly.io", "Render", "AWS ECS", "GKE Autopilot", "Heroku"),
    ),
    Slot(
        "deployment",
        "strategy",
        "rollout strategy for releases",
        "the rollout strategy",
        ("rolling update", "blue-green", "canary at 5%", "recreate"),
    ),
    Slot(
        "hosting",
        "region",
        "primary hosting region",
        "the primary region",
        ("us-east-1", "eu-west-1", "eu-central-1", "ap-southeast-2"),
    ),
    Slot(
        "compute",
        "instance_size",
        "instance size of the API service",
        "the API instances",
        ("2 vCPU / 4 GiB", "4 vCPU / 8 GiB", "8 vCPU / 16 GiB"),
    ),
    Slot(
        "auth",
        "provider",
        "identity provider for user login",
        "user login",
        ("Auth0", "Okta", "Keycloak", "AWS Cognito", "in-house JWT service"),
    ),
    Slot(
        "auth",
        "session_ttl",
        "lifetime of a user session",
        "the session lifetime",
        ("15 minutes", "1 hour", "12 hours", "7 days"),
    ),
    Slot(
        "auth",
        "mfa",
        "multi-factor authentication policy",
        "MFA",
        ("required for admins", "required for everyone", "optional"),
    ),
    Slot(
        "cache",
        "backend",
        "shared cache backend",
        "the shared cache",
        ("Redis 7", "Memcached 1.6", "Valkey 8", "Dragonfly"),
    ),
    Slot(
        "cache",
        "ttl",
        "default cache entry TTL",
        "the default cache TTL",
        ("60 seconds", "5 minutes", "1 hour"),
    ),
    Slot(
        "queue",
        "broker",
        "message broker for background jobs",
        "the job queue",
        ("RabbitMQ", "Kafka", "Amazon SQS", "Redis Streams", "NATS JetStream"),
    ),
    Slot(
        "queue",
        "retry_policy",
        "retry policy of background jobs",
        "job retries",
        (
            "3 retries with exponential backoff",
            "5 retries, fixed 30s delay",
            "no retries, dead-letter at once",
        ),
    ),
    Slot(
        "ci",
        "runner",
        "CI service running the pipelines",
        "CI",
        ("GitHub Actions", "GitLab CI", "CircleCI", "Buildkite"),
    ),
    Slot(
        "ci",
        "required_checks",
        "checks required before merge",
        "the merge gate",
        ("lint and unit tests", "lint, unit and e2e tests", "unit tests only"),
    ),
    Slot("api", "version", "current public API version", "the public API", ("v1", "v2", "v3")),
    Slot(
        "api",
        "rate_limit",
        "per-client API rate limit",
        "the API rate limit",
        ("100 requests/s", "500 requests/s", "1000 requests/s"),
    ),
    Slot(
        "api",
        "gateway",
        "API gateway in front of the services",
        "the API gateway",
        ("Kong", "Envoy", "nginx", "AWS API Gateway"),
    ),
    Slot(
        "feature_flags",
        "provider",
        "feature flag service",
        "feature flags",
        ("LaunchDarkly", "Unleash", "ConfigCat", "Flagsmith"),
    ),
    Slot(
        "feature_flags",
        "new_checkout",
        "state of the new checkout flow flag",
        "the new-checkout flag",
        ("off", "on for 10% of users", "on for everyone"),
    ),
    Slot(
        "logging",
        "backend",
        "log aggregation backend",
        "log aggregation",
        ("Datadog", "Grafana Loki", "CloudWatch Logs", "Elastic"),
    ),
    Slot(
        "monitoring",
        "alerting",
        "on-call alerting service",
        "alert routing",
        ("PagerDuty", "Opsgenie", "Grafana OnCall"),
    ),
    Slot(
        "storage",
        "object_store",
        "object storage for uploads",
        "upload storage",
        ("Amazon S3", "Google Cloud Storage", "MinIO", "Cloudflare R2"),
    ),
    Slot(
        "search",
        "engine",
        "full-text search engine",
        "search",
        ("Elasticsearch 8", "OpenSearch 2", "Meilisearch", "Typesense"),
    ),
    Slot(
        "frontend",
        "framework",
        "web frontend framework",
        "the web frontend",
        ("React 18 SPA", "Next.js 14", "Vue 3", "SvelteKit"),
    ),
    Slot(
        "runtime",
        "node_version",
        "Node.js version of the services",
        "the Node runtime",
        ("Node 18", "Node 20", "Node 22"),
    ),
    Slot(
        "runtime",
        "python_version",
        "Python version of the workers",
        "the worker Python",
        ("Python 3.10", "Python 3.11", "Python 3.12"),
    ),
    Slot("payments", "provider", "payment processor", "payments", ("Stripe", "Adyen", "Braintree")),
    Slot(
        "email",
        "provider",
        "transactional email service",
        "transactional email",
        ("SendGrid", "Postmark", "Amazon SES"),
    ),
    Slot(
        "secrets",
        "manager",
        "where runtime secrets are stored",
        "secrets",
        ("HashiCorp Vault", "AWS Secrets Manager", "Doppler", "SOPS files"),
    ),
    Slot(
        "cdn", "provider", "CDN in front of static assets", "the CDN", ("Cloudflare", "Fastly", "CloudFront")
    ),
)

SYNTHETIC_CATALOG = Catalog(
    name="synthetic",
    entries=tuple(CatalogEntry(entity=s.entity, slot=s.slot, description=s.description) for s in SLOTS),
)
