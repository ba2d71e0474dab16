//! The service's own Prometheus metrics: their names, in one place, and their HELP text
//! ([`describe`], called once when the recorder is installed). Each is what an operator alerts
//! on; the labels come from fixed sets (outcomes, consumers, workers), never from requests.
//!
//! Every family is exported from the first scrape ([`register`]: counters at zero with each of
//! their fixed labels, histograms empty; the gauges read at scrape have a "never" value), so an
//! alert can tell "never happened" from "not exported".

/// Claims answered, by `outcome`: `issued`, `replayed`, `sold_out`, `limit_reached`,
/// `not_claimable`, `not_eligible`, `key_reused`, `code_taken`, `unavailable`, `error`.
pub const CLAIMS: &str = "coupond_claims_total";
/// Of those, `sold_out` answers given from memory, without a database round trip.
pub const SOLD_OUT_FROM_MEMORY: &str = "coupond_claims_sold_out_from_memory_total";
/// Claims per group-commit transaction.
pub const CLAIM_BATCH_SIZE: &str = "coupond_claim_batch_size";
/// Seconds one group-commit transaction took.
pub const CLAIM_COMMIT_SECONDS: &str = "coupond_claim_commit_seconds";
/// Outbox events each consumer has not handled yet (counted up to 1,000 at each scrape).
pub const OUTBOX_BACKLOG: &str = "coupond_outbox_backlog";
/// Webhook delivery attempts, by `result`: `delivered`, `retry`, `failed`.
pub const WEBHOOK_DELIVERIES: &str = "coupond_webhook_deliveries_total";
/// Seconds from a delivery being queued to its attempt.
pub const WEBHOOK_QUEUE_AGE_SECONDS: &str = "coupond_webhook_queue_age_seconds";
/// Seconds the scheduler ran after the instant it was due.
pub const SCHEDULER_LAG_SECONDS: &str = "coupond_scheduler_lag_seconds";
/// Single-use codes generated.
pub const CODES_GENERATED: &str = "coupond_codes_generated_total";
/// Requests refused by a rate limit, by `limit`.
pub const RATE_LIMITED: &str = "coupond_rate_limited_total";

/// Shared rate limits that could not be counted in Redis, by `outcome`: `local` (counted in
/// process instead) or `refused` (503, the limit fails closed).
pub const RATE_LIMIT_FALLBACK: &str = "coupond_rate_limit_fallback_total";
/// Redis commands that failed or timed out, by `op`: `rate_limit`, `publish`, `subscribe`.
pub const REDIS_ERRORS: &str = "coupond_redis_errors_total";
/// Notices to other instances, by `way`: `sent`, `received`, `rejected` (unsigned, forged or
/// stale messages on the channel).
pub const PEER_NOTICES: &str = "coupond_peer_notices_total";
/// Events published to NATS JetStream and acknowledged.
pub const NATS_PUBLISHED: &str = "coupond_nats_published_total";
/// NATS publishes that failed or were not acknowledged (the batch is sent again).
pub const NATS_ERRORS: &str = "coupond_nats_errors_total";
/// Broken invariants the last audit run found (the one that finished its checks last).
pub const AUDIT_VIOLATIONS: &str = "coupond_audit_violations";
/// When that run finished, Unix seconds (0 before any run finished).
pub const AUDIT_LAST_RUN: &str = "coupond_audit_last_run_timestamp_seconds";

/// Templates claimable now, of them those with nothing left to claim, and those low on
/// stock (read at scrape).
pub const TEMPLATES_CLAIMABLE: &str = "coupond_templates_claimable";
pub const TEMPLATES_SOLD_OUT: &str = "coupond_templates_sold_out";
pub const TEMPLATES_LOW_STOCK: &str = "coupond_templates_low_stock";
/// The largest share of its budget an active template has given or reserved (read at
/// scrape; 0 while no active template has a budget).
pub const BUDGET_USED_RATIO_MAX: &str = "coupond_budget_used_ratio_max";
/// Orders still locked whose lock ends within five minutes (read at scrape).
pub const LOCKS_EXPIRING_SOON: &str = "coupond_locks_expiring_soon";
/// 1 when the scrape's reads of the database succeeded, 0 when they did not.
pub const DATABASE_UP: &str = "coupond_database_up";

