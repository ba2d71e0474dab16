//! Rate limits (GCRA), answered 429 with Retry-After.
//!
//! [`Limit`] is one keyed limit, in process; [`RateLimits`] pairs a per-user and a per-IP
//! limit, as claims and code lookups use them. With Redis configured, a [`RateLimits`] counts
//! in Redis ([`SharedLimits`]) so several instances allow one instance's limit between them;
//! when Redis cannot be reached it falls back to its in-process limits or refuses with 503, as
//! its [`OnLimitError`] says. The per-user limit applies to the user a request is for,
//! whoever sends it. The per-IP limit applies to requests made with a user token only:
//! service keys (the order service, a gateway) speak for many users from few addresses.

use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;

use std::sync::Arc;

use coupond_domain::UserId;
use coupond_engine::shared::{LimitAsk, OnLimitError, SharedLimits};
use coupond_engine::telemetry;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::error::AppError;

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
    rate: Rate,
    /// Its name in `coupond_rate_limited_total{limit}`.
    name: &'static str,
}

impl<K: Hash + Eq + Clone> Limit<K> {
    pub fn new(name: &'static str, rate: Rate) -> Self {
        Limit {
            limiter: rate.quota().map(RateLimiter::keyed),
            rate,
            name,
        }
    }

    /// Counts one request for `key`; 429 if it is over its rate.
    pub fn check(&self, key: &K) -> Result<(), AppError> {
        match &self.limiter {
            Some(l) => l.check_key(key).map_err(|not_until| {
                refused(
                    self.name,
                    not_until.wait_time_from(DefaultClock::default().now()),
                )
            }),
            None => Ok(()),
        }
    }

    /// This limit as one ask of a shared check, if it is on.
    fn ask<'a>(&self, key: &'a str) -> Option<LimitAsk<'a>> {
        self.limiter.as_ref()?;
        Some(LimitAsk {
            name: self.name,
            key,
            per_second: self.rate.per_second,
            burst: self.rate.burst.max(1),
        })
    }

    /// Forgets keys that are back to a full burst, so memory follows active callers only.
    pub fn shrink(&self) {
        if let Some(l) = &self.limiter {
            l.retain_recent();
        }
    }
}

/// The metric names of a pair of limits: (per user, per IP).
pub type Names = (&'static str, &'static str);

/// Where a pair of limits is counted when several instances share them, and what to do when
/// it cannot be reached.
#[derive(Clone, Debug)]
pub struct Sharing {
    pub limits: Arc<dyn SharedLimits>,
    pub on_error: OnLimitError,
}

/// A per-user and a per-IP limit, shared by all requests.
#[derive(Debug)]
pub struct RateLimits {
    per_user: Limit<String>,
    per_ip: Limit<IpAddr>,
    shared: Option<Sharing>,
}

impl RateLimits {
    /// `name` gives the limits' metric names; `shared`, where they are counted with other
    /// instances (none: in this process only).
    pub fn new(name: Names, per_user: Rate, per_ip: Rate, shared: Option<Sharing>) -> Self {
        RateLimits {
            per_user: Limit::new(name.0, per_user),
            per_ip: Limit::new(name.1, per_ip),
            shared,
        }
    }

    /// Counts one request for `user` (and for `ip`, when given); 429 if either is over its
    /// rate.
    pub async fn check(&self, user: &UserId, ip: Option<IpAddr>) -> Result<(), AppError> {
        if let Some(shared) = &self.shared {
            let ip_text = ip.map(|ip| ip.to_string());
            let asks: Vec<LimitAsk<'_>> = [
                ip_text.as_deref().and_then(|ip| self.per_ip.ask(ip)),
                self.per_user.ask(user.as_str()),
            ]
            .into_iter()
            .flatten()
            .collect();
            if asks.is_empty() {
                return Ok(());
            }
            match shared.limits.check(&asks).await {
                Ok(None) => return Ok(()),
                Ok(Some((i, wait))) => return Err(refused(asks[i].name, wait)),
                Err(e) => {
                    warn_now_and_then(&e);
                    let outcome = match shared.on_error {
                        OnLimitError::Open => "local",
                        OnLimitError::Closed => "refused",
                    };
                    metrics::counter!(telemetry::RATE_LIMIT_FALLBACK, "outcome" => outcome)
                        .increment(1);
                    if shared.on_error == OnLimitError::Closed {
                        return Err(AppError::LimitsUnavailable);
                    }
                }
            }
        }
        self.check_here(user, ip)
    }

    /// Counts in this process only.
    fn check_here(&self, user: &UserId, ip: Option<IpAddr>) -> Result<(), AppError> {
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

/// Logs that Redis could not count a limit, at most every 10 s (every request says so while it
/// is down; the metric counts each).
fn warn_now_and_then(e: &coupond_engine::shared::LimitsUnavailable) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let last = LAST.load(Ordering::Relaxed);
    if now >= last + 10
        && LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        tracing::warn!(error = %e, "shared rate limits are not counted in Redis; see coupond_rate_limit_fallback_total");
    }
}

/// A refusal by the limit `name`, counted in `coupond_rate_limited_total`.
fn refused(name: &'static str, wait: std::time::Duration) -> AppError {
    metrics::counter!(telemetry::RATE_LIMITED, "limit" => name).increment(1);
    too_many(wait)
}

fn too_many(wait: std::time::Duration) -> AppError {
    // Retry-After is in whole seconds; round up so a client that obeys it is admitted.
    AppError::RateLimited {
        retry_after: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
    }
}
