//! `GET /v1/reports/today`: what happened since the start of the day (local midnight in the
//! platform's time zone, `platform.time_zone`) or a chosen instant, for the console's home page and an operator's glance: coupons claimed and used,
//! webhook deliveries failing, and (the platform) how far each outbox consumer is behind; and
//! how things stand now: templates claimable and low on stock, activities running and
//! enrolling, and the templates that need attention. Every figure is counted by the database
//! over all of the caller's templates and activities, however many there are.

use axum::extract::State;
use axum::{Extension, Json};
use coupond_app::today::{Lag, Today};
use coupond_domain::{Timestamp, Zone};
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
    if q.since
        .is_some_and(|t| t > now || t < now.minus(time::Duration::days(MAX_DAYS)))
    {
        return Err(ApiError::bad_request(
            "invalid_query",
            Some("since"),
            format!("since must be within the last {MAX_DAYS} days"),
        ));
    }
    let since = q.since;
    Ok(Json(TodayView::of(s.today(&p, since).await?, s.zone())))
}

impl TodayView {
    /// The view of a caller's figures, dates in the platform's time zone `zone`.
    pub fn of(today: Today, zone: Zone) -> Self {
        let (counts, standing) = (today.since, today.standing);
        TodayView {
            since: today.from,
            time_zone: zone.name().to_owned(),
            date: zone.date_text(today.from),
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
            activities: ActivitiesNow {
                running: today.running,
                enrolling: today.enrolling,
            },
            attention: Attention {
                items: today
                    .attention
                    .into_iter()
                    .map(|t| TemplateView::new(t, today.now))
                    .collect(),
                more: today.more,
            },
            outbox: today
                .outbox
                .map(|lags| lags.into_iter().map(ConsumerLag::of).collect()),
        }
    }
}

impl ConsumerLag {
    /// The view of one consumer's lag.
    pub(crate) fn of(lag: Lag) -> Self {
        ConsumerLag {
            consumer: lag.consumer.to_owned(),
            behind: lag.behind,
            behind_more: lag.behind_more,
        }
    }
}

fn utc_name() -> String {
    Zone::UTC.name().to_owned()
}
