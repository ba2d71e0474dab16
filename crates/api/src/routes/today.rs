//! `GET /v1/reports/today`: what happened since the start of the day (local midnight in the
//! platform's time zone, `platform.time_zone`) or a chosen instant, for the console's home page and an operator's glance: coupons claimed and used,
//! webhook deliveries failing, and (the platform) how far each outbox consumer is behind; and
//! how things stand now: templates claimable and low on stock, activities running and
//! enrolling, and the templates that need attention. Every figure is counted by the database
//! over all of the caller's templates and activities, however many there are.

use axum::extract::State;
use axum::{Extension, Json};
use coupond_domain::{ActivityStatus, Timestamp, Zone};
use coupond_engine::dispatch::sinks;
use coupond_store::{ActivityQuery, Page};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::routes::CommonErrors;
use crate::state::AppState;
use crate::views::TemplateView;

/// The furthest back `since` may go: the counts read the coupon log from there on.
const MAX_DAYS: i64 = 31;
/// Outbox events counted per consumer, at most (more reads as `behind_more: true`).
const MAX_BEHIND: u32 = 1_000;
/// Templates listed as needing attention, at most (more reads as `more: true`).
const MAX_ATTENTION: u32 = 50;
/// A claimable template usable only until within this many days needs attention.
const EXPIRING_WITHIN_DAYS: i64 = 7;

/// The instant to count from.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TodayQuery {
    /// RFC 3339, within the last 31 days (default: the start of today in the platform's time
    /// zone).
    #[param(value_type = Option<String>, format = DateTime)]
    pub since: Option<Timestamp>,
}

/// How far one outbox consumer is behind.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ConsumerLag {
    pub consumer: String,
    /// Events written that it has not handled yet (counted up to 1,000).
    pub behind: u32,
    /// More than `behind` events are waiting.
    pub behind_more: bool,
}

/// The caller's templates now, counted over all of them.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TemplatesNow {
    /// Templates claimable now.
    pub claimable: i64,
    /// Claimable templates with less than 5 % of their stock left.
    pub low_stock: i64,
    /// Coupons ever claimed, of every template.
    pub claimed: i64,
    /// Coupons ever used, of every template.
    pub used: i64,
}

/// The activities the caller sees (a merchant: those covering one of its cities), now.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ActivitiesNow {
    pub running: i64,
    pub enrolling: i64,
}

/// Claimable templates low on stock or usable for less than 7 more days, soonest expiry
/// first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Attention {
    /// Up to 50.
    pub items: Vec<TemplateView>,
    /// More templates need attention than are listed.
    pub more: bool,
}

/// Since `since`: coupons and webhook deliveries (a merchant: of its templates and
/// endpoints), and the outbox consumers' lag (the platform only).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TodayView {
    pub since: Timestamp,
    /// The platform's time zone (IANA), whose local midnight "today" starts at.
    #[serde(default = "utc_name")]
    pub time_zone: String,
    /// `since` as a local date of that zone (`YYYY-MM-DD`).
    #[serde(default)]
    pub date: String,
    /// Coupons created (claimed, redeemed or issued).
    pub claimed: i64,
    /// Coupons used by confirmed orders.
    pub used: i64,
    /// Webhook deliveries created since that failed for good.
    pub deliveries_failed: i64,
    /// Webhook deliveries created since still being retried.
    pub deliveries_retrying: i64,
    /// How the caller's templates stand now.
    pub templates: TemplatesNow,
    /// How the caller's activities stand now.
    pub activities: ActivitiesNow,
    /// The templates that need attention now.
    pub attention: Attention,
    /// The platform's view of the outbox consumers; absent for merchants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbox: Option<Vec<ConsumerLag>>,
}

/// Today's figures.
///
/// Today's figures since local midnight in the platform's time zone: coupons claimed and used, webhook deliveries failing, how
/// templates and activities stand and which templates need attention (platform; merchants see
/// their own).
#[utoipa::path(operation_id = "today", get, path = "/v1/reports/today", tag = "reports", params(TodayQuery),
    responses((status = 200, description = "The figures", body = TodayView), CommonErrors),
    security(("bearer" = [])))]
