//! The configuration's sections, one per concern. Their defaults live in `defaults.toml`.

use std::fmt;
use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::redact_url;

/// The listener and what one client may hold.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// Address `serve` listens on: `host:port`, the host an IP address or a name resolved at
    /// start (`[::1]:8080` for IPv6).
    pub listen: String,
    /// Largest accepted request body, bytes.
    pub max_body_bytes: usize,
    /// Largest accepted upload (bulk issuance files), bytes.
    pub max_upload_bytes: usize,
    /// Bulk issuance uploads read at once; one more is 429.
    pub max_concurrent_uploads: u32,
    /// On SIGINT/SIGTERM, how long in-flight requests may take to finish.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// Connections open at once; more are closed on accept (and logged).
    pub max_connections: usize,
    /// Connections open at once from one client address (0: no limit).
    pub max_connections_per_ip: usize,
    /// Time a client has to send a request head, from the connection's start or the end of
    /// the previous response (so also the keep-alive idle limit).
    #[serde(with = "humantime_serde")]
    pub header_timeout: Duration,
    /// A connection whose client stops reading its answer for this long is closed.
    #[serde(with = "humantime_serde")]
    pub stall_timeout: Duration,
    /// The longest a request may take, reading its body included (408 after it).
    #[serde(with = "humantime_serde")]
    pub request_timeout: Duration,
    /// Reverse proxies (CIDRs or addresses) whose `Forwarded` / `X-Forwarded-For` headers name
    /// the client; a list, or one comma-separated string (as the environment gives it).
    #[serde(deserialize_with = "list_or_csv")]
    pub trusted_proxies: Vec<String>,
}

/// Where the data lives.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Database {
    /// `sqlite://path/to/file.db` (created with its folder), `postgres://user@host/db` or
    /// `mysql://user@host/db` (MariaDB or MySQL).
    pub url: String,
    /// PostgreSQL: connections in the pool (default 16). SQLite: reader connections (default
    /// 4; the writer is always one). 1..=1000.
    #[serde(default)]
    pub pool_size: Option<u32>,
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Database")
            .field("url", &redact_url(&self.url))
            .field("pool_size", &self.pool_size)
            .finish()
    }
}

/// Logs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Log {
    /// `tracing` filter: `info`, `debug`, `coupond_api=debug,info`, ...
    pub level: String,
    pub format: LogFormat,
}

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// Who may call, and for how long what they showed is trusted.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// Secret that signs user tokens (HS256). Unset: a random secret generated once and kept
    /// in the database, so `serve` and `token` on the same database agree.
    #[serde(default)]
    pub jwt_secret: Option<SecretString>,
    /// The longest lifetime a user token may have (`exp` - `iat`); longer ones are refused.
    #[serde(with = "humantime_serde")]
    pub max_token_lifetime: Duration,
    /// How long API keys and claimed templates are cached in memory; a key revoked by
    /// `coupond keys revoke` stops working within this time.
    #[serde(with = "humantime_serde")]
    pub cache_ttl: Duration,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field(
                "jwt_secret",
                &self.jwt_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("max_token_lifetime", &self.max_token_lifetime)
            .field("cache_ttl", &self.cache_ttl)
            .finish()
    }
}

/// Activities, templates, listings and codes.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// Activities freeze this long before they start.
    #[serde(with = "humantime_serde")]
    pub freeze_period: Duration,
    /// How many templates one listing may have bound at once.
    pub max_bindings_per_listing: u32,
    /// Code batches up to this many codes are generated within the request; larger ones in
    /// the background.
    pub code_batch_sync_max: u32,
}

/// The claim path.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// `batched` (group commit) or `single` (one transaction per claim, for comparison).
    pub mode: ClaimModeName,
    /// Largest number of claims committed in one transaction.
    pub max_batch: usize,
}

/// `claim.mode` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimModeName {
    Batched,
    Single,
}

/// Rate limits (GCRA): a sustained rate per second and the burst allowed at once; 0 disables.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub claim_rate_per_user: u32,
    pub claim_burst_per_user: u32,
    /// Per client IP, with user tokens only.
    pub claim_rate_per_ip: u32,
    pub claim_burst_per_ip: u32,
    /// Code redemptions (failed ones count).
    pub redeem_rate_per_user: u32,
    pub redeem_burst_per_user: u32,
    pub redeem_rate_per_ip: u32,
    pub redeem_burst_per_ip: u32,
    /// Writes with an `Idempotency-Key` per user or merchant (replays and retries count).
    pub idempotency_rate_per_principal: u32,
    pub idempotency_burst_per_principal: u32,
    /// Shared-code changes (`PUT /v1/templates/{id}/code`) per merchant.
    pub code_set_rate_per_merchant: u32,
    pub code_set_burst_per_merchant: u32,
    /// Pauses and resumes of one template.
    pub pause_rate_per_template: u32,
    pub pause_burst_per_template: u32,
}

/// Orders holding coupons.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkout {
    /// How long a lock holds an order's coupons without a confirm, unless it asks for its own
    /// deadline (`hold_until`).
    #[serde(with = "humantime_serde")]
    pub lock_ttl: Duration,
    /// The furthest from now a lock's own deadline, or an extension of it, may be.
    #[serde(with = "humantime_serde")]
    pub max_lock_ttl: Duration,
}

