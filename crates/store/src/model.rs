//! Records and queries that exist only at the storage boundary.

use std::fmt;

use coupond_domain::{
    ActivityId, ActivityStatus, Actor, CategoryId, Channel, CityId, CitySet, Coupon, CouponId,
    CouponKind, CouponStatus, MerchantId, OperatorId, Review, Source, TemplateId, TemplateSpec,
    TemplateStatus, Timestamp, UserId,
};
use serde::{Deserialize, Serialize};

/// The role an API key carries. Users are not keys: they come with a JWT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Platform,
    Merchant,
    Service,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Platform => "platform",
            Role::Merchant => "merchant",
            Role::Service => "service",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "platform" => Some(Role::Platform),
            "merchant" => Some(Role::Merchant),
            "service" => Some(Role::Service),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A key to store: only its hash, never the key itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewApiKey {
    /// SHA-256 of the full key.
    pub hash: [u8; 32],
    /// The first characters of the key, to tell keys apart in listings.
    pub prefix: String,
    pub role: Role,
    /// Set exactly when `role` is `Merchant`.
    pub merchant_id: Option<MerchantId>,
    pub label: String,
    /// The person who made it: it works only while their account is enabled. `None`: made
    /// by a key, the command line or the demo.
    pub operator_id: Option<OperatorId>,
}

/// A stored API key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    pub id: i64,
    pub prefix: String,
    pub role: Role,
    pub merchant_id: Option<MerchantId>,
    pub label: String,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
    /// The person who made it, if a person did.
    pub operator_id: Option<OperatorId>,
}

/// A page of an id-ordered list: items with id greater than `after`, at most `limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    pub after: Option<i64>,
    pub limit: u32,
}

/// Which merchants to list.
#[derive(Clone, Debug)]
pub struct MerchantQuery {
    /// Merchants operating in this city.
    pub city: Option<CityId>,
    /// Merchants whose name or short name contains this text, ignoring case (as the
    /// database's `LOWER` folds it).
    pub name: Option<String>,
    pub page: Page,
}

/// Which activities to list.
#[derive(Clone, Debug)]
pub struct ActivityQuery {
    pub status: Option<ActivityStatus>,
    /// Activities covering this city.
    pub city: Option<CityId>,
    /// Activities covering at least one of these cities (a merchant's view).
    pub any_city: Option<CitySet>,
    /// The instant statuses are computed at.
    pub now: Timestamp,
    /// The freeze period statuses are computed with.
    pub freeze: time::Duration,
    /// Kind, pause and external id.
    pub narrow: Narrow,
    pub page: Page,
}

/// What lists of templates and of activities both filter on, besides status and place.
#[derive(Clone, Debug, Default)]
pub struct Narrow {
    /// Only those offering coupons of this kind.
    pub kind: Option<CouponKind>,
    /// `Some(true)`: only those paused now; `Some(false)`: only those not paused.
    pub paused: Option<bool>,
    /// Only the one with this `external_id` (its reference).
    pub external_id: Option<String>,
    /// Only those from this system (`reference.source`, the designs' `appId`).
    pub source: Option<String>,
    /// Only those of this type there (`reference.type`, the designs' `cubeType`).
    pub source_type: Option<String>,
}

/// Which templates to list.
#[derive(Clone, Debug)]
pub struct TemplateQuery {
    /// Only this merchant's templates (a merchant's view).
    pub merchant: Option<MerchantId>,
    pub activity: Option<ActivityId>,
    pub status: Option<TemplateStatus>,
    /// Only templates offered in this city.
    pub city: Option<CityId>,
    /// Kind, pause and external id.
    pub narrow: Narrow,
    pub now: Timestamp,
    pub page: Page,
}

