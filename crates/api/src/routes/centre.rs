//! The coupon centre: the templates a user may claim now (its own list, or the order service's
//! and the platform's on its behalf), and the public views of one template and one running
//! activity. The rules are the engine's [`centre`]; the answers are the users' own view types.

use axum::extract::State;
use axum::{Extension, Json};
use coupond_app::pages::PageRequest;
use coupond_domain::{ActivityId, CityId, CouponKind, ListingId, TemplateId, UserId};
use coupond_engine::centre::Filter;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiPath, ApiQuery};
use crate::pagination::PageOf;
use crate::routes::CommonErrors;
use crate::state::AppState;
use crate::views::{OfferView, PublicActivityView};

/// Coupon centre filters; each one left out takes every template.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CentreQuery {
    /// Usable in this city.
    #[param(value_type = Option<i64>)]
    pub city_id: Option<CityId>,
    /// Bound to this listing.
    #[param(value_type = Option<i64>)]
    pub listing_id: Option<ListingId>,
    /// In this activity.
    #[param(value_type = Option<i64>)]
    pub activity_id: Option<ActivityId>,
    /// Of this kind.
    pub kind: Option<CouponKind>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// What you may claim now.
///
/// The coupon centre: the templates the signed-in user may claim now (published, in their
/// claim window, and offered to this user: a user-list or tag audience shows only to the users
/// it names or tags), by template id, filtered by city, listing, activity and kind. Each says
/// what a coupon page shows (terms, validity, the claim window's end, the activity's title)
/// and where the user stands: how many it holds of the per-user limit, the stock left,
/// `sold_out`, and `can_claim` (stock left and under the limit). Nothing of the owner's
/// business is in it (no budget, stats, audience or other users).
#[utoipa::path(operation_id = "my_claimable", get, path = "/v1/me/claimable", tag = "centre",
    params(CentreQuery),
    responses((status = 200, description = "A page of templates on offer", body = PageOf<OfferView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn mine(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<CentreQuery>,
) -> ApiResult<Json<PageOf<OfferView>>> {
    list(&s, p.me()?, q).await.map(Json)
}

/// What a user may claim now.
///
/// The coupon centre of a user, as `GET /v1/me/claimable` answers it to the user: for the
/// order service's own pages, and the platform's support.
#[utoipa::path(operation_id = "user_claimable", get, path = "/v1/users/{id}/claimable", tag = "centre",
    params(("id" = String, Path, description = "User id"), CentreQuery),
    responses((status = 200, description = "A page of templates on offer to the user", body = PageOf<OfferView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn of_user(
    State(s): State<AppState>,
    ApiPath(user): ApiPath<UserId>,
    ApiQuery(q): ApiQuery<CentreQuery>,
) -> ApiResult<Json<PageOf<OfferView>>> {
    list(&s, &user, q).await.map(Json)
}

async fn list(s: &AppState, user: &UserId, q: CentreQuery) -> ApiResult<PageOf<OfferView>> {
    let filter = Filter {
        city: q.city_id,
        listing: q.listing_id,
        activity: q.activity_id,
        kind: q.kind,
    };
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(s.claimable(user, filter, page).await?)
}

/// Read a template on offer.
///
/// A template as the signed-in user sees it, with the same fields as the coupon centre's list:
/// while it is on offer to the user, or whatever its status (`ended`, `paused`, ...) once the
/// user holds one of its coupons. Anything else is 404, as if absent: a draft, a template
/// waiting for or refused the platform's approval, one not yet claimable (scheduled, or in an
/// activity still enrolling), and one whose audience leaves the user out.
#[utoipa::path(operation_id = "my_template", get, path = "/v1/me/templates/{id}", tag = "centre",
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The template as the user sees it", body = OfferView), CommonErrors),
    security(("bearer" = [])))]
pub async fn template(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
) -> ApiResult<Json<OfferView>> {
    Ok(Json(s.offer(p.me()?, id).await?))
}

/// Read a running activity.
///
/// An activity while it runs, as users see it: title, description, cities, the kind of coupon
/// it offers and its run window. Before it runs, after it ends and once aborted: 404.
#[utoipa::path(operation_id = "my_activity", get, path = "/v1/me/activities/{id}", tag = "centre",
    params(("id" = i64, Path, description = "Activity id")),
    responses((status = 200, description = "The activity as users see it", body = PublicActivityView), CommonErrors),
    security(("bearer" = [])))]
pub async fn activity(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<ActivityId>,
) -> ApiResult<Json<PublicActivityView>> {
    p.me()?;
    Ok(Json(s.public_activity(id).await?))
}
