//! The coupon centre's answers: a template and an activity as users see them. Each is its own
//! type, built field by field from the record, so nothing of an owner's business (budget,
//! stats, audience, metadata, review, the split of funding) can reach a user by accident.

use coupond_domain::{
    Activity, ActivityId, ActivityStatus, CitySet, CouponKind, CouponValue, DeductionMode,
    MerchantId, Money, Scope, Stacking, TemplateId, TemplateStatus, Timestamp, Validity, Window,
};
use coupond_engine::centre::Offer;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The activity a template belongs to, as users see it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct OfferActivity {
    pub id: ActivityId,
    pub title: String,
}

/// A template as the coupon centre shows it to one user: what a coupon page shows, and what
/// this user may do with it now.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct OfferView {
    pub template_id: TemplateId,
    /// The merchant offering it; absent for the platform's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<MerchantId>,
    /// Computed from the clock at read time; always `active` in the claimable list.
    pub status: TemplateStatus,
    pub title: String,
    pub description: String,
    pub value: CouponValue,
    /// Minimum eligible subtotal, minor units (0 = none).
    pub threshold: Money,
    pub deduction: DeductionMode,
    pub scope: Scope,
    /// Cities the coupon is usable in.
    pub cities: CitySet,
    pub stacking: Stacking,
    /// How long a coupon claimed now is usable.
    pub validity: Validity,
    /// When it can be claimed; `end` is when claiming stops.
    pub claim_window: Window,
    /// How many one user may hold.
    pub per_user_limit: u32,
    /// How many this user holds (used, expired and revoked ones count toward the limit).
    pub held: u32,
    /// Coupons left to claim (0 once sold out).
    pub remaining: i64,
    pub sold_out: bool,
    /// Whether a claim now would be taken: claimable, stock left, under the per-user limit.
    pub can_claim: bool,
    /// The activity it belongs to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity: Option<OfferActivity>,
}

impl OfferView {
    pub fn new(o: &Offer, now: Timestamp) -> Self {
        let t = &o.template;
        let spec = &t.spec;
        OfferView {
            template_id: t.id,
            merchant_id: t.merchant_id,
            status: t.status(now),
            title: spec.title.clone(),
            description: spec.description.clone(),
            value: spec.value.clone(),
            threshold: spec.threshold,
            deduction: spec.deduction,
            scope: spec.scope().clone(),
            cities: spec.cities.clone(),
            stacking: spec.stacking,
            validity: spec.validity.clone(),
            claim_window: spec.claim_window(),
            per_user_limit: spec.per_user_limit,
            held: o.chances.held,
            remaining: o.chances.remaining,
            sold_out: o.chances.sold_out,
            can_claim: o.chances.can_claim,
            activity: spec
                .activity_id
                .zip(o.activity_title.clone())
                .map(|(id, title)| OfferActivity { id, title }),
        }
    }
}

/// A running activity as users see it: what it is, where and until when.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PublicActivityView {
    pub id: ActivityId,
    pub title: String,
    pub description: String,
    /// Cities it covers.
    pub cities: CitySet,
    /// The kind of coupon its templates offer.
    pub kind: CouponKind,
    /// When it runs (its templates are claimable within it).
    pub run: Window,
    /// Computed from the clock at read time: `running` (users see no other).
    pub status: ActivityStatus,
}

impl PublicActivityView {
    pub fn new(a: &Activity, now: Timestamp, freeze: time::Duration) -> Self {
        PublicActivityView {
            id: a.id,
            title: a.spec.title.clone(),
            description: a.spec.description.clone(),
            cities: a.spec.cities.clone(),
            kind: a.spec.kind,
            run: a.spec.run,
            status: a.status(now, freeze),
        }
    }
}
