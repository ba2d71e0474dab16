//! Coupons held by users (seed `t_coupon`) and the rules of claiming one.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ids::{CouponId, MerchantId, OperatorId, OrderId, TemplateId, UserId};
use crate::money::Money;
use crate::template::{Template, TemplateStatus};
use crate::time::Timestamp;

/// A coupon's status. `locked`, `used` and `revoked` are stored; `expired` is also computed:
/// an unused coupon past its validity is expired whether or not anything wrote that down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CouponStatus {
    Unused,
    /// Held by an order until its lock deadline.
    Locked,
    Used,
    Expired,
    Revoked,
}

impl CouponStatus {
    pub const ALL: [CouponStatus; 5] = [
        CouponStatus::Unused,
        CouponStatus::Locked,
        CouponStatus::Used,
        CouponStatus::Expired,
        CouponStatus::Revoked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CouponStatus::Unused => "unused",
            CouponStatus::Locked => "locked",
            CouponStatus::Used => "used",
            CouponStatus::Expired => "expired",
            CouponStatus::Revoked => "revoked",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// A stored coupon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coupon {
    pub id: CouponId,
    pub template_id: TemplateId,
    pub user_id: UserId,
    /// The stored status; see [`Coupon::status`] for the one to show.
    pub stored_status: CouponStatus,
    pub claimed_at: Timestamp,
    pub valid_from: Timestamp,
    pub valid_until: Timestamp,
    /// The promotion code redeemed for it, if it came from one.
    pub code: Option<String>,
    /// The order holding it (locked) or that used it.
    pub order_id: Option<OrderId>,
    /// While locked: when the lock ends unless confirmed.
    pub locked_until: Option<Timestamp>,
    /// The discount it takes: planned while locked, final once used.
    pub discount: Option<Money>,
    pub used_at: Option<Timestamp>,
}

impl Coupon {
    /// The status at `now`: an unused coupon whose validity ended is expired.
    pub fn status(&self, now: Timestamp) -> CouponStatus {
        match self.stored_status {
            CouponStatus::Unused if now >= self.valid_until => CouponStatus::Expired,
            s => s,
        }
    }
}

/// Who made a change, as written to a coupon's operation log
/// and to events: `platform`, `merchant:<id>`, `service:<key id>` (the service key that
/// asked; `service` in records written before keys were named), `operator:<id>` (a person
/// with an operator account), `user:<id>`, or `system` (the scheduler and sweepers acting on
/// time).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Actor {
    Platform,
    Merchant(MerchantId),
    Service,
    /// The service key with this id (an order service, a gateway).
    ServiceKey(i64),
    /// The operator account with this id (a person, in the console or the API).
    Operator(OperatorId),
    User(UserId),
    System,
    /// An actor this version does not know, as a newer coupond wrote it: kept and shown as
    /// written rather than failing the read (see [`Actor::read`]).
    Other(String),
}

impl Actor {
    /// The stored form, the inverse of [`Actor::parse`].
    pub fn to_text(&self) -> String {
        self.to_string()
    }

    /// A stored actor, tolerant: what [`Actor::parse`] does not know (written by a newer
    /// version) is kept as [`Actor::Other`], up to 200 characters.
    pub fn read(s: &str) -> Actor {
        Actor::parse(s).unwrap_or_else(|| Actor::Other(s.chars().take(200).collect()))
    }

    pub fn parse(s: &str) -> Option<Actor> {
        match s {
            "platform" => Some(Actor::Platform),
            "service" => Some(Actor::Service),
            "system" => Some(Actor::System),
            _ => {
                if let Some(m) = s.strip_prefix("merchant:") {
                    MerchantId::new(m.parse().ok()?).ok().map(Actor::Merchant)
                } else if let Some(o) = s.strip_prefix("operator:") {
                    OperatorId::new(o.parse().ok()?).ok().map(Actor::Operator)
                } else if let Some(k) = s.strip_prefix("service:") {
                    k.parse().ok().filter(|k| *k > 0).map(Actor::ServiceKey)
                } else {
                    UserId::parse(s.strip_prefix("user:")?)
                        .ok()
                        .map(Actor::User)
                }
            }
        }
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Actor::Platform => f.write_str("platform"),
            Actor::Merchant(m) => write!(f, "merchant:{m}"),
            Actor::Service => f.write_str("service"),
            Actor::ServiceKey(k) => write!(f, "service:{k}"),
            Actor::Operator(o) => write!(f, "operator:{o}"),
            Actor::User(u) => write!(f, "user:{u}"),
            Actor::System => f.write_str("system"),
            Actor::Other(s) => f.write_str(s),
        }
    }
}

impl Serialize for Actor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Why a template cannot be claimed now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotClaimable {
    Draft,
    NotStarted,
    Ended,
    Expired,
    Aborted,
}