/// Which listings to find. The coupon filters (`kind`, `activity`, `template`,
/// `has_coupon`) look at the templates bound to a listing that are claimable at `now`.
#[derive(Clone, Debug)]
pub struct ListingQuery {
    /// Only this merchant's listings.
    pub merchant: Option<MerchantId>,
    /// Only the listing with this `external_id` (one per merchant).
    pub external_id: Option<String>,
    pub city: Option<CityId>,
    pub category: Option<CategoryId>,
    /// With a live coupon of this kind.
    pub kind: Option<CouponKind>,
    /// With a live coupon from this activity.
    pub activity: Option<ActivityId>,
    /// With a live coupon from an activity of this type (its `reference.type`, the rental
    /// design's activity types a listing takes part in).
    pub activity_type: Option<String>,
    /// With this template live on it.
    pub template: Option<TemplateId>,
    /// `Some(true)`: with at least one live coupon; `Some(false)`: with none.
    pub has_coupon: Option<bool>,
    pub now: Timestamp,
    pub page: Page,
}

impl ListingQuery {
    /// Whether any coupon filter asks for a live coupon.
    pub fn wants_coupon(&self) -> bool {
        self.kind.is_some()
            || self.activity.is_some()
            || self.activity_type.is_some()
            || self.template.is_some()
            || self.has_coupon == Some(true)
    }
}

/// A template to insert.
#[derive(Clone, Debug)]
pub struct NewTemplate<'a> {
    pub merchant_id: Option<MerchantId>,
    pub spec: &'a TemplateSpec,
    /// Required when the spec names an activity: the version the caller validated against.
    pub activity_version: Option<i64>,
    /// [`Review::Pending`] for a merchant's enrollment in an activity that requires approval,
    /// else [`Review::NotNeeded`].
    pub review: Review,
}

/// Where a database's schema stands against this build's migrations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schema {
    /// The newest migration applied to the database; `None`: none (no coupond schema yet).
    pub applied: Option<i64>,
    /// The newest migration this build carries.
    pub known: i64,
}

impl Schema {
    /// The database was migrated by a newer coupond than this one.
    pub fn is_newer(&self) -> bool {
        self.applied.is_some_and(|a| a > self.known)
    }

    /// Migrations this build carries are not applied yet.
    pub fn is_behind(&self) -> bool {
        self.applied.is_none_or(|a| a < self.known)
    }
}

/// Connection pool sizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Open connections.
    pub size: u32,
    /// Open connections not in use.
    pub idle: u32,
    /// The configured maximum.
    pub max: u32,
}

/// One claim in a batch: who, and the validity its coupon gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimRequest {
    pub user: UserId,
    /// Who asked (the user, or the service claiming for it), for the operation log.
    pub actor: Actor,
    pub valid_from: Timestamp,
    pub valid_until: Timestamp,
    /// The caller's idempotency key, if it sent one. Keys within one batch are distinct.
    pub idempotency: Option<IdempotencyKey>,
    /// The promotion code being redeemed, if any. Single-use codes within one batch are
    /// distinct.
    pub code: Option<CodeClaim>,
    /// The bulk issuance job issuing it, if one is (its event is then `coupon.issued`).
    pub issuance: Option<i64>,
    /// How the coupon reaches its holder, kept with it for the campaign figures.
    pub channel: Channel,
    /// The caller's label for where the claim came from, if it gave one.
    pub source: Option<Source>,
}

impl ClaimRequest {
    /// The coupon this claim gets as coupon `id` of `template`, claimed at `now`: what every
    /// backend's claim batch writes and answers.
    pub fn coupon(&self, id: CouponId, template: TemplateId, now: Timestamp) -> Coupon {
        Coupon {
            id,
            template_id: template,
            user_id: self.user.clone(),
            stored_status: CouponStatus::Unused,
            claimed_at: now,
            valid_from: self.valid_from,
            valid_until: self.valid_until,
            code: self.code.as_ref().map(|k| k.code.clone()),
            order_id: None,
            locked_until: None,
            discount: None,
            used_at: None,
        }
    }
}

/// A code redeemed by a claim: recorded on the coupon; a single-use code is also taken, in
/// the claim's transaction, so it gives one coupon at most.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeClaim {
    /// Normalized.
    pub code: String,
    pub single_use: bool,
}

