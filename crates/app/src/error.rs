//! [`AppError`], what the application layer fails with: every store, domain and engine
//! error is turned into it here, once. Front doors render it (the API as problem+json, the
//! console next to the form's field); it says nothing about HTTP.

use std::error::Error as StdError;

use coupond_domain::checkout::Reason;
use coupond_domain::error::ErrorKind;
use coupond_domain::{ClaimRejection, CouponId, DomainError};
use coupond_store::{Conflict, StoreError};

/// An error's message followed by each of its sources', for logs.
pub use coupond_store::error::chain;
use serde::Serialize;
use utoipa::ToSchema;

/// One invalid field of a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    /// The stable code of what is wrong (`missing_field`, `unknown_field`, `invalid_field`,
    /// or a rule's own code, as `invalid_value`).
    #[schema(value_type = String)]
    pub code: &'static str,
    /// The field's JSON path (`value.amount`, `lines[1].quantity`).
    pub field: String,
    /// What is wrong with it, in words.
    #[serde(rename = "detail")]
    pub message: String,
}

impl FieldError {
    pub fn new(code: &'static str, field: String, message: String) -> Self {
        FieldError {
            code,
            field,
            message,
        }
    }
}

/// Everything the application layer can refuse or fail with.
#[derive(Debug)]
pub enum AppError {
    /// No credentials the caller could be identified by, or ones not valid (why, in words).
    Unauthorized(&'static str),
    /// The caller's role or tenant may not do this.
    Forbidden,
    /// No such object, or one the caller may not see.
    NotFound,
    /// A promotion code that cannot be redeemed, whatever the reason.
    UnusableCode,
    /// The request is fine but the state forbids it now.
    Conflict { code: &'static str, message: String },
    /// A claim refused by a rule (`sold_out`, `limit_reached`, `not_claimable`, ...).
    ClaimRefused(ClaimRejection),
    /// A lock refused these coupons for these reasons.
    LockRefused(Vec<(CouponId, Vec<Reason>)>),
    /// The request breaks a rule; `field` names the part of it, where there is one.
    Invalid {
        code: &'static str,
        field: Option<String>,
        message: String,
    },
    /// Several fields break their rules, each named.
    InvalidFields(Vec<FieldError>),
    /// A parameter of the request (a page's `cursor` or `limit`, a filter, a link's token)
    /// that cannot be read; `field` names it, `code` says what is wrong (`invalid_query`).
    BadRequest {
        code: &'static str,
        field: &'static str,
        message: String,
    },
    /// Over a rate limit; retry after `retry_after` seconds.
    RateLimited { retry_after: u64 },
    /// The database is unreachable right now.
    Unavailable,
    /// A limit that fails closed could not be counted (Redis is unreachable).
    LimitsUnavailable,
    /// A bug or broken dependency: logged with its cause chain, never shown.
    Internal(Box<dyn StdError + Send + Sync>),
}

/// What the application layer answers.
pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        AppError::Conflict {
            code,
            message: message.into(),
        }
    }

