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
pub const DEFAULTS_TOML: &str = r#"# coupond configuration. Every setting can also be given as a COUPOND_<NAME> environment
# variable (COUPOND_LISTEN, COUPOND_DATABASE_URL, ...) and most as a flag (--listen,
# --database, --log-level, --log-format). Precedence: flags > environment > file > defaults.

# Address `coupond serve` listens on.
listen = "127.0.0.1:8080"

# sqlite://path/to/file.db (created with its folder, migrations applied) or
# postgres://user:password@host:5432/database.
database_url = "sqlite://./data/coupond.db"

# Connections to the database. PostgreSQL: the pool (default 16; a quarter of it, at most 8,
# carries one hot template's claim batches at once, the rest serves everything else); keep
# instances x pool below the server's max_connections. SQLite: reader connections (default 4;
# writes always go through one). 1 to 1000; unset: the backend's default.
# database_pool_size = 16

# Secret that signs user tokens (HS256). Leave unset to use a random secret generated once
# and kept in the database.
# jwt_secret = "change-me"

# tracing filter: info, debug, or per-crate such as "coupond_api=debug,info".
log_level = "info"

# text or json.
log_format = "text"

# Activities freeze (no more edits) this long before they start.
freeze_period = "5m"

# Largest accepted request body, in bytes.
max_body_bytes = 65536

# Largest accepted upload (bulk issuance: a user id per line), in bytes.
max_upload_bytes = 67108864

# On SIGINT/SIGTERM, how long in-flight requests may take to finish.
shutdown_grace = "30s"

# How many templates one listing may have bound at once.
max_bindings_per_listing = 3

# batched: concurrent claims of one template commit together (group commit);
# single: one transaction per claim (to measure what batching buys).
claim_mode = "batched"

# Largest number of claims committed in one transaction.
claim_max_batch = 512

# Claim rate limits (GCRA): sustained claims per second and the burst allowed at once, per
# user (whoever sends the claim) and per client IP (requests with user tokens only; service
# keys speak for many users). 0 disables a limit. Over the limit: 429 with Retry-After.
claim_rate_per_user = 5
claim_burst_per_user = 10
claim_rate_per_ip = 50
claim_burst_per_ip = 100

# Code lookup limits, the same way: redemptions, and quotes that preview a code, share them.
# Failed attempts count too: they are how codes are guessed. Kept low on purpose; a person
# types a code now and then.
redeem_rate_per_user = 1
redeem_burst_per_user = 5
redeem_rate_per_ip = 10
redeem_burst_per_ip = 50

# Batches of generated codes up to this size are made before the request is answered (201);
# larger ones in the background (202; poll the batch).
code_batch_sync_max = 1000

# How long a lock (POST /v1/orders/{id}/lock) holds its coupons without a confirm; then they
# go back to the user.
lock_ttl = "15m"

# How long the answer to a write with an Idempotency-Key is replayed to retries.
idempotency_ttl = "24h"

# A request with an Idempotency-Key still unanswered after this long is taken to have died
# with its process (kill -9, power loss); until then a retry is told 409
# idempotency_in_flight (Retry-After: 1), after it the retry runs again. Longer than any
# request takes.
idempotency_stale = "1m"

# Users get an inbox reminder this many days before their coupons expire (one per user,
# template and day).
reminder_days_before = 3

# Webhook deliveries that fail are retried after this, then twice as long each time, up to
# webhook_max_attempts attempts (5s and 12: the last about 5.7 hours after the first).
webhook_retry_base = "5s"
webhook_max_attempts = 12

# How long API keys and claimed templates are cached in memory. A key revoked with
# `coupond keys revoke` stops working within this time. "0s" turns the cache off.
cache_ttl = "1s"

# Connections. At most max_connections are open at once, and max_connections_per_ip from one
# client address (0: no per-address limit; behind a load balancer, every connection comes
# from its addresses); more are closed on accept, and logged. Keep max_connections below the
# process's file descriptor limit (ulimit -n). A request head must arrive within
# header_timeout, counted from the connection's start and from the end of the previous
# response (so an idle keep-alive connection closes after it too: keep a load balancer's idle
# timeout below it). A connection whose client stops reading its answer for stall_timeout is
# closed. A request that takes longer than request_timeout, reading its body included, is
# answered 408. The three times must be at least 1s.
max_connections = 10000
max_connections_per_ip = 1000
header_timeout = "15s"
stall_timeout = "30s"
request_timeout = "60s"