/// Users' requests not marked seen because the in-memory map of users seen was full
/// (`users.seen_capacity`); the next request after a flush marks them.
pub const SEEN_DROPPED: &str = "coupond_seen_dropped_total";

/// Registers the HELP text of every metric above and of those named elsewhere.
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(CLAIMS, "Claims answered, by outcome");
    describe_counter!(
        SEEN_DROPPED,
        "User requests not marked seen because the map of users seen was full"
    );
    describe_counter!(
        RATE_LIMIT_FALLBACK,
        "Shared rate limits not counted in Redis: counted locally, or refused (fail closed)"
    );
    describe_counter!(
        REDIS_ERRORS,
        "Redis commands that failed or timed out, by op"
    );
    describe_counter!(
        PEER_NOTICES,
        "Cache notices to other instances: sent, received, and rejected (unsigned, forged or stale)"
    );
    describe_counter!(
        NATS_PUBLISHED,
        "Events published to NATS JetStream and acknowledged"
    );
    describe_counter!(
        NATS_ERRORS,
        "NATS publishes that failed or were not acknowledged"
    );
    describe_counter!(
        SOLD_OUT_FROM_MEMORY,
        "sold_out answers given from memory, without a database round trip"
    );
    describe_histogram!(CLAIM_BATCH_SIZE, "Claims per group-commit transaction");
    describe_histogram!(
        CLAIM_COMMIT_SECONDS,
        Unit::Seconds,
        "Time one group-commit claim transaction took"
    );
    describe_gauge!(
        OUTBOX_BACKLOG,
        "Outbox events a consumer has not handled yet (up to 1000, read at scrape)"
    );
    describe_gauge!(
        AUDIT_VIOLATIONS,
        "Broken invariants the last audit run found (read at scrape)"
    );
    describe_gauge!(
        AUDIT_LAST_RUN,
        "When the last audit run finished its checks, Unix seconds (read at scrape)"
    );
    describe_counter!(WEBHOOK_DELIVERIES, "Webhook delivery attempts, by result");
    describe_gauge!(
        TEMPLATES_CLAIMABLE,
        "Templates claimable now (read at scrape)"
    );
    describe_gauge!(
        TEMPLATES_SOLD_OUT,
        "Claimable templates with nothing left to claim (read at scrape)"
    );
    describe_gauge!(
        TEMPLATES_LOW_STOCK,
        "Claimable templates with less than a twentieth of their stock left (read at scrape)"
    );
    describe_gauge!(
        BUDGET_USED_RATIO_MAX,
        "The largest share of its budget an active template has given or reserved (read at scrape)"
    );
    describe_gauge!(
        LOCKS_EXPIRING_SOON,
        "Orders still locked whose lock ends within five minutes (read at scrape)"
    );
    describe_gauge!(
        DATABASE_UP,
        "1 when the scrape could read the database, 0 when it could not"
    );
    describe_histogram!(
        WEBHOOK_QUEUE_AGE_SECONDS,
        Unit::Seconds,
        "Time from a webhook delivery being queued to its attempt"
    );
    describe_histogram!(
        SCHEDULER_LAG_SECONDS,
        Unit::Seconds,
        "How late the scheduler ran after the instant it was due"
    );
    describe_counter!(CODES_GENERATED, "Single-use codes generated");
    describe_counter!(RATE_LIMITED, "Requests refused by a rate limit, by limit");
    describe_counter!(
        "coupond_messages_total",
        "Email and SMS messages the couriers handled, by channel and outcome (sent, retried, deferred, failed)"
    );
    describe_counter!(
        "coupond_worker_restarts_total",
        "Background loops restarted after a panic or an error, by worker"
    );
    describe_counter!(
        "coupond_checkout_retries_total",
        "Checkout steps tried again after the database answered unavailable"
    );
    describe_counter!(
        "coupond_amount_verification_failures_total",
        "Locks refused because the order's amounts did not add up"
    );
}

