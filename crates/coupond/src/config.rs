//! Configuration, layered: built-in defaults, then the TOML file given with `--config` (or
//! `COUPOND_CONFIG`), then `COUPOND_*` environment variables, then command-line flags.
//! Loading only reads: it never writes a file and reports every problem as an error naming
//! the setting and where it came from.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// The settings every subcommand shares.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address `serve` listens on.
    pub listen: SocketAddr,
    /// `sqlite://path/to/file.db` (created with its folder) or `postgres://user@host/db`.
    pub database_url: String,
    /// PostgreSQL: connections in the pool (default 16; a quarter of them, up to 8, carry a hot
    /// template's claim batches at once). SQLite: reader connections (default 4; the writer is
    /// always one). 1..=1000.
    #[serde(default)]
    pub database_pool_size: Option<u32>,
    /// Secret that signs user tokens (HS256). Unset: a random secret generated once and kept
    /// in the database, so `serve` and `token` on the same database agree.
    #[serde(default)]
    pub jwt_secret: Option<SecretString>,
    /// `tracing` filter: `info`, `debug`, `coupond_api=debug,info`, ...
    pub log_level: String,
    /// `text` or `json`.
    pub log_format: LogFormat,
    /// Activities freeze this long before they start.
    #[serde(with = "humantime_serde")]
    pub freeze_period: Duration,
    /// Largest accepted request body, bytes.
    pub max_body_bytes: usize,
    /// Largest accepted upload (bulk issuance files), bytes.
    pub max_upload_bytes: usize,
    /// On SIGINT/SIGTERM, how long in-flight requests may take to finish.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// How many templates one listing may have bound at once.
    pub max_bindings_per_listing: u32,
    /// `batched` (group commit) or `single` (one transaction per claim, for comparison).
    pub claim_mode: ClaimModeName,
    /// Largest number of claims committed in one transaction.
    pub claim_max_batch: usize,
    /// Claims per second one user may make (sustained); 0 disables the limit.
    pub claim_rate_per_user: u32,
    /// Claims one user may make at once before the per-second rate applies.
    pub claim_burst_per_user: u32,
    /// Claims per second from one client IP with user tokens; 0 disables the limit.
    pub claim_rate_per_ip: u32,
    /// Claims one IP may make at once before the per-second rate applies.
    pub claim_burst_per_ip: u32,
    /// Code redemptions per second one user may attempt (failed ones count); 0 disables.
    pub redeem_rate_per_user: u32,
    /// Redemption attempts one user may make at once.
    pub redeem_burst_per_user: u32,
    /// Code redemptions per second from one client IP with user tokens; 0 disables.
    pub redeem_rate_per_ip: u32,
    /// Redemption attempts one IP may make at once.
    pub redeem_burst_per_ip: u32,
    /// Code batches up to this many codes are generated within the request; larger ones in
    /// the background.
    pub code_batch_sync_max: u32,
    /// How long a lock holds an order's coupons without a confirm.
    #[serde(with = "humantime_serde")]
    pub lock_ttl: Duration,
    /// How long answers to requests with an `Idempotency-Key` are kept for replay.
    #[serde(with = "humantime_serde")]
    pub idempotency_ttl: Duration,
    /// A request with an `Idempotency-Key` unanswered this long is taken to have died with its
    /// process; a retry then runs it again.
    #[serde(with = "humantime_serde")]
    pub idempotency_stale: Duration,
    /// Users are reminded this many days before their coupons expire.
    pub reminder_days_before: u32,
    /// The wait before a webhook delivery's second attempt; it doubles each time.
    #[serde(with = "humantime_serde")]
    pub webhook_retry_base: Duration,
    /// Attempts before a webhook delivery is marked failed.
    pub webhook_max_attempts: u32,
    /// How long API keys and claimed templates are cached in memory; a key revoked by
    /// `coupond keys revoke` stops working within this time.
    #[serde(with = "humantime_serde")]
    pub cache_ttl: Duration,
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
    /// Bulk issuance uploads read at once; one more is 429.
    pub max_concurrent_uploads: u32,
    /// The longest lifetime a user token may have (`exp` - `iat`); longer ones are refused.
    #[serde(with = "humantime_serde")]
    pub max_token_lifetime: Duration,
    /// Larger answers to requests with an `Idempotency-Key` are not kept for replay.
    pub idempotency_max_answer_bytes: usize,
    /// Writes with an `Idempotency-Key` per second one user or merchant may send (replays
    /// and retries count); 0 disables.
    pub idempotency_rate_per_principal: u32,
    /// New keys one user or merchant may start at once.
    pub idempotency_burst_per_principal: u32,
    /// Shared-code changes (`PUT /v1/templates/{id}/code`) per second per merchant; 0
    /// disables.
    pub code_set_rate_per_merchant: u32,
    /// Shared-code changes one merchant may make at once.
    pub code_set_burst_per_merchant: u32,
    /// Host names and CIDR ranges webhooks may target although they are internal
    /// (loopback, private, link-local, ...); empty: none.
    #[serde(deserialize_with = "list_or_csv")]
    pub webhook_allow_hosts: Vec<String>,
    /// Webhook endpoints one owner (a merchant, or the platform) may have enabled.
    pub max_webhooks_per_owner: u32,
    /// How long a webhook receiver has to answer.
    #[serde(with = "humantime_serde")]
    pub webhook_timeout: Duration,
    /// Webhook deliveries in flight at once, over all endpoints.
    pub webhook_concurrency: u32,
    /// Webhook deliveries in flight at once to one endpoint.
    pub webhook_concurrency_per_endpoint: u32,
    /// Background work (code generation, bulk issuance) sizes its transactions to take about
    /// this long, so claims waiting for the database are never held up by much more.
    #[serde(with = "humantime_serde")]
    pub background_txn_target: Duration,
}

