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

# Code redemption limits, the same way. Failed attempts count too: they are how codes are
# guessed. Kept low on purpose; a person types a code now and then.
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
"#;

/// Setting names read from `COUPOND_<NAME>`.
const ENV_KEYS: [&str; 28] = [
    "listen",
    "database_url",
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
        fig.extract::<Config>().map_err(|e| {
            let msgs: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
            anyhow::anyhow!("invalid configuration: {}", msgs.join("; "))
        })
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("database_url", &redact_url(&self.database_url))
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
