//! Configuration, layered: built-in defaults, then the TOML file given with `--config` (or
//! `COUPOND_CONFIG`), then `COUPOND_*` environment variables, then command-line flags.
//! Loading only reads: it never writes a file and reports every problem as an error naming
//! the setting and where it came from.

use std::path::Path;
use std::time::Duration;

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};

mod brokers;
mod flat;
mod messages;
mod sections;

pub use brokers::{Nats, Redis};
pub use messages::{Email, Messages, Sms, SmsFormat, SmsProvider};

pub use sections::{
    Auth, Background, Catalog, Checkout, Claim, ClaimModeName, Console, Database, Idempotency,
    Limits, Log, LogFormat, Platform, Server, Users, Webhook,
};

/// The settings every subcommand shares, by concern. The one source of truth: `serve`
/// derives the API's, the engine's and the listener's settings from it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: Server,
    pub database: Database,
    pub log: Log,
    pub auth: Auth,
    pub catalog: Catalog,
    pub claim: Claim,
    pub limits: Limits,
    pub checkout: Checkout,
    pub idempotency: Idempotency,
    pub background: Background,
    pub webhook: Webhook,
    pub console: Console,
    pub redis: Redis,
    pub nats: Nats,
    pub messages: Messages,
    pub email: Email,
    pub sms: Sms,
    pub platform: Platform,
    pub users: Users,
}

/// A configuration error as the operator wrote it: the setting (`checkout.lock_ttl`) and
/// where its value came from, the environment variable (`COUPOND_LOCK_TTL`), the flag or the
/// file, without the source paths figment knows.
fn describe(e: &figment::Error) -> String {
    let key = e
        .path
        .iter()
        .map(|p| p.to_lowercase())
        .collect::<Vec<_>>()
        .join(".");
    let flat = flat::FLAT
        .iter()
        .find(|(_, section, name)| key == format!("{section}.{name}"))
        .map(|(flat, _, _)| *flat);
    let source = e
        .metadata
        .as_ref()
        .map(|m| m.name.to_string())
        .unwrap_or_default();
    let from = match flat {
        _ if key.is_empty() => String::new(),
        Some(flat) if source.contains("environment") => {
            format!(" (environment variable COUPOND_{})", flat.to_uppercase())
        }
        Some(flat) if source.contains("Overrides") => {
            let flag = match flat {
                "database_url" => "--database".to_owned(),
                other => format!("--{}", other.replace('_', "-")),
            };
            format!(" (flag {flag})")
        }
        _ if source.contains("TOML file") => {
            match e.metadata.as_ref().and_then(|m| m.source.as_ref()) {
                Some(figment::Source::File(path)) => format!(" (in {})", path.display()),
                _ => " (in the config file)".to_owned(),
            }
        }
        _ => String::new(),
    };
    // In words: "found string \"abc\", expected a whole number", not Rust's `u32`.
    let what = coupond_api::extract::in_words(&e.kind.to_string())
        .replace("expected a boolean", "expected true or false")
        .replace("found signed int", "found the number")
        .replace("found unsigned int", "found the number")
        .replace("found string", "found the text");
    match key.is_empty() {
        true => what,
        false => format!("{key}{from}: {what}"),
    }
}