# Bulk issuance uploads read at once (each up to max_upload_bytes); one more is 429.
max_concurrent_uploads = 2

# The longest lifetime a user token may have (exp - iat, or exp - now without iat).
max_token_lifetime = "30days"

# Answers to writes with an Idempotency-Key larger than this are not kept: a replay of such a
# key answers 409 idempotency_answer_not_kept. Every answer of the API is far smaller.
idempotency_max_answer_bytes = 65536
# Writes with an Idempotency-Key per second (and at once) one user or merchant may send
# (replays and retries count too); over it, 429.
# Service and platform keys (the operator's own systems) are not limited. 0 disables.
idempotency_rate_per_principal = 20
idempotency_burst_per_principal = 200

# Shared-code changes (PUT /v1/templates/{id}/code) per second and at once, per merchant: a
# code another merchant uses is answered code_taken, so changes are limited to keep that from
# being a guessing oracle. 0 disables.
code_set_rate_per_merchant = 1
code_set_burst_per_merchant = 10

# Webhooks. Endpoints on loopback, private, link-local, unique-local, unspecified, multicast,
# shared (CGNAT) or cloud-metadata addresses are refused, at registration and again on the
# address a name resolves to at delivery time, unless listed here: host names and CIDR
# ranges, e.g. ["hooks.internal.example", "10.1.2.0/24"] (COUPOND_WEBHOOK_ALLOW_HOSTS takes
# them comma-separated). Each owner (a merchant, or the platform) may have
# max_webhooks_per_owner endpoints enabled. A receiver has webhook_timeout to answer;
# deliveries run concurrently, at most webhook_concurrency at once and
# webhook_concurrency_per_endpoint to one endpoint, so a slow receiver only delays itself.
webhook_allow_hosts = []
max_webhooks_per_owner = 10
webhook_timeout = "10s"
webhook_concurrency = 32
webhook_concurrency_per_endpoint = 2

# Background work (code generation, bulk issuance) sizes each transaction to take about this
# long, so a claim waiting for the database (SQLite has one writer) is never held up much.
background_txn_target = "10ms"
"#;

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
mod tests {
    use super::*;
    use figment::Jail;

    #[test]
    fn documented_defaults_are_the_defaults() {
        Jail::expect_with(|_| {
            let c = Config::load(None, &Overrides::default()).expect("defaults load");
            assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
            assert_eq!(c.database_url, "sqlite://./data/coupond.db");
            assert!(c.jwt_secret.is_none());
            assert_eq!(c.freeze_period, Duration::from_secs(300));
            assert_eq!(c.max_body_bytes, 65536);
            assert_eq!(c.log_format, LogFormat::Text);
            assert_eq!(c.max_bindings_per_listing, 3);
            assert_eq!(
                (c.claim_mode, c.claim_max_batch),
                (ClaimModeName::Batched, 512)
            );
            assert_eq!(c.max_connections, 10_000);
            assert_eq!(
                (c.header_timeout, c.stall_timeout, c.request_timeout),
                (
                    Duration::from_secs(15),
                    Duration::from_secs(30),
                    Duration::from_secs(60)
                )
            );
            assert_eq!(c.max_token_lifetime, Duration::from_secs(30 * 86_400));
            assert!(c.webhook_allow_hosts.is_empty());
            assert_eq!(c.background_txn_target, Duration::from_millis(10));
            Ok(())
        });
    }

