//! The outbox as a replayable feed (the application's [`coupond_app::events`]).

use axum::extract::State;
use axum::{Extension, Json};
use coupond_app::events::{EventPage, EventsRequest};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::routes::CommonErrors;
use crate::state::AppState;

/// Where to read from and what.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// `next_cursor` of the previous answer; absent: from the first event.
    pub after: Option<String>,
    /// Only events of these types, comma-separated (`coupon.used,coupon.refunded`).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub kinds: Option<String>,
    /// Events to read, 1..=`max_page` (default `default_page`).
    pub limit: Option<u32>,
    /// `asc` (the default): the feed in commit order, for consumers. `desc`: newest first,
    /// for people looking at what just happened; `after` is then the `next_cursor` of the
    /// previous `desc` page and goes on to older events.
    pub order: Option<String>,
}

/// Read the event feed.
///
/// The outbox as a feed, in commit order (platform: every event; a merchant: events of its own
/// templates), after `after`: up to `limit` events that pass the filters, and the cursor to go on
/// from. One request looks at no more than 10 × `limit` events, so a page may be short (even
/// empty) while more lie ahead: go on from `next_cursor` until it stops moving. Events are kept as
/// long as the outbox keeps them.
#[utoipa::path(operation_id = "list_events", get, path = "/v1/events", tag = "events",
    params(EventsQuery),
    responses((status = 200, description = "A stretch of the feed", body = EventPage), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<EventsQuery>,
) -> ApiResult<Json<EventPage>> {
    let req = EventsRequest {
        after: q.after,
        kinds: q.kinds,
        limit: q.limit,
        order: q.order,
    };
    Ok(Json(s.events(&p, req).await?))
}