    pub fn invalid(code: &'static str, field: &str, message: impl Into<String>) -> Self {
        AppError::Invalid {
            code,
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }

    /// A parameter `field` of what to read is not one this layer reads (`invalid_query`).
    pub fn bad_query(field: &'static str, message: impl Into<String>) -> Self {
        AppError::bad_request("invalid_query", field, message)
    }

    /// A parameter `field` of the request cannot be read, for the reason `code` names.
    pub fn bad_request(
        code: &'static str,
        field: &'static str,
        message: impl Into<String>,
    ) -> Self {
        AppError::BadRequest {
            code,
            field,
            message: message.into(),
        }
    }

    /// The one answer to a code that cannot be redeemed, whatever the reason (mistyped,
    /// unknown, used by someone else, expired, not offered to this user), so that answers
    /// never tell which codes exist.
    pub fn unusable_code() -> Self {
        AppError::UnusableCode
    }
}

impl AppError {
    /// Its `code`, `field` and words, as every front door says them (the API's problem, the
    /// console's message next to the form).
    pub fn parts(&self) -> (&'static str, Option<String>, String) {
        match self {
            AppError::Invalid {
                code,
                field,
                message,
            } => (code, field.clone(), message.clone()),
            AppError::BadRequest {
                code,
                field,
                message,
            } => (code, Some((*field).to_owned()), message.clone()),
            AppError::InvalidFields(all) => match all.first() {
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
            AppError::Unauthorized(why) => ("unauthorized", None, (*why).to_owned()),
            AppError::Forbidden => (
                "forbidden",
                None,
                "your role may not call this route".to_owned(),
            ),
            AppError::NotFound => ("not_found", None, "no such resource".to_owned()),
            AppError::UnusableCode => (
                "invalid_code",
                Some("code".to_owned()),
                "this code cannot be redeemed: check it for typos; it may also have expired or \
                 been used"
                    .to_owned(),
            ),
            AppError::Conflict { code, message } => (code, None, message.clone()),
            AppError::ClaimRefused(r) => (r.code(), None, refusal_words(r)),
            AppError::LockRefused(_) => (
                "coupons_not_applicable",
                Some("coupon_ids".to_owned()),
                "some coupons cannot be used on this order; `coupons` says why".to_owned(),
            ),
            AppError::RateLimited { retry_after } => (
                "rate_limited",
                None,
                format!("too many requests; retry after {retry_after} s"),
            ),
            AppError::Unavailable => (
                "unavailable",
                None,
                "the database is unavailable; retry shortly".to_owned(),
            ),
            AppError::LimitsUnavailable => (
                "rate_limit_unavailable",
                None,
                "the shared rate limit cannot be counted right now; retry shortly".to_owned(),
            ),
            AppError::Internal(_) => (
                "internal",
                None,
                "an internal error occurred; it has been logged with the request id".to_owned(),
            ),
        }
    }
}

/// Why a claim was refused, in words.
fn refusal_words(r: &ClaimRejection) -> String {
    match r {
        ClaimRejection::SoldOut => "no coupons of this template are left".to_owned(),
        ClaimRejection::LimitReached => {
            "you already hold as many of these coupons as one user may".to_owned()
        }
        ClaimRejection::NotClaimable(why) => {
            format!("this template cannot be claimed now ({})", why.as_str())
        }
        ClaimRejection::NotEligible => "this coupon is offered to other users only".to_owned(),
        ClaimRejection::Paused => "claims of this coupon are paused; try again later".to_owned(),
    }
}

/// Its code and words; an internal error also its cause chain (for logs, never for callers).
impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Internal(e) => write!(f, "internal: {}", chain(e.as_ref())),
            other => {
                let (code, _, words) = other.parts();
                write!(f, "{code}: {words}")
            }
        }
    }
}

impl StdError for AppError {}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => AppError::NotFound,
            StoreError::Conflict(Conflict::Version) => AppError::conflict(
                "concurrent_update",
                "the resource changed while this request was processed; read it again and retry",
            ),
            StoreError::Conflict(Conflict::Unique) => AppError::conflict(
                "already_exists",
                "a resource with that identity already exists",
            ),
            StoreError::Conflict(Conflict::BelowClaimed(claimed)) => AppError::conflict(
                "below_claimed",
                format!("total_stock cannot go below the {claimed} coupons already claimed"),
            ),
            StoreError::Conflict(other) => AppError::conflict(
                "conflict",
                format!("the write conflicts with stored data ({other})"),
            ),
            StoreError::Unavailable(source) => {
                tracing::warn!(error = %source, "database unavailable");
                AppError::Unavailable
            }
            StoreError::Other(source) => AppError::Internal(source),
            StoreError::Corrupt(what) => AppError::Internal(what.into()),
        }
    }
}

