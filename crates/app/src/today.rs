//! Today's figures for a caller (the console's home page, an operator's glance): what
//! happened since an instant (coupons claimed and used, webhook deliveries failing), how the
//! caller's templates and activities stand now, the templates that need attention, and (the
//! platform only) how far each outbox consumer is behind. Every figure is counted by the
//! database over all of the caller's templates and activities.

use coupond_domain::{ActivityStatus, Template, Timestamp, Zone};
use coupond_engine::dispatch::sinks;
use coupond_store::{ActivityQuery, Page, Since, Standing};

use crate::caller::{Access, Principal, CAMPAIGN_READ};
use crate::context::App;
use crate::error::AppResult;

/// Outbox events counted per consumer, at most (more reads as `behind_more`).
pub const MAX_BEHIND: u32 = 1_000;
/// Templates listed as needing attention, at most (more reads as `more`).
pub const MAX_ATTENTION: u32 = 50;
/// A claimable template usable only until within this many days needs attention.
pub const EXPIRING_WITHIN_DAYS: i64 = 7;

/// Who may read today's figures.
pub const READ: Access = CAMPAIGN_READ;

/// How far one outbox consumer is behind.
#[derive(Debug)]
pub struct Lag {
    pub consumer: &'static str,
    /// Events written that it has not handled yet, up to [`MAX_BEHIND`].
    pub behind: u32,
    /// More than `behind` events are waiting.
    pub behind_more: bool,
}

/// The caller's figures (a merchant's: of its templates, endpoints and cities).
#[derive(Debug)]
pub struct Today {
    /// The instant the figures stand at.
    pub now: Timestamp,
    /// The instant counted from.
    pub from: Timestamp,
    /// Since `from`: coupons and webhook deliveries.
    pub since: Since,
    /// The caller's templates now.
    pub standing: Standing,
    /// Activities running and enrolling, of those the caller sees.
    pub running: i64,
    pub enrolling: i64,
    /// Claimable templates low on stock or usable for less than
    /// [`EXPIRING_WITHIN_DAYS`] more days, soonest expiry first, up to [`MAX_ATTENTION`].
    pub attention: Vec<Template>,
    /// More templates need attention than are listed.
    pub more: bool,
    /// The outbox consumers' lag: the platform's only.
    pub outbox: Option<Vec<Lag>>,
}

impl App {
    /// `p`'s figures since `from` (by default the start of today, local midnight in the
    /// platform's time zone), and as things stand now.
    pub async fn today(&self, p: &Principal, from: Option<Timestamp>) -> AppResult<Today> {
        let now = self.now();
        let since = from.unwrap_or_else(|| start_of_day(self.zone(), now));
        let counts = self.store().since(p.merchant(), since).await?;
        let outbox = match p {
            Principal::Platform => Some(self.outbox_lags().await?),
            _ => None,
        };
        let standing = self.store().standing(p.merchant(), now).await?;
        let (running, enrolling) = self.activities_now(p, now).await?;
        let soon = now.plus(time::Duration::days(EXPIRING_WITHIN_DAYS));
        let mut attention = self
            .store()
            .needing_attention(p.merchant(), now, soon, MAX_ATTENTION + 1)
            .await?;
        let more = attention.len() > MAX_ATTENTION as usize;
        attention.truncate(MAX_ATTENTION as usize);
        Ok(Today {
            now,
            from: since,
            since: counts,
            standing,
            running,
            enrolling,
            attention,
            more,
            outbox,
        })
    }

    /// Each outbox consumer's unread events, read from its stored position (at most
    /// [`MAX_BEHIND`] + 1); NATS among them when the outbox is published there.
    pub async fn outbox_lags(&self) -> AppResult<Vec<Lag>> {
        let nats = self.settings().publishes_to_nats.then_some(sinks::NATS);
        let mut out = Vec::with_capacity(sinks::ALL.len() + 1);
        for consumer in sinks::ALL.into_iter().chain(nats) {
            let at = self.store().sink_position(consumer).await?;
            let n = self.store().outbox_read(at, MAX_BEHIND + 1).await?.len();
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            out.push(Lag {
                consumer,
                behind: n.min(MAX_BEHIND),
                behind_more: n > MAX_BEHIND,
            });
        }
        Ok(out)
    }

    /// Activities running and enrolling now, of those `p` sees.
    async fn activities_now(&self, p: &Principal, now: Timestamp) -> AppResult<(i64, i64)> {
        let any_city = match p.merchant() {
            Some(m) => Some(self.store().merchant(m).await?.cities),
            None => None,
        };
        let count = |status| {
            let q = ActivityQuery {
                narrow: Default::default(),
                status: Some(status),
                city: None,
                any_city: any_city.clone(),
                now,
                freeze: self.settings().freeze,
                page: Page {
                    after: None,
                    limit: 1,
                },
            };
            async move { self.store().count_activities(&q).await }
        };
        Ok((
            count(ActivityStatus::Running).await?,
            count(ActivityStatus::Enrolling).await?,
        ))
    }
}

/// The first instant of `now`'s local day in `zone`.
fn start_of_day(zone: Zone, now: Timestamp) -> Timestamp {
    zone.day_start(zone.day_of(now)).unwrap_or(now)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_day_starts_at_midnight_utc() {
        let t = Timestamp::parse("2026-11-24T15:42:07.123Z").unwrap();
        assert_eq!(
            start_of_day(Zone::UTC, t),
            Timestamp::parse("2026-11-24T00:00:00Z").unwrap()
        );
        let midnight = Timestamp::parse("2026-11-24T00:00:00Z").unwrap();
        assert_eq!(start_of_day(Zone::UTC, midnight), midnight);
    }

    #[test]
    fn the_day_starts_at_local_midnight_of_the_zone() {
        let z = Zone::parse("Asia/Shanghai").unwrap();
        // 01:00 on the 10th in Shanghai: today began at 16:00 UTC on the 9th.
        let t = Timestamp::parse("2027-01-09T17:00:00Z").unwrap();
        assert_eq!(
            start_of_day(z, t),
            Timestamp::parse("2027-01-09T16:00:00Z").unwrap()
        );
    }
}
