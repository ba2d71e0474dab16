//! Per-user and per-IP rate limits on claims (GCRA, in process), answered 429 with
//! Retry-After.
//!
//! The per-user limit applies to the user a claim is for, whoever sends it. The per-IP limit
//! applies to requests made with a user token only: service keys (the order service, a
//! gateway) speak for many users from few addresses.

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

/// The limiters, shared by all requests.
#[derive(Debug)]
pub struct RateLimits {
    per_user: Option<DefaultKeyedRateLimiter<String>>,
    per_ip: Option<DefaultKeyedRateLimiter<IpAddr>>,
}

impl RateLimits {
    pub fn new(per_user: Rate, per_ip: Rate) -> Self {
        RateLimits {
            per_user: per_user.quota().map(RateLimiter::keyed),
            per_ip: per_ip.quota().map(RateLimiter::keyed),
        }
    }

    /// Counts one claim for `user` (and for `ip`, when given); 429 if either is over its rate.
    pub fn check(&self, user: &UserId, ip: Option<IpAddr>) -> Result<(), ApiError> {
        if let (Some(limiter), Some(ip)) = (&self.per_ip, ip) {
            limiter.check_key(&ip).map_err(|not_until| {
                too_many(not_until.wait_time_from(DefaultClock::default().now()))
            })?;
        }
        if let Some(limiter) = &self.per_user {
            limiter
                .check_key(&user.as_str().to_owned())
                .map_err(|not_until| {
                    too_many(not_until.wait_time_from(DefaultClock::default().now()))
                })?;
        }
        Ok(())
    }

    /// Forgets keys that are back to a full burst, so memory follows active users only.
    pub fn shrink(&self) {
        if let Some(l) = &self.per_user {
            l.retain_recent();
        }
        if let Some(l) = &self.per_ip {
            l.retain_recent();
        }
    }
}

fn too_many(wait: std::time::Duration) -> ApiError {
    // Retry-After is in whole seconds; round up so a client that obeys it is admitted.
    ApiError::RateLimited {
        retry_after: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
    }
}