/// Each fixed label set a counter family has, registered at zero by [`register`].
const COUNTERS: &[(&str, &str, &[&str])] = &[
    (
        CLAIMS,
        "outcome",
        &[
            "issued",
            "replayed",
            "sold_out",
            "limit_reached",
            "not_claimable",
            "not_eligible",
            "paused",
            "key_reused",
            "code_taken",
            "unavailable",
            "error",
        ],
    ),
    (
        WEBHOOK_DELIVERIES,
        "result",
        &["delivered", "retry", "failed"],
    ),
    (
        RATE_LIMITED,
        "limit",
        &[
            "claim_per_user",
            "claim_per_ip",
            "redeem_per_user",
            "redeem_per_ip",
            "idempotency",
            "code_set",
            "template_pause",
        ],
    ),
    (RATE_LIMIT_FALLBACK, "outcome", &["local", "refused"]),
    (REDIS_ERRORS, "op", &["rate_limit", "publish", "subscribe"]),
    (PEER_NOTICES, "way", &["sent", "received", "rejected"]),
];

/// Counter families without labels.
const PLAIN_COUNTERS: &[&str] = &[
    SOLD_OUT_FROM_MEMORY,
    CODES_GENERATED,
    NATS_PUBLISHED,
    NATS_ERRORS,
    SEEN_DROPPED,
    "coupond_checkout_retries_total",
    "coupond_amount_verification_failures_total",
];

/// Registers every counter family at zero with its fixed labels, and every histogram empty,
/// so that the first scrape shows them all (called once, after [`describe`]). The gauges read
/// at scrape are set there, with their "never" values; a supervised worker registers its own
/// restarts counter when it starts.
pub fn register() {
    for (name, label, values) in COUNTERS {
        for value in *values {
            metrics::counter!(*name, *label => *value).increment(0);
        }
    }
    for name in PLAIN_COUNTERS {
        metrics::counter!(*name).increment(0);
    }
    for channel in ["email", "sms"] {
        for outcome in ["sent", "retried", "deferred", "failed"] {
            metrics::counter!("coupond_messages_total", "channel" => channel, "outcome" => outcome)
                .increment(0);
        }
    }
    // "Never ran": no violations found, and a last run at the Unix epoch, until the first
    // scrape that finds a finished run sets them.
    metrics::gauge!(AUDIT_VIOLATIONS).set(0.0);
    metrics::gauge!(AUDIT_LAST_RUN).set(0.0);
    for name in [
        CLAIM_BATCH_SIZE,
        CLAIM_COMMIT_SECONDS,
        WEBHOOK_QUEUE_AGE_SECONDS,
        SCHEDULER_LAG_SECONDS,
    ] {
        // Registering the handle is enough: an empty histogram renders with zero counts.
        let _ = metrics::histogram!(name);
    }
}

/// The `outcome` label of a claim's answer.
pub fn claim_outcome(
    result: &Result<crate::claims::Claimed, crate::claims::ClaimError>,
) -> &'static str {
    use crate::claims::ClaimError;
    use coupond_domain::ClaimRejection;
    match result {
        Ok(c) if c.replayed => "replayed",
        Ok(_) => "issued",
        Err(ClaimError::Rejected(r)) => match r {
            ClaimRejection::SoldOut => "sold_out",
            ClaimRejection::LimitReached => "limit_reached",
            ClaimRejection::NotClaimable(_) => "not_claimable",
            ClaimRejection::NotEligible => "not_eligible",
            ClaimRejection::Paused => "paused",
        },
        Err(ClaimError::KeyReused) => "key_reused",
        Err(ClaimError::CodeTaken) => "code_taken",
        Err(ClaimError::Unavailable | ClaimError::ShuttingDown) => "unavailable",
        Err(ClaimError::Internal(_)) => "error",
    }
}