/// A list given as a TOML array, or (from the environment) as one comma-separated string.
fn list_or_csv<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        List(Vec<String>),
        Text(String),
    }
    Ok(match Either::deserialize(d)? {
        Either::List(v) => v,
        Either::Text(t) => t
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

/// `claim_mode` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimModeName {
    Batched,
    Single,
}

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// The documented defaults, printed by `coupond config`. A test checks that this text parses
/// to exactly the defaults the code uses.
pub const DEFAULTS_TOML: &str = include_str!("config/defaults.toml");

/// Setting names read from `COUPOND_<NAME>`.
const ENV_KEYS: [&str; 47] = [
    "listen",
    "database_url",
    "database_pool_size",
    "jwt_secret",
    "log_level",
    "log_format",
    "freeze_period",
    "max_body_bytes",
    "max_upload_bytes",
    "shutdown_grace",
    "max_bindings_per_listing",
    "claim_mode",
    "claim_max_batch",
    "claim_rate_per_user",
    "claim_burst_per_user",
    "claim_rate_per_ip",
    "claim_burst_per_ip",
    "redeem_rate_per_user",
    "redeem_burst_per_user",
    "redeem_rate_per_ip",
    "redeem_burst_per_ip",
    "code_batch_sync_max",
    "lock_ttl",
    "idempotency_ttl",
    "idempotency_stale",
    "reminder_days_before",
    "webhook_retry_base",
    "webhook_max_attempts",
    "cache_ttl",
    "max_connections",
    "max_connections_per_ip",
    "header_timeout",
    "stall_timeout",
    "request_timeout",
    "max_concurrent_uploads",
    "max_token_lifetime",
    "idempotency_max_answer_bytes",
    "idempotency_rate_per_principal",
    "idempotency_burst_per_principal",
    "code_set_rate_per_merchant",
    "code_set_burst_per_merchant",
    "webhook_allow_hosts",
    "max_webhooks_per_owner",
    "webhook_timeout",
    "webhook_concurrency",
    "webhook_concurrency_per_endpoint",
    "background_txn_target",
];

/// Values given on the command line; `None` leaves the lower layers in charge.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Overrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_format: Option<LogFormat>,
}

impl Config {
    /// Loads the layers. `file` is the `--config` path, if any.
    pub fn load(file: Option<&Path>, flags: &Overrides) -> anyhow::Result<Config> {
        let mut fig = Figment::from(Toml::string(DEFAULTS_TOML));
        if let Some(path) = file {
            if !path.is_file() {
                anyhow::bail!(
                    "config file {} does not exist or is not a file",
                    path.display()
                );
            }
            fig = fig.merge(Toml::file(path));
        }
        fig = fig
            .merge(Env::prefixed("COUPOND_").only(&ENV_KEYS))
            .merge(Serialized::defaults(flags));
        let config = fig.extract::<Config>().map_err(|e| {
            let msgs: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
            anyhow::anyhow!("invalid configuration: {}", msgs.join("; "))
        })?;
        config.check()?;
        Ok(config)
    }

