//! Checkout tests: worked examples (`examples`, `buy_x_get_y`, `combining`) and properties
//! (`props`, with the strategies of `arb`), over the fixtures below.

mod arb;
mod buy_x_get_y;
mod combining;
mod conditions;
mod examples;
mod groups;
mod props;

use crate::checkout::order::{LeaseDraft, LineDraft, LineKind, Order, OrderDraft};
use crate::coupon::{Audience, CouponValue, Coverage, DeductionMode, Stacking, Validity};
use crate::ids::{
    CategoryId, CityId, CitySet, CouponId, ListingId, MerchantId, TemplateId, UserId,
};
use crate::money::{BasisPoints, Money};
use crate::template::{Template, TemplateDraft, TemplateSpec};
use crate::time::{Timestamp, Window};
use crate::wallet::{Coupon, CouponStatus};

/// A quote of `coupons` at [`now`], every template with nothing given yet, in `situation`.
pub(super) fn quote_in(
    order: &Order,
    coupons: &[Coupon],
    templates: &[Template],
    situation: crate::checkout::Situation<'_>,
) -> crate::checkout::Quote {
    let uses: Vec<crate::checkout::TemplateUse<'_>> = templates
        .iter()
        .map(crate::checkout::TemplateUse::of)
        .collect();
    crate::checkout::quote(&crate::checkout::QuoteInput {
        order,
        now: now(),
        coupons,
        templates: &uses,
        situation,
    })
    .unwrap()
}

/// The reasons alone, at UTC, with no customer read: what the examples before conditions
/// check.
pub(super) fn eligible(
    o: &Order,
    now: Timestamp,
    c: &Coupon,
    t: crate::checkout::TemplateUse<'_>,
) -> Vec<crate::checkout::Reason> {
    crate::checkout::eligibility(o, now, crate::checkout::Situation::default(), c, t).0
}

pub(super) fn t(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

pub(super) fn m(v: i64) -> Money {
    Money::new(v).unwrap()
}

pub(super) fn bps(v: i64) -> BasisPoints {
    BasisPoints::new(v).unwrap()
}

/// The instant every example quotes at.
pub(super) fn now() -> Timestamp {
    t("2026-06-01T00:00:00Z")
}

pub(super) fn user() -> UserId {
    UserId::parse("u-1").unwrap()
}

pub(super) const MERCHANT: i64 = 7;

pub(super) fn line(listing: i64, category: i64, unit: i64, qty: i64, kind: LineKind) -> LineDraft {
    LineDraft {
        listing_id: Some(ListingId::new(listing).unwrap()),
        product_id: None,
        merchant_id: MerchantId::new(MERCHANT).unwrap(),
        category_id: CategoryId::new(category).unwrap(),
        unit_price: m(unit),
        quantity: qty,
        kind,
    }
}

pub(super) fn order(lines: Vec<LineDraft>, lease: Option<(i64, i64)>) -> Order {
    Order::try_from(OrderDraft {
        channel: None,
        user_id: user(),
        city_id: CityId::new(1).unwrap(),
        lines,
        lease: lease.map(|(monthly_rent, months)| LeaseDraft {
            monthly_rent: m(monthly_rent),
            months,
        }),
    })
    .unwrap()
}

/// A 12-month lease at 3000.00 a month: line 0 is the rent (3000.00 × 12 months = 36000.00),
/// line 1 the deposit (3000.00). Total 39000.00.
pub(super) fn rental() -> Order {
    order(
        vec![
            line(10, 1, 300_000, 12, LineKind::Rent),
            line(10, 1, 300_000, 1, LineKind::Deposit),
        ],
        Some((300_000, 12)),
    )
}

/// A template of merchant 7 in city 1, claimable in April 2026, `edit` applied to its draft.
pub(super) fn template(
    id: i64,
    value: CouponValue,
    edit: impl FnOnce(&mut TemplateDraft),
) -> Template {
    let mut draft = TemplateDraft {
        activity_id: None,
        title: format!("template {id}"),
        description: String::new(),
        value,
        threshold: Money::ZERO,
        deduction: DeductionMode::Upfront,
        scope: Coverage::All.into(),
        conditions: None,
        use_limits: Vec::new(),
        stacking_group: None,
        rule_id: None,
        priority: Default::default(),
        cities: CitySet::new(vec![CityId::new(1).unwrap()]).unwrap(),
        audience: Audience::Everyone,
        total_stock: 1000,
        per_user_limit: 10,
        stacking: Stacking::Stackable,
        claim_window: None,
        validity: Validity::Relative { days: 365 },
        budget: None,
        metadata: Default::default(),
        refund_policy: Default::default(),
        reminder_days_before: None,
        reference: Default::default(),
    };
    edit(&mut draft);
    let claim = Window::new(t("2026-04-01T00:00:00Z"), t("2026-05-01T00:00:00Z")).unwrap();
    draft.claim_window = Some(claim);
    Template {
        id: TemplateId::new(id).unwrap(),
        merchant_id: Some(MerchantId::new(MERCHANT).unwrap()),
        spec: TemplateSpec::from_stored(draft, claim).unwrap(),
        claimed: 0,
        used: 0,
        given: Money::ZERO,
        reserved: Money::ZERO,
        created_at: t("2026-03-01T00:00:00Z"),
        updated_at: t("2026-03-01T00:00:00Z"),
        published_at: Some(t("2026-03-01T00:00:00Z")),
        aborted_at: None,
        pause: None,
        review: Default::default(),
        version: 1,
    }
}

pub(super) fn amount_off(v: i64) -> CouponValue {
    CouponValue::AmountOff { amount: m(v) }
}

/// An unused coupon of user `u-1`, valid from April 2026 until `until`.
pub(super) fn coupon(id: i64, template: i64, until: &str) -> Coupon {
    Coupon {
        id: CouponId::new(id).unwrap(),
        template_id: TemplateId::new(template).unwrap(),
        user_id: user(),
        stored_status: CouponStatus::Unused,
        claimed_at: t("2026-04-02T00:00:00Z"),
        valid_from: t("2026-04-02T00:00:00Z"),
        valid_until: t(until),
        code: None,
        order_id: None,
        locked_until: None,
        discount: None,
        used_at: None,
    }
}
