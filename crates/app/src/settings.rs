//! [`AppSettings`]: what the configuration says, as the application and its front doors
//! read it on every call.

use std::sync::Arc;

use coupond_domain::Zone;
use coupond_engine::self_audit::TimeOfDay;
use coupond_engine::shared::{Alone, OnLimitError, Peers, SharedLimits};
use coupond_engine::webhooks::TargetPolicy;
use coupond_engine::ClaimMode;

use crate::ratelimit::Rate;

/// The service's settings, read by the application layer and its front doors (the HTTP
/// limits among them, until they get a struct of their own).
#[derive(Clone, Debug)]
pub struct AppSettings {
    /// Activities freeze this long before they start (and at the end of enrollment).
    pub freeze: time::Duration,
    /// Largest accepted request body, bytes.
    pub max_body_bytes: usize,
    /// Largest accepted upload (bulk issuance files), bytes.
    pub max_upload_bytes: usize,
    /// Page size when a list request gives no `limit`.
    pub default_page: u32,
    /// Largest `limit` a list request may ask for.
    pub max_page: u32,
    /// How many templates one listing may have bound at once.
    pub max_bindings_per_listing: u32,
    /// Group commit (the default) or one transaction per claim.
    pub claim_mode: ClaimMode,
    /// Claims per user (whoever sends them). Off by default here; `coupond serve` turns it on.
    pub claim_rate_per_user: Rate,
    /// Claims per client IP, for requests with user tokens. Off by default here.
    pub claim_rate_per_ip: Rate,
    /// Code redemptions per user, counting failed attempts (they are how codes get guessed).
    /// Off by default here.
    pub redeem_rate_per_user: Rate,
    /// Code redemptions per client IP, for requests with user tokens. Off by default here.
    pub redeem_rate_per_ip: Rate,
    /// Code batches up to this size are generated within the request (201); larger ones in
    /// the background (202).
    pub code_batch_sync_max: u32,
    /// How long a lock holds an order's coupons without a confirm, unless it asks for its own
    /// deadline.
    pub lock_ttl: time::Duration,
    /// The furthest from now a lock's own deadline (`hold_until`) or an extension may be.
    pub max_lock_ttl: time::Duration,
    /// How long the answer to a request with an `Idempotency-Key` is kept for replay.
    pub idempotency_ttl: time::Duration,
    /// A request with an `Idempotency-Key` left unanswered this long is taken to have died
    /// with its process (kill -9, power loss); a retry then runs it again instead of being
    /// told 409 `idempotency_in_flight`. Longer than any request takes.
    pub idempotency_stale: time::Duration,
    /// How long API keys and claimed templates are cached in memory (zero: not at all). A
    /// key revoked by another process stops working within this time.
    pub cache_ttl: std::time::Duration,
    /// The longest a request may take, reading its body included (408 after it).
    pub request_timeout: std::time::Duration,
    /// Bulk issuance uploads read at once; one more is 429.
    pub max_concurrent_uploads: u32,
    /// The longest lifetime a user token may have.
    pub max_token_lifetime: time::Duration,
    /// Answers larger than this are not kept for replay under an `Idempotency-Key`.
    pub idempotency_max_answer_bytes: usize,
    /// Writes with an `Idempotency-Key` per user or merchant (service and platform keys are
    /// the operator's own systems and are not limited).
    pub idempotency_rate: Rate,
    /// Shared-code changes per merchant.
    pub code_set_rate: Rate,
    /// Pauses and resumes of one template (each tells every instance's coupon centre).
    pub pause_rate: Rate,
    /// Where webhooks may be sent.
    pub webhook_targets: Arc<TargetPolicy>,
    /// Webhook endpoints one owner may have enabled.
    pub max_webhooks_per_owner: u32,
    /// Peers whose `Forwarded` / `X-Forwarded-For` name the client (per-IP limits, logs).
    pub trusted_proxies: Arc<crate::forwarded::TrustedProxies>,
    /// Background transactions (code generation, bulk issuance) are sized to take about this
    /// long; zero: fixed, maximal chunks.
    pub background_txn_target: std::time::Duration,
    /// Codes one owner (a merchant, or the platform) may have waiting to be generated;
    /// a batch past it is 409 `queue_full`.
    pub max_queued_codes_per_owner: i64,
    /// Users one owner's open issuance jobs may have waiting; a job past it is 409
    /// `queue_full`.
    pub max_queued_issuance_per_owner: i64,
    /// Where claim and redemption limits are counted with other instances (Redis); `None`:
    /// in this process.
    pub shared_limits: Option<Arc<dyn SharedLimits>>,
    /// What claims do when the shared limits cannot be counted.
    pub claim_limits_on_error: OnLimitError,
    /// What code redemptions do when the shared limits cannot be counted.
    pub redeem_limits_on_error: OnLimitError,
    /// The other instances, told when a key is revoked or a template changes or sells out.
    pub peers: Arc<dyn Peers>,
    /// Whether the outbox is published to NATS (its consumer's backlog is then reported).
    pub publishes_to_nats: bool,
    /// When the self-audit runs by itself every day (UTC); `None`: only on request.
    pub audit_at: Option<TimeOfDay>,
    /// The API's public root, which emails' unsubscribe and invitation links point to.
    pub public_url: String,
    /// The channels configured outside the app: invitations go by its email channel.
    pub messaging: coupond_engine::messaging::MessagingRules,
    /// The platform's time zone: where "today" and the days of charts and reports begin.
    pub time_zone: Zone,
    /// The platform's currency, recorded with each order's amounts.
    pub currency: coupond_domain::Currency,
    /// A user is marked seen (last active) at most once per this long.
    pub seen_resolution: time::Duration,
    /// Users held in memory waiting to be marked seen, at most (see [`coupond_engine::Seen`]).
    pub seen_capacity: usize,
    /// Campaign messages an owner (a merchant, or the platform) may send per local day.
    pub campaigns_per_owner_per_day: u32,
    /// Password checks (argon2id, 19 MiB each) running at once; 0: as many as the cores.
    pub password_hashes: usize,
}

