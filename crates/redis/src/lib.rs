//! coupond over Redis: what several instances share beyond the database.
//!
//! - [`limits`]: [`Redis`] as [`SharedLimits`](coupond_engine::shared::SharedLimits): the
//!   claim and redemption limits counted once for every instance, GCRA in one Lua script
//!   (one round trip, Redis's own clock).
//! - [`notices`]: [`Notifier`] (the [`Peers`](coupond_engine::shared::Peers) a process tells),
//!   [`Publisher`] (sends its notices on a pub/sub channel) and [`Subscriber`] (hears the
//!   others' and hands them to the process).
//! - [`seal`]: [`NoticeKey`], which signs notices so that only the deployment's instances
//!   can speak on the channel.
//!
//! Redis never decides stock, per-user coupon limits or key validity: the database does. What
//! happens when Redis is down is each limit's `on_error` setting; notices missed while the
//! subscription was down are made up for by forgetting every cached entry on reconnect.
#![forbid(unsafe_code)]

pub mod limits;
pub mod notices;
pub mod seal;

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

pub use notices::{Notifier, Publisher, Subscriber};
pub use seal::NoticeKey;

/// How to reach Redis and name what coupond keeps there.
#[derive(Clone, Debug)]
pub struct RedisSettings {
    /// `redis://[user:password@]host:port[/db]` (or `rediss://`).
    pub url: String,
    /// Prefix of every key and channel (`coupond` gives `coupond:rl:...` and
    /// `coupond:notices`), so several deployments can share one Redis.
    pub key_prefix: String,
    /// The longest a command may take, connecting included; past it the command counts as
    /// failed (a claim's limit falls back as `on_error` says).
    pub timeout: Duration,
    /// Signs this deployment's notices ([`NoticeKey::derive`] from the user-token secret).
    pub notice_key: NoticeKey,
}

/// A handle on Redis, cheap to clone (one multiplexed connection, re-made when lost).
#[derive(Clone)]
pub struct Redis {
    client: redis::Client,
    conn: ConnectionManager,
    prefix: String,
    timeout: Duration,
    notice_key: NoticeKey,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the URL: it may carry a password.
        f.debug_struct("Redis")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Why Redis could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    /// The URL is not one Redis accepts.
    #[error("redis.url: {0}")]
    Url(String),
    /// A command failed or timed out.
    #[error("redis: {0}")]
    Command(String),
}

impl Redis {
    /// A handle for `settings`; connects on first use, so a Redis that is down at start
    /// delays nothing (its limits fall back as configured until it is up).
    pub fn new(settings: &RedisSettings) -> Result<Self, RedisError> {
        let client = redis::Client::open(settings.url.as_str())
            .map_err(|e| RedisError::Url(e.to_string()))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(settings.timeout))
            .set_response_timeout(Some(settings.timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|e| RedisError::Url(e.to_string()))?;
        Ok(Redis {
            client,
            conn,
            prefix: settings.key_prefix.clone(),
            timeout: settings.timeout,
            notice_key: settings.notice_key.clone(),
        })
    }

    /// The channel notices travel on.
    fn channel(&self) -> String {
        format!("{}:notices", self.prefix)
    }

    /// Runs `command` within the timeout, counting a failure under `coupond_redis_errors_total`.
    async fn bounded<T>(
        &self,
        command: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, RedisError> {
        match tokio::time::timeout(self.timeout, command).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(RedisError::Command(e.to_string())),
            Err(_) => Err(RedisError::Command(format!(
                "no answer within {:?}",
                self.timeout
            ))),
        }
    }
}

/// Counts one failed Redis command of `op`.
fn count_error(op: &'static str) {
    metrics::counter!(coupond_engine::telemetry::REDIS_ERRORS, "op" => op).increment(1);
}