    /// Rules between values that serde cannot express.
    fn check(&self) -> anyhow::Result<()> {
        for (name, value) in [
            ("header_timeout", self.header_timeout),
            ("stall_timeout", self.stall_timeout),
            ("request_timeout", self.request_timeout),
        ] {
            anyhow::ensure!(
                value >= Duration::from_secs(1),
                "invalid configuration: {name} must be at least 1s"
            );
        }
        anyhow::ensure!(
            self.database_pool_size
                .is_none_or(|n| (1..=1000).contains(&n)),
            "invalid configuration: database_pool_size must be within 1..=1000"
        );
        anyhow::ensure!(
            self.max_connections > 0,
            "invalid configuration: max_connections must be at least 1"
        );
        Ok(())
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("database_url", &redact_url(&self.database_url))
            .field("database_pool_size", &self.database_pool_size)
            .field(
                "jwt_secret",
                &self.jwt_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("log_level", &self.log_level)
            .field("log_format", &self.log_format)
            .field("freeze_period", &self.freeze_period)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_upload_bytes", &self.max_upload_bytes)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("max_bindings_per_listing", &self.max_bindings_per_listing)
            .field("claim_mode", &self.claim_mode)
            .field("claim_max_batch", &self.claim_max_batch)
            .field("claim_rate_per_user", &self.claim_rate_per_user)
            .field("claim_burst_per_user", &self.claim_burst_per_user)
            .field("claim_rate_per_ip", &self.claim_rate_per_ip)
            .field("claim_burst_per_ip", &self.claim_burst_per_ip)
            .field("redeem_rate_per_user", &self.redeem_rate_per_user)
            .field("redeem_burst_per_user", &self.redeem_burst_per_user)
            .field("redeem_rate_per_ip", &self.redeem_rate_per_ip)
            .field("redeem_burst_per_ip", &self.redeem_burst_per_ip)
            .field("code_batch_sync_max", &self.code_batch_sync_max)
            .field("lock_ttl", &self.lock_ttl)
            .field("idempotency_ttl", &self.idempotency_ttl)
            .field("idempotency_stale", &self.idempotency_stale)
            .field("reminder_days_before", &self.reminder_days_before)
            .field("webhook_retry_base", &self.webhook_retry_base)
            .field("webhook_max_attempts", &self.webhook_max_attempts)
            .field("cache_ttl", &self.cache_ttl)
            .field("max_connections", &self.max_connections)
            .field("max_connections_per_ip", &self.max_connections_per_ip)
            .field("header_timeout", &self.header_timeout)
            .field("stall_timeout", &self.stall_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_concurrent_uploads", &self.max_concurrent_uploads)
            .field("max_token_lifetime", &self.max_token_lifetime)
            .field(
                "idempotency_max_answer_bytes",
                &self.idempotency_max_answer_bytes,
            )
            .field(
                "idempotency_rate_per_principal",
                &self.idempotency_rate_per_principal,
            )
            .field(
                "idempotency_burst_per_principal",
                &self.idempotency_burst_per_principal,
            )
            .field(
                "code_set_rate_per_merchant",
                &self.code_set_rate_per_merchant,
            )
            .field(
                "code_set_burst_per_merchant",
                &self.code_set_burst_per_merchant,
            )
            .field("webhook_allow_hosts", &self.webhook_allow_hosts)
            .field("max_webhooks_per_owner", &self.max_webhooks_per_owner)
            .field("webhook_timeout", &self.webhook_timeout)
            .field("webhook_concurrency", &self.webhook_concurrency)
            .field(
                "webhook_concurrency_per_endpoint",
                &self.webhook_concurrency_per_endpoint,
            )
            .field("background_txn_target", &self.background_txn_target)
            .finish()
    }
}

/// The URL with any password replaced, for logs: the `user:password@` part and the query
/// parameters that carry secrets (`password`, `sslpassword`).
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let mut out = match (base.find("://"), base.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let userinfo = &base[scheme_end + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!(
                    "{}{}:<redacted>{}",
                    &base[..scheme_end + 3],
                    &userinfo[..colon],
                    &base[at..]
                ),
                None => base.to_owned(),
            }
        }
        _ => base.to_owned(),
    };
    if let Some(q) = query {
        let params: Vec<String> = q
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if k.to_ascii_lowercase().contains("password") => {
                    format!("{k}=<redacted>")
                }
                _ => p.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

#[cfg(test)]
// figment's Jail API returns its large error type by design.
#[allow(clippy::result_large_err)]
mod tests;