/// Answers replayed to retries of writes with an `Idempotency-Key`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Idempotency {
    /// How long answers are kept for replay.
    #[serde(with = "humantime_serde")]
    pub ttl: Duration,
    /// A request unanswered this long is taken to have died with its process; a retry then
    /// runs it again.
    #[serde(with = "humantime_serde")]
    pub stale: Duration,
    /// Larger answers are not kept for replay.
    pub max_answer_bytes: usize,
}

/// Background work.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Background {
    /// Users are reminded this many days before their coupons expire.
    pub reminder_days_before: u32,
    /// Background work (code generation, bulk issuance) sizes its transactions to take about
    /// this long, so claims waiting for the database are never held up by much more.
    #[serde(with = "humantime_serde")]
    pub txn_target: Duration,
    /// Codes one owner (a merchant, or the platform) may have waiting to be generated.
    pub max_queued_codes_per_owner: u32,
    /// Users one owner's open issuance jobs may have waiting to be issued.
    pub max_queued_issuance_per_owner: u32,
    /// When the self-audit runs every day: `HH:MM`, UTC, or `off` (only on request).
    pub audit_at: String,
}

impl Background {
    /// [`Background::audit_at`] read: `None` for `off`.
    pub fn audit_schedule(&self) -> Result<Option<coupond_engine::self_audit::TimeOfDay>, String> {
        match self.audit_at.trim() {
            "off" => Ok(None),
            at => coupond_engine::self_audit::TimeOfDay::parse(at).map(Some),
        }
    }
}

/// Webhook endpoints and deliveries.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Webhook {
    /// The wait before a delivery's second attempt; it doubles each time.
    #[serde(with = "humantime_serde")]
    pub retry_base: Duration,
    /// Attempts before a delivery is marked failed.
    pub max_attempts: u32,
    /// Host names and CIDR ranges webhooks may target although they are internal
    /// (loopback, private, link-local, ...); empty: none.
    #[serde(deserialize_with = "list_or_csv")]
    pub allow_hosts: Vec<String>,
    /// Endpoints one owner (a merchant, or the platform) may have enabled.
    pub max_per_owner: u32,
    /// How long a receiver has to answer.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Deliveries in flight at once, over all endpoints.
    pub concurrency: u32,
    /// Deliveries in flight at once to one endpoint.
    pub concurrency_per_endpoint: u32,
    /// Deliveries in flight at once to the endpoints of one owner (a merchant, the platform).
    pub concurrency_per_owner: u32,
}

/// A list given as a TOML array, or (from the environment) as one comma-separated string
/// (`coupon_issued,campaign`; spaces around the commas are dropped). Every list-valued
/// setting reads through this.
pub(super) fn list_or_csv<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::de::IntoDeserializer;
    #[derive(Deserialize)]
    #[serde(untagged, bound = "T: serde::de::DeserializeOwned")]
    enum Either<T> {
        List(Vec<T>),
        Text(String),
    }
    match Either::<T>::deserialize(d)? {
        Either::List(v) => Ok(v),
        Either::Text(t) => t
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| T::deserialize(s.into_deserializer()))
            .collect(),
    }
}

/// The web console under `/console`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Console {
    /// At least 32 characters: the session cookies are encrypted and the form tokens signed
    /// with a key derived from it. Unset: a random secret generated once and kept in the
    /// database, so instances on one database share sessions.
    #[serde(default)]
    pub secret: Option<SecretString>,
    /// Mark the session cookie `Secure` (set it when the console is reached over https).
    pub secure_cookies: bool,
    /// How long a sign-in lasts.
    #[serde(with = "humantime_serde")]
    pub session_ttl: Duration,
    /// Failed account sign-ins per email and per client address before each further attempt
    /// waits (1 s, doubling per failure).
    pub sign_in_free_failures: u32,
    /// The longest wait between failed sign-ins.
    #[serde(with = "humantime_serde")]
    pub sign_in_max_delay: Duration,
    /// Password checks (argon2id, 19 MiB each) running at once; 0: as many as the cores.
    pub password_hashes: usize,
    /// Whether an API key may sign into the console (off: accounts only).
    pub key_sign_in: bool,
    /// Whether platform operators must have a second factor.
    pub require_totp_for_platform: bool,
}

impl fmt::Debug for Console {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Console")
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("secure_cookies", &self.secure_cookies)
            .field("session_ttl", &self.session_ttl)
            .field("sign_in_free_failures", &self.sign_in_free_failures)
            .field("sign_in_max_delay", &self.sign_in_max_delay)
            .field("password_hashes", &self.password_hashes)
            .field("key_sign_in", &self.key_sign_in)
            .field("require_totp_for_platform", &self.require_totp_for_platform)
            .finish()
    }
}

/// The platform as people see it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    /// The IANA time zone (`Asia/Shanghai`, `UTC`) whose local days "today", reports and
    /// charts count in; checked when the configuration is read.
    pub time_zone: coupond_domain::Zone,
    /// The currency of every amount (ISO 4217, three upper-case letters); checked when the
    /// configuration is read.
    pub currency: coupond_domain::Currency,
}

/// Users' activity as coupond sees it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Users {
    /// A user's requests mark them seen at most once per this long (1s to 1 day).
    #[serde(with = "humantime_serde")]
    pub seen_resolution: Duration,
    /// Users held in memory waiting to be marked seen, at most (1,000 to 10,000,000).
    pub seen_capacity: usize,
}