pub async fn today(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<TodayQuery>,
) -> ApiResult<Json<TodayView>> {
    let now = s.now();
    let since = match q.since {
        Some(t) if t > now || t < now.minus(time::Duration::days(MAX_DAYS)) => {
            return Err(ApiError::bad_request(
                "invalid_query",
                Some("since"),
                format!("since must be within the last {MAX_DAYS} days"),
            ))
        }
        Some(t) => t,
        None => start_of_day(s.zone(), now),
    };
    let counts = s.store().since(p.merchant(), since).await?;
    let outbox = match p {
        Principal::Platform => Some(lags(&s).await?),
        _ => None,
    };
    let standing = s.store().standing(p.merchant(), now).await?;
    Ok(Json(TodayView {
        since,
        time_zone: s.zone().name().to_owned(),
        date: s.zone().date_text(since),
        claimed: counts.claimed,
        used: counts.used,
        deliveries_failed: counts.deliveries_failed,
        deliveries_retrying: counts.deliveries_retrying,
        templates: TemplatesNow {
            claimable: standing.claimable,
            low_stock: standing.low_stock,
            claimed: standing.claimed,
            used: standing.used,
        },
        activities: activities_now(&s, &p, now).await?,
        attention: attention(&s, &p, now).await?,
        outbox,
    }))
}

/// Activities running and enrolling, of those the caller sees.
async fn activities_now(s: &AppState, p: &Principal, now: Timestamp) -> ApiResult<ActivitiesNow> {
    let any_city = match p.merchant() {
        Some(m) => Some(s.store().merchant(m).await?.cities),
        None => None,
    };
    let count = |status| {
        let q = ActivityQuery {
            narrow: Default::default(),
            status: Some(status),
            city: None,
            any_city: any_city.clone(),
            now,
            freeze: s.settings().freeze,
            page: Page {
                after: None,
                limit: 1,
            },
        };
        async move { s.store().count_activities(&q).await }
    };
    Ok(ActivitiesNow {
        running: count(ActivityStatus::Running).await?,
        enrolling: count(ActivityStatus::Enrolling).await?,
    })
}

/// Up to [`MAX_ATTENTION`] templates needing attention, and whether there are more.
async fn attention(s: &AppState, p: &Principal, now: Timestamp) -> ApiResult<Attention> {
    let soon = now.plus(time::Duration::days(EXPIRING_WITHIN_DAYS));
    let mut found = s
        .store()
        .needing_attention(p.merchant(), now, soon, MAX_ATTENTION + 1)
        .await?;
    let more = found.len() > MAX_ATTENTION as usize;
    found.truncate(MAX_ATTENTION as usize);
    Ok(Attention {
        items: found
            .into_iter()
            .map(|t| TemplateView::new(t, now))
            .collect(),
        more,
    })
}

/// Each consumer's unread events, read from its stored position (at most `MAX_BEHIND` + 1).
pub(crate) async fn lags(s: &AppState) -> ApiResult<Vec<ConsumerLag>> {
    let nats = s.settings().publishes_to_nats.then_some(sinks::NATS);
    let mut out = Vec::with_capacity(sinks::ALL.len() + 1);
    for consumer in sinks::ALL.into_iter().chain(nats) {
        let at = s.store().sink_position(consumer).await?;
        let n = s.store().outbox_read(at, MAX_BEHIND + 1).await?.len();
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        out.push(ConsumerLag {
            consumer: consumer.to_owned(),
            behind: n.min(MAX_BEHIND),
            behind_more: n > MAX_BEHIND,
        });
    }
    Ok(out)
}

/// The first instant of `now`'s local day in `zone`.
fn start_of_day(zone: Zone, now: Timestamp) -> Timestamp {
    zone.day_start(zone.day_of(now)).unwrap_or(now)
}

fn utc_name() -> String {
    Zone::UTC.name().to_owned()
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