impl NotClaimable {
    pub fn as_str(self) -> &'static str {
        match self {
            NotClaimable::Draft => "draft",
            NotClaimable::NotStarted => "not_started",
            NotClaimable::Ended => "ended",
            NotClaimable::Expired => "expired",
            NotClaimable::Aborted => "aborted",
        }
    }
}

/// Why a claim was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimRejection {
    /// No stock left.
    SoldOut,
    /// The user already holds the template's per-user limit.
    LimitReached,
    NotClaimable(NotClaimable),
    /// The user is not in the template's audience.
    NotEligible,
    /// The template (or its activity) is paused: claims wait until it is resumed.
    Paused,
}

impl ClaimRejection {
    pub fn code(self) -> &'static str {
        match self {
            ClaimRejection::SoldOut => "sold_out",
            ClaimRejection::LimitReached => "limit_reached",
            ClaimRejection::NotClaimable(_) => "not_claimable",
            ClaimRejection::NotEligible => "not_eligible",
            ClaimRejection::Paused => "paused",
        }
    }
}

/// Why `t` cannot be claimed at `now`, if it cannot.
pub fn not_claimable(t: &Template, now: Timestamp) -> Option<NotClaimable> {
    match t.status(now) {
        TemplateStatus::Active => None,
        // Waiting for (or turned down by) the platform's review: as unpublished as a draft.
        TemplateStatus::Draft | TemplateStatus::PendingApproval | TemplateStatus::Rejected => {
            Some(NotClaimable::Draft)
        }
        TemplateStatus::Scheduled => Some(NotClaimable::NotStarted),
        TemplateStatus::Ended => Some(NotClaimable::Ended),
        TemplateStatus::Expired => Some(NotClaimable::Expired),
        TemplateStatus::Aborted => Some(NotClaimable::Aborted),
    }
}

/// Why `t` refuses claims at `now` before any user is looked at: not claimable, or paused.
pub fn claim_refusal(t: &Template, now: Timestamp) -> Option<ClaimRejection> {
    match not_claimable(t, now) {
        Some(r) => Some(ClaimRejection::NotClaimable(r)),
        None if t.is_paused() => Some(ClaimRejection::Paused),
        None => None,
    }
}

/// Whether `user` may claim `t` at `now`, before stock, the per-user limit and a tag audience
/// (which the database decides).
pub fn check_claim(t: &Template, user: &UserId, now: Timestamp) -> Result<(), ClaimRejection> {
    if let Some(r) = claim_refusal(t, now) {
        return Err(r);
    }
    // A tag audience is decided by the store, in the claim's transaction.
    if t.spec.audience.admits(user) == Some(false) {
        return Err(ClaimRejection::NotEligible);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unused_coupons_expire_by_the_clock() {
        let t = |s: &str| Timestamp::parse(s).unwrap();
        let c = Coupon {
            id: CouponId::new(1).unwrap(),
            template_id: TemplateId::new(1).unwrap(),
            user_id: UserId::parse("u").unwrap(),
            stored_status: CouponStatus::Unused,
            claimed_at: t("2026-01-01T00:00:00Z"),
            valid_from: t("2026-01-01T00:00:00Z"),
            valid_until: t("2026-01-02T00:00:00Z"),
            code: None,
            order_id: None,
            locked_until: None,
            discount: None,
            used_at: None,
        };
        assert_eq!(
            c.status(t("2026-01-01T23:59:59.999999Z")),
            CouponStatus::Unused
        );
        assert_eq!(c.status(t("2026-01-02T00:00:00Z")), CouponStatus::Expired);
        let used = Coupon {
            stored_status: CouponStatus::Used,
            ..c
        };
        assert_eq!(used.status(t("2027-01-01T00:00:00Z")), CouponStatus::Used);
        for s in CouponStatus::ALL {
            assert_eq!(CouponStatus::parse(s.as_str()), Some(s));
        }
    }

    #[test]
    fn actors_round_trip_as_text() {
        for a in [
            Actor::Platform,
            Actor::Merchant(MerchantId::new(7).unwrap()),
            Actor::Service,
            Actor::ServiceKey(12),
            Actor::Operator(OperatorId::new(3).unwrap()),
            Actor::User(UserId::parse("u-1:x").unwrap()),
            Actor::System,
        ] {
            assert_eq!(Actor::parse(&a.to_text()), Some(a.clone()), "{a}");
        }
        for bad in [
            "",
            "merchant:0",
            "merchant:x",
            "user:",
            "root",
            "service:0",
            "operator:0",
        ] {
            assert_eq!(Actor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_actor_from_a_newer_version_is_read_as_written() {
        assert_eq!(Actor::read("service:3"), Actor::ServiceKey(3));
        let newer = Actor::read("robot:7");
        assert_eq!(newer, Actor::Other("robot:7".into()));
        assert_eq!(newer.to_text(), "robot:7");
    }
}
