//! `/v1/listings`: merchants' houses, rooms and products, the templates bound to them, and the
//! search users browse by coupon.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use coupond_app::listings::{Bound, ListingFilter};
use coupond_app::pages::PageRequest;
use coupond_domain::{
    ActivityId, CategoryId, CityId, CouponKind, ListingDraft, ListingId, ListingPatch, TemplateId,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::PageOf;
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;
use crate::views::ListingView;

/// Create a listing.
///
/// Create one of your listings (a merchant's item or property), in one of your cities, for
/// templates to be bound to.
#[utoipa::path(operation_id = "create_listing", post, path = "/v1/listings", tag = "listings",
    request_body = ListingDraft,
    responses((status = 201, description = "Created", body = ListingView), CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn create(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiJson(draft): ApiJson<ListingDraft>,
) -> ApiResult<(StatusCode, Json<ListingView>)> {
    let l = s.create_listing(&p, &draft).await?;
    Ok((StatusCode::CREATED, Json(l)))
}

/// Read a listing.
///
/// A listing with the coupons claimable on it now.
#[utoipa::path(operation_id = "get_listing", get, path = "/v1/listings/{id}", tag = "listings",
    params(("id" = i64, Path, description = "Listing id")),
    responses((status = 200, description = "The listing", body = ListingView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<ListingId>,
) -> ApiResult<Json<ListingView>> {
    Ok(Json(s.listing(&p, id).await?))
}

/// Change a listing.
///
/// Change one of your listings' title or city; fields left out keep their value.
#[utoipa::path(operation_id = "update_listing", patch, path = "/v1/listings/{id}", tag = "listings",
    request_body = ListingPatch, params(("id" = i64, Path, description = "Listing id")),
    responses((status = 200, description = "The updated listing", body = ListingView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn update(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<ListingId>,
    ApiJson(patch): ApiJson<ListingPatch>,
) -> ApiResult<Json<ListingView>> {
    Ok(Json(s.update_listing(&p, id, patch).await?))
}

/// Search filters. Coupon filters look at the coupons claimable now.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// The listing with this `external_id` (1 to 100 characters): a merchant syncing its
    /// catalogue finds its own listing again.
    pub external_id: Option<String>,
    #[param(value_type = Option<i64>)]
    pub city: Option<CityId>,
    #[param(value_type = Option<i64>)]
    pub category: Option<CategoryId>,
    /// With a live coupon of this kind.
    pub kind: Option<CouponKind>,
    /// With a live coupon from this activity.
    #[param(value_type = Option<i64>)]
    pub activity_id: Option<ActivityId>,
    /// With this template live on it.
    #[param(value_type = Option<i64>)]
    pub template_id: Option<TemplateId>,
    /// With a live coupon from an activity of this type (the activity's `reference.type`).
    pub activity_type: Option<String>,
    /// `true`: only listings with a live coupon; `false`: only those without.
    pub has_coupon: Option<bool>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// Search listings.
///
/// Search listings, each with the coupons claimable on it now. Merchants see their own.
#[utoipa::path(operation_id = "list_listings", get, path = "/v1/listings", tag = "listings",
    params(SearchQuery),
    responses((status = 200, description = "A page of listings", body = PageOf<ListingView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<SearchQuery>,
) -> ApiResult<Json<PageOf<ListingView>>> {
    let filter = ListingFilter {
        external_id: q.external_id,
        city: q.city,
        category: q.category,
        kind: q.kind,
        activity: q.activity_id,
        template: q.template_id,
        activity_type: q.activity_type,
        has_coupon: q.has_coupon,
    };
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(Json(s.listings(&p, filter, page).await?))
}

/// Path of a binding.
#[derive(Debug, Deserialize)]
pub struct BindingPath {
    pub id: ListingId,
    pub template_id: TemplateId,
}

/// A binding of a template to a listing.
#[derive(Debug, Serialize, ToSchema)]
pub struct Binding {
    pub listing_id: ListingId,
    pub template_id: TemplateId,
    /// Every template now bound to the listing.
    pub bound: Vec<TemplateId>,
}

/// Bind a template to a listing.
///
/// Bind one of your templates to one of your listings (idempotent: 201 when bound now, 200 when it
/// already was); the platform binds its own templates to any listing. A listing holds at most `max_bindings_per_listing` templates (`binding_limit`
/// beyond); aborted and expired templates cannot be bound.
#[utoipa::path(operation_id = "bind_template", put, path = "/v1/listings/{id}/templates/{template_id}",
    tag = "listings",
    params(("id" = i64, Path, description = "Listing id"), ("template_id" = i64, Path, description = "Template id")),
    responses((status = 201, description = "Bound", body = Binding),
        (status = 200, description = "Already bound", body = Binding), CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn bind(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(path): ApiPath<BindingPath>,
) -> ApiResult<(StatusCode, Json<Binding>)> {
    let Bound { created, bound } = s.bind(&p, path.id, path.template_id).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(Binding {
            listing_id: path.id,
            template_id: path.template_id,
            bound,
        }),
    ))
}

/// Unbind a template from a listing.
///
/// Unbind a template from one of your listings, or the platform its own template from any
/// listing (idempotent: a template not bound answers 204 too).
#[utoipa::path(operation_id = "unbind_template", delete, path = "/v1/listings/{id}/templates/{template_id}",
    tag = "listings",
    params(("id" = i64, Path, description = "Listing id"), ("template_id" = i64, Path, description = "Template id")),
    responses((status = 204, description = "Not bound (any more)"), CommonErrors),
    security(("bearer" = [])))]
pub async fn unbind(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(path): ApiPath<BindingPath>,
) -> ApiResult<StatusCode> {
    s.unbind(&p, path.id, path.template_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Delete a listing.
///
/// Delete a listing (its merchant): it is unbound from every template first, in the same
/// transaction. Deleting it again: 404.
#[utoipa::path(operation_id = "delete_listing", delete, path = "/v1/listings/{id}",
    tag = "listings",
    params(("id" = i64, Path, description = "Listing id")),
    responses((status = 204, description = "Deleted"), CommonErrors),
    security(("bearer" = [])))]
pub async fn remove(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<ListingId>,
) -> ApiResult<StatusCode> {
    s.delete_listing(&p, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
