//! Records for the conformance cases, relative to one fixed instant.

use coupond_domain::{
    ActivityDraft, ActivitySpec, Audience, CityId, CitySet, CouponKind, CouponValue, Coverage,
    DeductionMode, Merchant, MerchantDraft, Money, Stacking, TemplateDraft, Timestamp, Validity,
    Window,
};
use time::Duration;

/// 2026-03-01T00:00:00Z, the suite's "day zero".
pub fn t0() -> Timestamp {
    Timestamp::parse("2026-03-01T00:00:00Z").expect("fixed instant parses")
}

/// `t0` plus `hours`.
pub fn at(hours: i64) -> Timestamp {
    t0().plus(Duration::hours(hours))
}

pub fn window(from_h: i64, to_h: i64) -> Window {
    Window::new(at(from_h), at(to_h)).expect("fixture window is ordered")
}

pub fn cities(ids: &[i64]) -> CitySet {
    CitySet::new(
        ids.iter()
            .map(|c| CityId::new(*c).expect("positive"))
            .collect(),
    )
    .expect("fixture cities are valid")
}

pub fn merchant(name: &str, city_ids: &[i64]) -> MerchantDraft {
    MerchantDraft {
        name: name.to_owned(),
        short_name: name.chars().take(10).collect(),
        cities: cities(city_ids),
    }
}

/// An activity enrolling during hours [enroll_from, enroll_to) and running [run_from, run_to).
pub fn activity(enroll_from: i64, enroll_to: i64, run_from: i64, run_to: i64) -> ActivitySpec {
    ActivitySpec::try_from(ActivityDraft {
        title: "Spring festival".into(),
        description: "Fixture".into(),
        cities: cities(&[1, 2]),
        kind: CouponKind::AmountOff,
        value_min: 100,
        value_max: 5000,
        enrollment: window(enroll_from, enroll_to),
        run: window(run_from, run_to),
        funding: Some(coupond_domain::Funding::PLATFORM),
        funded_by: None,
        approval: Default::default(),
        reference: Default::default(),
    })
    .expect("fixture activity is valid")
}

/// A standalone template claimable during hours [claim_from, claim_to), coupons valid 2 days.
pub fn standalone_template(claim_from: i64, claim_to: i64) -> TemplateDraft {
    TemplateDraft {
        conditions: None,
        use_limits: Vec::new(),
        stacking_group: None,
        rule_id: None,
        priority: Default::default(),
        activity_id: None,
        title: "20 off".into(),
        description: String::new(),
        value: CouponValue::AmountOff {
            amount: Money::new(2000).expect("valid"),
        },
        threshold: Money::new(10_000).expect("valid"),
        deduction: DeductionMode::Spread,
        scope: Coverage::Categories {
            ids: vec![coupond_domain::CategoryId::new(4).expect("positive")],
        }
        .into(),
        cities: cities(&[1]),
        audience: Audience::Everyone,
        total_stock: 100,
        per_user_limit: 2,
        stacking: Stacking::Stackable,
        claim_window: Some(window(claim_from, claim_to)),
        validity: Validity::Relative { days: 2 },
        budget: Some(Money::new(150_000).expect("valid")),
        metadata: serde_json::json!({"campaign": "fixture", "n": 1})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        refund_policy: Default::default(),
        reminder_days_before: None,
        reference: Default::default(),
    }
}

/// Validates `draft` for `owner` at `now` (no activity, or the given one).
pub fn spec(
    draft: TemplateDraft,
    owner: &Merchant,
    activity: Option<&coupond_domain::Activity>,
    now: Timestamp,
) -> coupond_domain::TemplateSpec {
    coupond_domain::TemplateSpec::validate(
        draft,
        coupond_domain::TemplateContext {
            owner: Some(owner),
            activity,
            now,
            freeze: Duration::minutes(5),
            rule: None,
        },
    )
    .expect("fixture template is valid")
}

/// A published standalone template of a new merchant, claimable hours [10, 20), with `stock`
/// and per-user `limit`.
pub async fn claimable_template(
    s: &dyn crate::Store,
    stock: i64,
    limit: u32,
) -> coupond_domain::Template {
    claimable_template_with(s, stock, limit, |_| {}).await
}

/// [`claimable_template`] with its draft changed by `f` first.
pub async fn claimable_template_with(
    s: &dyn crate::Store,
    stock: i64,
    limit: u32,
    f: impl FnOnce(&mut TemplateDraft),
) -> coupond_domain::Template {
    let m = s
        .insert_merchant(&merchant("Claims", &[1, 2]), t0())
        .await
        .expect("insert merchant");
    let mut d = standalone_template(10, 20);
    d.total_stock = stock;
    d.per_user_limit = limit;
    f(&mut d);
    let spec = spec(d, &m, None, t0());
    let new = crate::NewTemplate {
        merchant_id: Some(m.id),
        spec: &spec,
        activity_version: None,
        review: Default::default(),
    };
    let t = s
        .insert_template(&new, t0())
        .await
        .expect("insert template");
    s.publish_template(t.id, t.version, t0())
        .await
        .expect("publish template")
}

/// A claim by the system for `user`, at hour 15 of a template claimable hours [10, 20), its
/// coupon valid hours [15, 40): no key, no code.
pub fn plain_claim(user: &str) -> crate::ClaimRequest {
    crate::ClaimRequest {
        user: coupond_domain::UserId::parse(user).expect("user id"),
        actor: coupond_domain::Actor::System,
        valid_from: at(15),
        valid_until: at(40),
        idempotency: None,
        code: None,
        issuance: None,
        channel: Default::default(),
        source: None,
    }
}

/// For a backend's audit tests: a template of `stock` with coupons claimed for users `a` and
/// `b`, and an audit that finds nothing. The caller then damages the database and calls
/// [`assert_audit_finds`].
pub async fn two_claims_audited_clean(s: &dyn crate::Store, stock: i64) {
    let t = claimable_template(s, stock, 1).await;
    let out = s
        .claim_batch(t.id, &[plain_claim("a"), plain_claim("b")], at(15))
        .await
        .expect("claim");
    assert!(out
        .iter()
        .all(|o| matches!(o, crate::ClaimOutcome::Issued(_))));
    let found = s.audit(at(15), Duration::minutes(1)).await.expect("audit");
    assert_eq!(found, vec![], "the audit before any damage");
}

/// The audit (at the claims' instant of [`two_claims_audited_clean`]) reports `check` after
/// `damage` was done to the database.
pub async fn assert_audit_finds(s: &dyn crate::Store, check: &str, damage: &str) {
    let found = s.audit(at(15), Duration::minutes(1)).await.expect("audit");
    assert!(
        found.iter().any(|v| v.check == check),
        "{damage}: expected `{check}`, found {found:?}"
    );
}