impl From<DomainError> for AppError {
    fn from(e: DomainError) -> Self {
        match e.kind {
            ErrorKind::Invalid if !e.also.is_empty() => {
                let field = |e: &DomainError| e.field.clone().unwrap_or_else(|| "body".into());
                let mut all = vec![FieldError::new(e.code, field(&e), e.message.clone())];
                all.extend(
                    e.also
                        .iter()
                        .map(|a| FieldError::new(a.code, field(a), a.message.clone())),
                );
                AppError::InvalidFields(all)
            }
            ErrorKind::Invalid => AppError::Invalid {
                code: e.code,
                field: e.field,
                message: e.message,
            },
            ErrorKind::State => AppError::Conflict {
                code: e.code,
                message: e.message,
            },
        }
    }
}

impl From<coupond_engine::CampaignError> for AppError {
    fn from(e: coupond_engine::CampaignError) -> Self {
        match e {
            coupond_engine::CampaignError::Rule(e) => e.into(),
            coupond_engine::CampaignError::Store(e) => e.into(),
        }
    }
}

impl From<coupond_engine::ClaimError> for AppError {
    fn from(e: coupond_engine::ClaimError) -> Self {
        use coupond_engine::ClaimError;
        match e {
            ClaimError::Rejected(r) => AppError::ClaimRefused(r),
            ClaimError::Unavailable | ClaimError::ShuttingDown => AppError::Unavailable,
            ClaimError::KeyReused => AppError::invalid(
                "idempotency_key_reused",
                "Idempotency-Key",
                "this key was already used for a different request",
            ),
            ClaimError::CodeTaken => AppError::unusable_code(),
            ClaimError::Internal(e) => AppError::Internal(Box::new(e)),
        }
    }
}

impl From<coupond_engine::accounts::AccountError> for AppError {
    fn from(e: coupond_engine::accounts::AccountError) -> Self {
        use coupond_engine::accounts::AccountError;
        match e {
            AccountError::Invalid(e) => e.into(),
            AccountError::EmailTaken => {
                AppError::conflict("email_taken", "an operator with this email exists")
            }
            AccountError::NoMerchant => AppError::invalid(
                "unknown_merchant",
                "merchant_id",
                "no merchant with this id",
            ),
            AccountError::NotFound => AppError::NotFound,
            AccountError::ResetInvalid => AppError::conflict(
                "link_not_valid",
                "this set-password link was used already or is older than an hour",
            ),
            AccountError::Hashing(why) => AppError::Internal(why.into()),
            AccountError::Busy { retry_after } => AppError::RateLimited {
                retry_after: retry_after.as_secs().max(1),
            },
            AccountError::NoEmail => AppError::conflict(
                "email_not_configured",
                "this service sends no email, so a merchant cannot invite anyone; \
                 the platform adds merchant staff",
            ),
            AccountError::TooManyInvitations => AppError::conflict(
                "too_many_invitations",
                format!(
                    "{} invitations are pending; wait until one is accepted or expires",
                    coupond_engine::invitations::MAX_PENDING
                ),
            ),
            AccountError::Store(e) => e.into(),
        }
    }
}

impl From<coupond_engine::redemption::RedeemError> for AppError {
    fn from(e: coupond_engine::redemption::RedeemError) -> Self {
        use coupond_engine::redemption::RedeemError;
        match e {
            RedeemError::Unusable => AppError::unusable_code(),
            RedeemError::Refused(r) => AppError::ClaimRefused(r),
            RedeemError::Claim(e) => e.into(),
            RedeemError::Store(e) => e.into(),
        }
    }
}

impl From<coupond_engine::CheckoutError> for AppError {
    fn from(e: coupond_engine::CheckoutError) -> Self {
        use coupond_engine::{CheckoutError, HoldError};
        match e {
            CheckoutError::Hold(HoldError::NotAfterNow) => {
                AppError::invalid("hold_until_past", "hold_until", "must be after now")
            }
            CheckoutError::Hold(HoldError::TooFar(latest)) => AppError::invalid(
                "hold_until_too_far",
                "hold_until",
                format!(
                    "at most checkout.max_lock_ttl from when the lock was taken, and not past \
                     its coupons' validity: {latest} at the latest"
                ),
            ),
            CheckoutError::Store(e) => e.into(),
        }
    }
}