impl Default for AppSettings {
    fn default() -> Self {
        AppSettings {
            freeze: time::Duration::minutes(5),
            max_body_bytes: 64 * 1024,
            max_upload_bytes: 64 * 1024 * 1024,
            default_page: 50,
            max_page: 200,
            max_bindings_per_listing: 3,
            claim_mode: ClaimMode::default(),
            claim_rate_per_user: Rate::OFF,
            claim_rate_per_ip: Rate::OFF,
            redeem_rate_per_user: Rate::OFF,
            redeem_rate_per_ip: Rate::OFF,
            code_batch_sync_max: 1_000,
            lock_ttl: time::Duration::minutes(15),
            max_lock_ttl: time::Duration::days(7),
            idempotency_ttl: time::Duration::hours(24),
            idempotency_stale: time::Duration::minutes(1),
            cache_ttl: std::time::Duration::ZERO,
            request_timeout: std::time::Duration::from_secs(60),
            max_concurrent_uploads: 2,
            max_token_lifetime: time::Duration::days(30),
            idempotency_max_answer_bytes: 64 * 1024,
            idempotency_rate: Rate::OFF,
            code_set_rate: Rate::OFF,
            pause_rate: Rate::OFF,
            webhook_targets: Arc::new(TargetPolicy::default()),
            max_webhooks_per_owner: 10,
            trusted_proxies: Arc::default(),
            background_txn_target: std::time::Duration::ZERO,
            max_queued_codes_per_owner: 2_000_000,
            max_queued_issuance_per_owner: 2_000_000,
            shared_limits: None,
            claim_limits_on_error: OnLimitError::Open,
            redeem_limits_on_error: OnLimitError::Closed,
            peers: Arc::new(Alone),
            publishes_to_nats: false,
            audit_at: None,
            public_url: "http://127.0.0.1:8080".into(),
            messaging: coupond_engine::messaging::MessagingRules {
                readers: coupond_engine::messaging::Readers::default(),
                channels: Vec::new(),
            },
            time_zone: Zone::UTC,
            currency: coupond_domain::Currency::CNY,
            seen_resolution: time::Duration::minutes(5),
            seen_capacity: 100_000,
            campaigns_per_owner_per_day: 3,
            password_hashes: 0,
        }
    }
}
