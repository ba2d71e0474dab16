//! Claims and wallets: users claim coupons (or the order service claims for them), and read
//! the coupons they hold.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::{Extension, Json};
use coupond_domain::{CouponStatus, ListingId, Source, TemplateId, UserId};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use coupond_app::claims::{ClaimRequest, Issued};
use coupond_app::pages::PageRequest;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery, ClientIp, OptionalJson};
use crate::idempotency;
use crate::pagination::PageOf;
use crate::routes::{BodyErrors, CommonErrors, ConflictError, RateLimitedError};
use crate::state::AppState;
use crate::views::CouponView;
use coupond_app::AppError;

/// The body of a claim: empty for a user; a service key names the user.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimBody {
    /// The user to claim for (service keys only).
    #[schema(value_type = Option<String>)]
    pub user_id: Option<UserId>,
    /// Your label for where the claim came from (`app-home`, `sms-campaign-12`): 1 to 64
    /// letters, digits, `-`, `_`, `.`, `:`. Kept with the coupon and reported as its own
    /// channel in the campaign figures.
    #[serde(default)]
    pub source: Option<Source>,
    /// The listing whose page the claim was made from (claims of a template only; a code's
    /// coupon comes from its code). Kept with the coupon as its channel.
    #[serde(default)]
    #[schema(value_type = Option<i64>)]
    pub listing_id: Option<ListingId>,
}

/// Claim a coupon.
///
/// Claim a coupon of a template: `sold_out`, `limit_reached`, `not_claimable` (with its `reason`)
/// and `not_eligible` are 409s; a user claiming a template whose audience leaves it out gets 404,
/// as its view of the template does. With an `Idempotency-Key` header, a retry returns the coupon the
/// first attempt issued (header `idempotent-replayed: true`), never a second one; the same key for
/// another claim is 422 `idempotency_key_reused`. Over the per-user or per-IP claim rate: 429
/// `rate_limited` with Retry-After.
#[utoipa::path(operation_id = "claim_coupon", post, path = "/v1/templates/{id}/claims", tag = "claims",
    params(("id" = i64, Path, description = "Template id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes retries safe: 1 to 255 visible ASCII characters")),
    request_body(content = Option<ClaimBody>, description = "Empty for users; `{\"user_id\": ...}` for service keys"),
    responses((status = 201, description = "The coupon", body = CouponView), CommonErrors, BodyErrors, ConflictError, RateLimitedError),
    security(("bearer" = [])))]
pub async fn claim(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    OptionalJson(body): OptionalJson<ClaimBody>,
) -> ApiResult<Created> {
    let body = body.unwrap_or_default();
    let retry = idempotency::retry_key(&headers, &p)?;
    let who = s.claimant(&p, body.user_id, ip)?;
    let req = ClaimRequest {
        template: id,
        listing: body.listing_id,
        source: body.source,
        retry,
    };
    Ok(created(&s, s.claim(who, req).await?))
}

/// A 201 with the coupon, saying whether it was issued by an earlier request (a retry).
pub(crate) fn created(s: &AppState, issued: Issued) -> Created {
    let replayed = [(
        "idempotent-replayed",
        if issued.claimed.replayed {
            "true"
        } else {
            "false"
        },
    )];
    (
        StatusCode::CREATED,
        replayed,
        Json(CouponView::new(
            issued.claimed.coupon,
            &issued.template,
            s.now(),
        )),
    )
}

/// The answer of a claim or a redemption.
pub(crate) type Created = (
    StatusCode,
    [(&'static str, &'static str); 1],
    Json<CouponView>,
);

/// Wallet filters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WalletQuery {
    /// Only coupons in this status now.
    pub status: Option<CouponStatus>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// Your coupons.
///
/// The signed-in user's coupons, soonest-expiring first, filtered by status, a page at a time.
#[utoipa::path(operation_id = "my_coupons", get, path = "/v1/me/coupons", tag = "claims", params(WalletQuery),
    responses((status = 200, description = "A page of coupons", body = PageOf<CouponView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn mine(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<WalletQuery>,
) -> ApiResult<Json<PageOf<CouponView>>> {
    let Principal::User(user) = p.clone() else {
        return Err(ApiError::App(AppError::Forbidden));
    };
    wallet(&s, &p, user, q).await.map(Json)
}

/// A user's coupons.
///
/// A user's coupons, soonest-expiring first: the order service and the platform see them all, a
/// merchant (support) only those of its own templates.
#[utoipa::path(operation_id = "user_coupons", get, path = "/v1/users/{id}/coupons", tag = "claims",
    params(("id" = String, Path, description = "User id"), WalletQuery),
    responses((status = 200, description = "A page of coupons", body = PageOf<CouponView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn of_user(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(user): ApiPath<UserId>,
    ApiQuery(q): ApiQuery<WalletQuery>,
) -> ApiResult<Json<PageOf<CouponView>>> {
    wallet(&s, &p, user, q).await.map(Json)
}

/// `user`'s wallet as `p` may see it ([`coupond_app::App::wallet`]).
async fn wallet(
    s: &AppState,
    p: &Principal,
    user: UserId,
    q: WalletQuery,
) -> ApiResult<PageOf<CouponView>> {
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(s.wallet(p, user, q.status, page).await?)
}
