//! The one API error type. Each variant knows its HTTP status; every error leaves as
//! `application/problem+json` with a stable `code`, the offending `field` where there is one,
//! and the request id. Internal errors are logged with their cause chain and never shown.

use std::error::Error as StdError;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use coupond_domain::checkout::Reason;
use coupond_domain::{ClaimRejection, CouponId, DomainError};
use coupond_store::StoreError;

use coupond_app::AppError;
pub use coupond_app::FieldError;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::observe;

/// An RFC 9457 problem document.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// `urn:coupond:problem:<code>`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Stable machine-readable code (`validation_failed`, `not_found`, `activity_frozen`, ...).
    pub code: String,
    /// JSON path of the offending field, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// For `not_claimable`: `draft`, `not_started`, `ended`, `expired` or `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The request id, also in the `x-request-id` response header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// For `coupons_not_applicable`: each coupon that cannot be locked, with its reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coupons: Option<Vec<CouponRefusal>>,
    /// When more than one field of the body is invalid: each of them (the first is `field`).
    #[serde(default, skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub errors: Option<Vec<FieldError>>,
}

/// A coupon a lock refused, and why.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CouponRefusal {
    pub coupon_id: CouponId,
    pub reasons: Vec<Reason>,
}

/// Everything a handler can fail with.
#[derive(Debug)]
pub enum ApiError {
    /// 400: the request is malformed (JSON syntax, query string, path parameter).
    BadRequest {
        code: &'static str,
        field: Option<String>,
        message: String,
    },
    /// 401: no credentials, or credentials that are not valid.
    Unauthorized(&'static str),
    /// 403: valid credentials whose role may not call this route.
    Forbidden,
    /// 404: no such object, or one the caller may not see.
    NotFound,
    /// 404 `invalid_code`: a promotion code that cannot be redeemed, whatever the reason.
    UnusableCode,
    /// 405.
    MethodNotAllowed,
    /// 409: the request is fine but the state forbids it now.
    Conflict { code: &'static str, message: String },
    /// 409: a claim refused by a rule (`sold_out`, `limit_reached`, `not_claimable` with its
    /// reason, `not_eligible`).
    ClaimRefused(ClaimRejection),
    /// 409 `coupons_not_applicable`: a lock refused these coupons for these reasons.
    LockRefused(Vec<(CouponId, Vec<Reason>)>),
    /// 408 `request_timeout`: the request (reading its body included) took longer than
    /// `request_timeout`.
    RequestTimeout,
    /// 413.
    PayloadTooLarge,
    /// 415.
    UnsupportedMediaType,
    /// 422: the request is well-formed but breaks a rule.
    Invalid {
        code: &'static str,
        field: Option<String>,
        message: String,
    },
    /// 422: several fields of the body break its shape, each named (the first also as the
    /// problem's `field`).
    InvalidFields(Vec<FieldError>),
    /// 429: over a rate limit; retry after `retry_after` seconds.
    RateLimited { retry_after: u64 },
    /// 429 `too_many_uploads`: `max_concurrent_uploads` uploads are being read; retry in a
    /// second.
    TooManyUploads,
    /// 503: the database is unreachable right now; retry after a moment.
    Unavailable,
    /// 503 `rate_limit_unavailable`: a limit that fails closed (code redemption) could not be
    /// counted because Redis is unreachable; retry after a moment.
    LimitsUnavailable,
    /// 500: a bug or broken dependency. Logged with its cause chain; callers see only a code.
    Internal(Box<dyn StdError + Send + Sync>),
}

impl ApiError {
    pub fn bad_request(
        code: &'static str,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        ApiError::BadRequest {
            code,
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::Conflict {
            code,
            message: message.into(),
        }
    }

    pub fn invalid(code: &'static str, field: &str, message: impl Into<String>) -> Self {
        ApiError::Invalid {
            code,
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }

    /// The one answer to a code that cannot be redeemed, whatever the reason (mistyped,
    /// unknown, used by someone else, expired, not offered to this user), so that answers
    /// never tell which codes exist.
    pub fn unusable_code() -> Self {
        ApiError::UnusableCode
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden => StatusCode::FORBIDDEN,
            ApiError::NotFound | ApiError::UnusableCode => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict { .. } | ApiError::ClaimRefused(_) | ApiError::LockRefused(_) => {
                StatusCode::CONFLICT
            }
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Invalid { .. } | ApiError::InvalidFields(_) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::RateLimited { .. } | ApiError::TooManyUploads => {
                StatusCode::TOO_MANY_REQUESTS
            }
            ApiError::Unavailable | ApiError::LimitsUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Its problem's `code`, `field` and `detail`, as the answer says them (the console shows
    /// the application's refusals in the same words).
    pub fn parts(&self) -> (&'static str, Option<String>, String) {
        match self {
            ApiError::BadRequest {
                code,
                field,
                message,
            }
            | ApiError::Invalid {
                code,
                field,
                message,
            } => (code, field.clone(), message.clone()),
            ApiError::InvalidFields(all) => match all.first() {
                Some(f) => (
                    f.code,
                    Some(f.field.clone()),
                    format!(
                        "{} fields are invalid (each is in `errors`); {}: {}",
                        all.len(),
                        f.field,
                        f.message
                    ),
                ),
                None => ("invalid_field", None, "the body is invalid".to_owned()),
            },
            ApiError::Unauthorized(why) => ("unauthorized", None, (*why).to_owned()),
            ApiError::Forbidden => (
                "forbidden",
                None,
                "your role may not call this route".to_owned(),
            ),
            ApiError::NotFound => ("not_found", None, "no such resource".to_owned()),
            ApiError::UnusableCode => (
                "invalid_code",
                Some("code".to_owned()),
                "this code cannot be redeemed: check it for typos; it may also have expired or \
                 been used"
                    .to_owned(),
            ),
            ApiError::MethodNotAllowed => (
                "method_not_allowed",
                None,
                "this route does not accept that method".to_owned(),
            ),
            ApiError::Conflict { code, message } => (code, None, message.clone()),
            ApiError::ClaimRefused(r) => (
                r.code(),
                None,
                match r {
                    ClaimRejection::SoldOut => "no coupons of this template are left".to_owned(),
                    ClaimRejection::LimitReached => {
                        "you already hold as many of these coupons as one user may".to_owned()
                    }
                    ClaimRejection::NotClaimable(why) => {
                        format!("this template cannot be claimed now ({})", why.as_str())
                    }
                    ClaimRejection::NotEligible => {
                        "this coupon is offered to other users only".to_owned()
                    }
                    ClaimRejection::Paused => {
                        "claims of this coupon are paused; try again later".to_owned()
                    }
                },
            ),
            ApiError::LockRefused(_) => (
                "coupons_not_applicable",
                Some("coupon_ids".to_owned()),
                "some coupons cannot be used on this order; `coupons` says why".to_owned(),
            ),
            ApiError::RequestTimeout => (
                "request_timeout",
                None,
                "the request took longer than the server allows; send it again".to_owned(),
            ),
            ApiError::PayloadTooLarge => (
                "payload_too_large",
                None,
                "the request body is larger than the configured limit".to_owned(),
            ),
            ApiError::UnsupportedMediaType => (
                "unsupported_media_type",
                None,
                "send the body as application/json".to_owned(),
            ),
            ApiError::RateLimited { retry_after } => (
                "rate_limited",
                None,
                format!("too many requests; retry after {retry_after} s"),
            ),
            ApiError::TooManyUploads => (
                "too_many_uploads",
                None,
                "as many uploads as the server reads at once are being read; retry shortly"
                    .to_owned(),
            ),
            ApiError::Unavailable => (
                "unavailable",
                None,
                "the database is unavailable; retry shortly".to_owned(),
            ),
            ApiError::LimitsUnavailable => (
                "rate_limit_unavailable",
                None,
                "the shared rate limit cannot be counted right now; retry shortly".to_owned(),
            ),
            ApiError::Internal(_) => (
                "internal",
                None,
                "an internal error occurred; it has been logged with the request id".to_owned(),
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let request_id = observe::current_request_id();
        if let ApiError::Internal(e) = &self {
            let chain = coupond_store::error::chain(e.as_ref());
            tracing::error!(request_id = request_id.as_deref(), error = %chain, "internal error");
        }
        let (code, field, detail) = self.parts();
        let problem = Problem {
            kind: format!("urn:coupond:problem:{code}"),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail,
            code: code.to_owned(),
            field,
            reason: match &self {
                ApiError::ClaimRefused(ClaimRejection::NotClaimable(why)) => {
                    Some(why.as_str().to_owned())
                }
                _ => None,
            },
            request_id,
            coupons: match &self {
                ApiError::LockRefused(list) => Some(
                    list.iter()
                        .map(|(id, reasons)| CouponRefusal {
                            coupon_id: *id,
                            reasons: reasons.clone(),
                        })
                        .collect(),
                ),
                _ => None,
            },
            errors: match &self {
                ApiError::InvalidFields(all) => Some(all.clone()),
                _ => None,
            },
        };
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut res = (status, body).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        match self {
            ApiError::Unavailable | ApiError::LimitsUnavailable | ApiError::TooManyUploads => {
                res.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            ApiError::RateLimited { retry_after } => {
                res.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after.max(1)));
            }
            _ => {}
        }
        res
    }
}

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        match e {
            AppError::Unauthorized(why) => ApiError::Unauthorized(why),
            AppError::Forbidden => ApiError::Forbidden,
            AppError::NotFound => ApiError::NotFound,
            AppError::UnusableCode => ApiError::UnusableCode,
            AppError::Conflict { code, message } => ApiError::Conflict { code, message },
            AppError::ClaimRefused(r) => ApiError::ClaimRefused(r),
            AppError::LockRefused(list) => ApiError::LockRefused(list),
            AppError::Invalid {
                code,
                field,
                message,
            } => ApiError::Invalid {
                code,
                field,
                message,
            },
            AppError::InvalidFields(all) => ApiError::InvalidFields(all),
            AppError::BadRequest {
                code,
                field,
                message,
            } => ApiError::bad_request(code, Some(field), message),
            AppError::RateLimited { retry_after } => ApiError::RateLimited { retry_after },
            AppError::Unavailable => ApiError::Unavailable,
            AppError::LimitsUnavailable => ApiError::LimitsUnavailable,
            AppError::Internal(e) => ApiError::Internal(e),
        }
    }
}

/// Store, domain and engine errors reach the API as the application layer maps them (see
/// [`AppError`]'s conversions): the mapping is written there once.
fn via_app<E: Into<AppError>>(e: E) -> ApiError {
    e.into().into()
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        via_app(e)
    }
}

impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        via_app(e)
    }
}

impl From<coupond_engine::CampaignError> for ApiError {
    fn from(e: coupond_engine::CampaignError) -> Self {
        via_app(e)
    }
}

impl From<coupond_engine::ClaimError> for ApiError {
    fn from(e: coupond_engine::ClaimError) -> Self {
        via_app(e)
    }
}

impl From<coupond_engine::accounts::AccountError> for ApiError {
    fn from(e: coupond_engine::accounts::AccountError) -> Self {
        via_app(e)
    }
}

impl From<coupond_engine::redemption::RedeemError> for ApiError {
    fn from(e: coupond_engine::redemption::RedeemError) -> Self {
        via_app(e)
    }
}

impl From<coupond_engine::CheckoutError> for ApiError {
    fn from(e: coupond_engine::CheckoutError) -> Self {
        via_app(e)
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