    #[test]
    fn the_webhook_allow_list_reads_from_a_file_or_the_environment() {
        Jail::expect_with(|jail| {
            jail.create_file(
                "c.toml",
                "webhook_allow_hosts = [\"hooks.internal\", \"10.1.0.0/16\"]\n",
            )?;
            let c = Config::load(Some(Path::new("c.toml")), &Overrides::default()).expect("loads");
            assert_eq!(c.webhook_allow_hosts, ["hooks.internal", "10.1.0.0/16"]);
            jail.set_env("COUPOND_WEBHOOK_ALLOW_HOSTS", "127.0.0.0/8, ::1");
            let c = Config::load(Some(Path::new("c.toml")), &Overrides::default()).expect("loads");
            assert_eq!(c.webhook_allow_hosts, ["127.0.0.0/8", "::1"]);
            Ok(())
        });
    }

    #[test]
    fn layers_apply_in_order() {
        Jail::expect_with(|jail| {
            jail.create_file(
                "c.toml",
                "listen = \"127.0.0.1:1000\"\nlog_level = \"warn\"\nfreeze_period = \"1m\"\n",
            )?;
            jail.set_env("COUPOND_LOG_LEVEL", "debug");
            jail.set_env("COUPOND_MAX_BODY_BYTES", "1024");
            // Unrelated COUPOND_* variables (the test suite's) are not settings.
            jail.set_env("COUPOND_TEST_POSTGRES_URL", "postgres://x");
            let flags = Overrides {
                listen: Some("127.0.0.1:2000".into()),
                ..Default::default()
            };
            let c = Config::load(Some(Path::new("c.toml")), &flags).expect("loads");
            assert_eq!(c.listen.to_string(), "127.0.0.1:2000"); // flag beats file
            assert_eq!(c.log_level, "debug"); // env beats file
            assert_eq!(c.max_body_bytes, 1024);
            assert_eq!(c.freeze_period, Duration::from_secs(60)); // file beats default
            Ok(())
        });
    }

    #[test]
    fn bad_values_are_errors_naming_the_setting() {
        Jail::expect_with(|jail| {
            jail.set_env("COUPOND_LISTEN", "not-an-address");
            let err = Config::load(None, &Overrides::default()).expect_err("rejected");
            assert!(err.to_string().to_lowercase().contains("listen"), "{err}");
            jail.set_env("COUPOND_LISTEN", "127.0.0.1:1");
            jail.set_env("COUPOND_STALL_TIMEOUT", "0s");
            let err = Config::load(None, &Overrides::default()).expect_err("zero refused");
            assert!(err.to_string().contains("stall_timeout"), "{err}");
            jail.set_env("COUPOND_STALL_TIMEOUT", "30s");
            jail.set_env("COUPOND_DATABASE_POOL_SIZE", "0");
            let err = Config::load(None, &Overrides::default()).expect_err("no pool refused");
            assert!(err.to_string().contains("database_pool_size"), "{err}");
            jail.set_env("COUPOND_DATABASE_POOL_SIZE", "48");
            let c = Config::load(None, &Overrides::default()).expect("a pool size loads");
            assert_eq!(c.database_pool_size, Some(48));
            jail.create_file("bad.toml", "no_such_setting = 1\n")?;
            let err = Config::load(Some(Path::new("bad.toml")), &Overrides::default())
                .expect_err("unknown key rejected");
            assert!(err.to_string().contains("no_such_setting"), "{err}");
            let err = Config::load(Some(Path::new("missing.toml")), &Overrides::default())
                .expect_err("missing file rejected");
            assert!(err.to_string().contains("missing.toml"), "{err}");
            Ok(())
        });
    }

    #[test]
    fn secrets_never_print() {
        Jail::expect_with(|jail| {
            jail.set_env("COUPOND_JWT_SECRET", "hunter2");
            jail.set_env("COUPOND_DATABASE_URL", "postgres://app:pw123@db/coupond");
            let c = Config::load(None, &Overrides::default()).expect("loads");
            let dbg = format!("{c:?}");
            assert!(!dbg.contains("hunter2") && !dbg.contains("pw123"), "{dbg}");
            let q = redact_url("postgres://app@db/coupond?sslmode=require&password=s3cret");
            assert_eq!(
                q,
                "postgres://app@db/coupond?sslmode=require&password=<redacted>"
            );
            assert_eq!(
                redact_url("sqlite://./data/coupond.db"),
                "sqlite://./data/coupond.db"
            );
            Ok(())
        });
    }
}
