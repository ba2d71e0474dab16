//! The sections for what several instances share outside the database: Redis (rate limits,
//! cache notices) and NATS JetStream (events for downstream systems). Both optional.

use std::fmt;
use std::time::Duration;

use coupond_engine::shared::OnLimitError;
use serde::Deserialize;

use super::redact_url;

/// Redis: without `url`, limits and caches are per process.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redis {
    /// `redis://[user:password@]host:6379[/db]`; unset: no Redis.
    #[serde(default)]
    pub url: Option<String>,
    /// Prefix of coupond's keys and channel in Redis.
    pub key_prefix: String,
    /// The longest one Redis command may take (connecting included); past it, it has failed.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Claims when Redis fails: `open` (count in process) or `closed` (503).
    pub claim_limits_on_error: OnLimitError,
    /// Code redemptions when Redis fails: `open` or `closed` (503).
    pub redeem_limits_on_error: OnLimitError,
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis")
            .field("url", &self.url.as_deref().map(redact_url))
            .field("key_prefix", &self.key_prefix)
            .field("timeout", &self.timeout)
            .field("claim_limits_on_error", &self.claim_limits_on_error)
            .field("redeem_limits_on_error", &self.redeem_limits_on_error)
            .finish()
    }
}

/// NATS JetStream: without `url`, no events are published.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nats {
    /// `nats://[user:password@]host:4222`; unset: no publishing.
    #[serde(default)]
    pub url: Option<String>,
    /// The stream events go to; created if missing.
    pub stream: String,
    /// Events are published on `<subject_prefix>.<event type>`.
    pub subject_prefix: String,
    /// Copies JetStream keeps of the stream (a cluster's size at most), when creating it.
    pub replicas: u32,
    /// How long the stream keeps events, when creating it (0: until limits).
    #[serde(with = "humantime_serde")]
    pub max_age: Duration,
    /// The longest a publish may wait for its acknowledgement.
    #[serde(with = "humantime_serde")]
    pub ack_timeout: Duration,
}

impl fmt::Debug for Nats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nats")
            .field("url", &self.url.as_deref().map(redact_url))
            .field("stream", &self.stream)
            .field("subject_prefix", &self.subject_prefix)
            .field("replicas", &self.replicas)
            .field("max_age", &self.max_age)
            .field("ack_timeout", &self.ack_timeout)
            .finish()
    }
}