/// An idempotency key as stored: the key qualified by its scope (principal and route), and a
/// fingerprint of what was asked, so a reuse for something else is told apart from a retry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdempotencyKey {
    pub key: String,
    pub fingerprint: [u8; 32],
}

/// What happened to one claim of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimOutcome {
    Issued(Coupon),
    SoldOut,
    LimitReached,
    /// The template is not claimable at the batch's instant (aborted, outside its window,
    /// unpublished).
    NotClaimable,
    /// The key was used before for this same claim: the coupon it issued then.
    Replayed(Coupon),
    /// The key was used before for a different request.
    KeyReused,
    /// The single-use code was redeemed by another user (or belongs to another template).
    CodeTaken,
    /// The template's audience is a set of tags and the user holds none of them (read in the
    /// claim's transaction).
    NotEligible,
}

/// Which of a user's coupons to list: soonest-expiring first.
#[derive(Clone, Debug)]
pub struct CouponQuery {
    pub user: UserId,
    /// Only coupons of this merchant's templates (a merchant's support view).
    pub merchant: Option<MerchantId>,
    /// Only coupons in this status at `now` (an unused coupon past its validity is expired).
    pub status: Option<CouponStatus>,
    pub now: Timestamp,
    /// Coupons after this `(valid_until, id)` position.
    pub after: Option<(Timestamp, i64)>,
    pub limit: u32,
}

/// A page of one template's coupons (who holds them), by id.
#[derive(Clone, Debug)]
pub struct HoldersQuery {
    pub template: TemplateId,
    /// Only this user's coupons.
    pub user: Option<UserId>,
    /// Only coupons in this status at `now`.
    pub status: Option<CouponStatus>,
    pub now: Timestamp,
    /// Coupons with a larger id.
    pub after: Option<i64>,
    pub limit: u32,
}

/// What the database says about one template's stock and holdings (for audits, I1 and I2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TemplateAudit {
    pub total_stock: i64,
    /// `templates.claimed`.
    pub claimed: i64,
    /// Coupon rows of the template.
    pub coupons: i64,
    pub per_user_limit: i64,
    /// The most coupons of the template any one user holds.
    pub max_per_user: i64,
}

impl TemplateAudit {
    /// The violations of I1 and I2, as sentences; empty when the template is sound.
    pub fn violations(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.claimed != self.coupons {
            v.push(format!(
                "claimed = {} but {} coupons exist",
                self.claimed, self.coupons
            ));
        }
        if self.coupons > self.total_stock {
            v.push(format!(
                "{} coupons exceed the stock of {}",
                self.coupons, self.total_stock
            ));
        }
        if self.max_per_user > self.per_user_limit {
            v.push(format!(
                "a user holds {} coupons, above the limit of {}",
                self.max_per_user, self.per_user_limit
            ));
        }
        v
    }
}

/// A batch of generated single-use codes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeBatch {
    pub id: i64,
    pub template_id: TemplateId,
    pub prefix: String,
    /// Random characters per code (the check character comes on top).
    pub length: u32,
    pub count: u32,
    /// Codes generated so far; the batch is finished when it reaches `count`.
    pub generated: u32,
    pub created_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

/// A stored promotion code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromoCode {
    pub code: String,
    pub template_id: TemplateId,
    /// `None` for the template's shared code.
    pub batch_id: Option<i64>,
    /// For a single-use code: who redeemed it, when, and the coupon it gave.
    pub redeemed_by: Option<UserId>,
    pub redeemed_at: Option<Timestamp>,
    pub coupon_id: Option<CouponId>,
}

/// A broken invariant found by [`ReportStore::audit`](crate::ReportStore::audit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which check (`stock`, `per_user_limit`, `holdings`, `locks`, `uses`, `overdue_locks`,
    /// `log`, `template_amounts`, `codes`).
    pub check: &'static str,
    /// What it is about (`template 3`, `coupon 17`, `order o-1`, ...).
    pub subject: String,
    pub detail: String,
}
