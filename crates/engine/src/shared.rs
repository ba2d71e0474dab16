//! What several coupond instances share beyond the database: rate limits counted in one place
//! ([`SharedLimits`]) and notices that make every instance forget what went stale
//! ([`Peers`], [`Notice`]). `coupond-redis` implements both over Redis; without it, a process
//! is alone ([`Alone`]) and keeps both in its own memory.
//!
//! Neither decides anything the database decides: stock, per-user coupon limits and key
//! validity are checked in the store. A lost notice leaves a cache stale for at most
//! `cache_ttl`; a lost rate-limit count lets a caller through that the limit would have
//! refused, never refuses a claim the database would accept.

use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;
use coupond_domain::TemplateId;
use serde::{Deserialize, Serialize};

/// One thing an instance tells the others, so they drop what they cached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "notice", rename_all = "snake_case")]
pub enum Notice {
    /// An API key was revoked: forget every cached key (the cache is keyed by the secret's
    /// hash, which the revoker does not have).
    KeysChanged,
    /// A template changed (status, terms): forget its cached copy.
    TemplateChanged { template: TemplateId },
    /// A template's stock was raised to `stock`: forget its copy and that it was sold out.
    StockRaised { template: TemplateId, stock: i64 },
    /// A template sold out at `stock`: answer its claims `sold_out` from memory.
    SoldOut { template: TemplateId, stock: i64 },
    /// Notices may have been missed (the channel to the others was down): forget everything
    /// cached, the sold-out memory included.
    Resync,
}

/// How an instance tells the others. `tell` never waits: a notice is queued and sent in the
/// background, so a claim never waits on another instance.
pub trait Peers: Send + Sync + Debug {
    fn tell(&self, notice: Notice);
}

/// A process that is the only instance (no Redis): nobody to tell.
#[derive(Debug, Default, Clone, Copy)]
pub struct Alone;

impl Peers for Alone {
    fn tell(&self, _: Notice) {}
}

/// One rate limit to count a request against: `burst` at once, `per_second` sustained.
#[derive(Clone, Copy, Debug)]
pub struct LimitAsk<'a> {
    /// The limit's name (`claim_per_user`); part of the shared key.
    pub name: &'static str,
    /// Who is counted (a user id, an address).
    pub key: &'a str,
    pub per_second: u32,
    pub burst: u32,
}

/// Why a shared limit could not be counted (the shared store is down or slow).
#[derive(Debug, thiserror::Error)]
#[error("shared rate limit unavailable: {0}")]
pub struct LimitsUnavailable(pub String);

/// Rate limits counted in one place for every instance (GCRA, the same rule as in process).
#[async_trait]
pub trait SharedLimits: Send + Sync + Debug {
    /// Counts one request against every ask at once, all or none: `None` if admitted, or the
    /// index of an ask that is over its rate and how long until it would be admitted.
    async fn check(
        &self,
        asks: &[LimitAsk<'_>],
    ) -> Result<Option<(usize, Duration)>, LimitsUnavailable>;
}

/// What a front door does when the shared limits cannot be counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnLimitError {
    /// Count in this process instead (each instance then allows its own share): claims, by
    /// default, since a claim's stock and per-user limit are decided in the database anyway.
    #[default]
    Open,
    /// Refuse with 503 and Retry-After: code redemption, by default, since its limit is what
    /// bounds code guessing.
    Closed,
}