/// The documented defaults, printed by `coupond config --defaults`. A test checks that this text parses
/// to exactly the defaults the code uses.
pub const DEFAULTS_TOML: &str = include_str!("config/defaults.toml");

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
    /// Loads the layers. `file` is the `--config` path, if any. Files may use sections or the
    /// flat names of earlier versions; the environment uses the flat names.
    pub fn load(file: Option<&Path>, flags: &Overrides) -> anyhow::Result<Config> {
        let config = Self::layers(file, flags)?
            .extract::<Config>()
            .map_err(|e| {
                let msgs: Vec<String> = e.into_iter().map(|e| describe(&e)).collect();
                anyhow::anyhow!("invalid configuration: {}", msgs.join("; "))
            })?;
        config.check()?;
        Ok(config)
    }

    /// The settings in effect (defaults, the file, the environment, the flags), as a config
    /// file in sections, with secrets redacted: what `coupond config` prints. Call after
    /// [`Config::load`] succeeded, so the values are known to be valid.
    pub fn effective_toml(file: Option<&Path>, flags: &Overrides) -> anyhow::Result<String> {
        let mut all: figment::value::Dict = Self::layers(file, flags)?.extract()?;
        for (section, key) in [
            ("auth", "jwt_secret"),
            ("console", "secret"),
            ("sms", "auth_token"),
            ("sms", "http_headers"),
        ] {
            if let Some(figment::value::Value::Dict(_, d)) = all.get_mut(section) {
                if d.contains_key(key) {
                    d.insert(key.into(), "(redacted)".into());
                }
            }
        }
        if let Some(figment::value::Value::Dict(_, d)) = all.get_mut("email") {
            if let Some(url) = d.get("smtp_url").and_then(|u| u.as_str()).map(redact_url) {
                d.insert("smtp_url".into(), url.into());
            }
        }
        for section in ["database", "redis", "nats"] {
            if let Some(figment::value::Value::Dict(_, d)) = all.get_mut(section) {
                if let Some(url) = d.get("url").and_then(|u| u.as_str()).map(redact_url) {
                    d.insert("url".into(), url.into());
                }
            }
        }
        Ok(toml::to_string(&all)?)
    }

    /// The layers, lowest first: the documented defaults, the file, `COUPOND_*`, the flags.
    fn layers(file: Option<&Path>, flags: &Overrides) -> anyhow::Result<Figment> {
        let mut fig = Figment::from(Toml::string(DEFAULTS_TOML));
        if let Some(path) = file {
            if !path.is_file() {
                anyhow::bail!(
                    "config file {} does not exist or is not a file",
                    path.display()
                );
            }
            fig = fig.merge(flat::Nested(Toml::file(path)));
        }
        let env_keys = flat::names();
        fig = fig
            .merge(flat::Nested(Env::prefixed("COUPOND_").only(&env_keys)))
            .merge(flat::Nested(Serialized::defaults(flags)));
        Ok(fig)
    }

    /// `COUPOND_*` variables set in this process that name no setting (a misspelling such as
    /// `COUPOND_DATABASE`, which would otherwise be ignored without a word). Variables the
    /// binary and its tests read besides settings are not reported.
    pub fn unknown_variables() -> Vec<String> {
        const NOT_SETTINGS: [&str; 5] = [
            "CONFIG",
            "FAILPOINTS",
            "SCREENSHOTS",
            "CHROMIUM",
            "CHROMEDRIVER",
        ];
        let known = flat::names();
        let mut unknown: Vec<String> = std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .filter(|k| {
                let Some(name) = k.strip_prefix("COUPOND_") else {
                    return false;
                };
                let lower = name.to_ascii_lowercase();
                !known.contains(&lower.as_str())
                    && !NOT_SETTINGS.contains(&name)
                    && !name.starts_with("TEST_")
                    && !name.starts_with("CRASH_")
            })
            .collect();
        unknown.sort();
        unknown
    }

    /// Rules between values that serde cannot express.
    fn check(&self) -> anyhow::Result<()> {
        let s = &self.server;
        let port = s
            .listen
            .rsplit_once(':')
            .map(|(host, port)| (host, port.parse::<u16>()));
        anyhow::ensure!(
            matches!(port, Some((host, Ok(_))) if !host.is_empty()),
            "invalid configuration: server.listen (listen) must be host:port, e.g. \
             127.0.0.1:8080, localhost:8080 or [::1]:8080; got {:?}",
            s.listen
        );
        for (name, value) in [
            ("header_timeout", s.header_timeout),
            ("stall_timeout", s.stall_timeout),
            ("request_timeout", s.request_timeout),
        ] {
            anyhow::ensure!(
                value >= Duration::from_secs(1),
                "invalid configuration: server.{name} ({name}) must be at least 1s"
            );
        }
        anyhow::ensure!(
            self.database
                .pool_size
                .is_none_or(|n| (1..=1000).contains(&n)),
            "invalid configuration: database.pool_size (database_pool_size) must be from 1 to 1000"
        );
        // Checked here too (as `serve` checks them), so `coupond config` refuses what `serve`
        // would.
        use secrecy::ExposeSecret;
        let short = |s: &Option<secrecy::SecretString>, min: usize| {
            s.as_ref().is_some_and(|s| s.expose_secret().len() < min)
        };
        anyhow::ensure!(
            !short(&self.auth.jwt_secret, 16),
            "invalid configuration: auth.jwt_secret (jwt_secret) must be at least 16 characters"
        );
        anyhow::ensure!(
            !short(&self.console.secret, 32),
            "invalid configuration: console.secret (console_secret) must be at least 32 characters"
        );
        anyhow::ensure!(
            (1..=5).contains(&self.nats.replicas),
            "invalid configuration: nats.replicas (nats_replicas) must be from 1 to 5"
        );
        anyhow::ensure!(
            (Duration::from_millis(100)..=Duration::from_secs(4)).contains(&self.nats.ack_timeout),
            "invalid configuration: nats.ack_timeout (nats_ack_timeout) must be from 100ms to 4s \
             (a pass waiting longer could outlast the publisher's 10 s lease)"
        );
        anyhow::ensure!(
            self.redis.timeout >= Duration::from_millis(1),
            "invalid configuration: redis.timeout (redis_timeout) must be at least 1ms"
        );
        if let Err(why) = messages::check(&self.messages, &self.email, &self.sms) {
            anyhow::bail!("invalid configuration: {why}");
        }
        if let Err(why) = self.background.audit_schedule() {
            anyhow::bail!("invalid configuration: background.audit_at (audit_at): {why}");
        }
        anyhow::ensure!(
            self.checkout.max_lock_ttl >= self.checkout.lock_ttl,
            "invalid configuration: checkout.max_lock_ttl (max_lock_ttl) must be at least \
             checkout.lock_ttl (lock_ttl)"
        );
        let u = &self.users;
        anyhow::ensure!(
            (Duration::from_secs(1)..=Duration::from_secs(86_400)).contains(&u.seen_resolution),
            "invalid configuration: users.seen_resolution (users_seen_resolution) must be from \
             1s to 1day"
        );
        anyhow::ensure!(
            (1_000..=10_000_000).contains(&u.seen_capacity),
            "invalid configuration: users.seen_capacity (users_seen_capacity) must be from 1000 \
             to 10000000"
        );
        anyhow::ensure!(
            s.max_connections > 0,
            "invalid configuration: server.max_connections (max_connections) must be at least 1"
        );
        Ok(())
    }
}

/// The URL with any password replaced, for logs: the `user:password@` part, the query
/// parameters that carry secrets (`password`, `sslpassword`), and a NATS URL's token
/// (`nats://TOKEN@host`, userinfo without a colon).
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
                None if base.starts_with("nats") || base.starts_with("tls") => {
                    format!("{}<redacted>{}", &base[..scheme_end + 3], &base[at..])
                }
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
