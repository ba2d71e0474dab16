//! Rate limits (GCRA, in process), answered 429 with Retry-After.
//!
//! [`Limit`] is one keyed limit; [`RateLimits`] pairs a per-user and a per-IP limit, as claims
//! and code lookups use them. The per-user limit applies to the user a request is for,
//! whoever sends it. The per-IP limit applies to requests made with a user token only:
//! service keys (the order service, a gateway) speak for many users from few addresses.

use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;

use coupond_domain::UserId;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::error::ApiError;

/// A rate: `per_second` sustained, up to `burst` at once. `per_second = 0` disables it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub per_second: u32,
    pub burst: u32,
}

impl Rate {
    pub const OFF: Rate = Rate {
        per_second: 0,
        burst: 0,
    };

    fn quota(self) -> Option<Quota> {
        let per_second = NonZeroU32::new(self.per_second)?;
        let burst = NonZeroU32::new(self.burst.max(1)).unwrap_or(per_second);
        Some(Quota::per_second(per_second).allow_burst(burst))
    }
}

/// One rate limit, kept per key (a user, an address, a merchant).
#[derive(Debug)]
pub struct Limit<K: Hash + Eq + Clone> {
    limiter: Option<DefaultKeyedRateLimiter<K>>,
    /// Its name in `coupond_rate_limited_total{limit}`.
    name: &'static str,
}

impl<K: Hash + Eq + Clone> Limit<K> {
    pub fn new(name: &'static str, rate: Rate) -> Self {
        Limit {
            limiter: rate.quota().map(RateLimiter::keyed),
            name,
        }
    }

    /// Counts one request for `key`; 429 if it is over its rate.
    pub fn check(&self, key: &K) -> Result<(), ApiError> {
        match &self.limiter {
            Some(l) => l.check_key(key).map_err(|not_until| {
                metrics::counter!(coupond_engine::telemetry::RATE_LIMITED, "limit" => self.name)
                    .increment(1);
                too_many(not_until.wait_time_from(DefaultClock::default().now()))
            }),
            None => Ok(()),
        }
    }

    /// Forgets keys that are back to a full burst, so memory follows active callers only.
    pub fn shrink(&self) {
        if let Some(l) = &self.limiter {
            l.retain_recent();
        }
    }
}

/// A per-user and a per-IP limit, shared by all requests.
/// The metric names of a pair of limits: (per user, per IP).
pub type Names = (&'static str, &'static str);

#[derive(Debug)]
pub struct RateLimits {
    per_user: Limit<String>,
    per_ip: Limit<IpAddr>,
}

impl RateLimits {
    /// `name` prefixes the limits' metric names (`claim` gives `claim_per_user`, ...).
    pub fn new(name: Names, per_user: Rate, per_ip: Rate) -> Self {
        RateLimits {
            per_user: Limit::new(name.0, per_user),
            per_ip: Limit::new(name.1, per_ip),
        }
    }

    /// Counts one request for `user` (and for `ip`, when given); 429 if either is over its
    /// rate.
    pub fn check(&self, user: &UserId, ip: Option<IpAddr>) -> Result<(), ApiError> {
        if let Some(ip) = ip {
            self.per_ip.check(&ip)?;
        }
        self.per_user.check(&user.as_str().to_owned())
    }

    /// Forgets keys that are back to a full burst.
    pub fn shrink(&self) {
        self.per_user.shrink();
        self.per_ip.shrink();
    }
}

fn too_many(wait: std::time::Duration) -> ApiError {
    // Retry-After is in whole seconds; round up so a client that obeys it is admitted.
    ApiError::RateLimited {
        retry_after: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
    }
}
