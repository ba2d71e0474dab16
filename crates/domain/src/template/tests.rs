//! Template validation, patches, rebasing and status at every boundary.

use super::*;
use crate::activity::{ActivityDraft, ActivitySpec, FundedBy};
use crate::coupon::{CouponKind, Coverage};
use crate::ids::CityId;
use proptest::prelude::*;

fn t(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}
fn cities(v: &[i64]) -> CitySet {
    CitySet::new(v.iter().map(|c| CityId::new(*c).unwrap()).collect()).unwrap()
}
fn merchant() -> Merchant {
    Merchant {
        id: MerchantId::new(7).unwrap(),
        name: "M".into(),
        short_name: "M".into(),
        cities: cities(&[1, 2]),
        created_at: t("2026-01-01T00:00:00Z"),
    }
}
fn activity() -> Activity {
    Activity {
        id: ActivityId::new(3).unwrap(),
        spec: ActivitySpec::try_from(ActivityDraft {
            title: "A".into(),
            description: String::new(),
            cities: cities(&[1, 3]),
            kind: CouponKind::AmountOff,
            value_min: 100,
            value_max: 5000,
            enrollment: Window::new(t("2026-03-01T00:00:00Z"), t("2026-03-10T00:00:00Z")).unwrap(),
            run: Window::new(t("2026-03-15T00:00:00Z"), t("2026-03-31T00:00:00Z")).unwrap(),
            funding: None,
            funded_by: Some(FundedBy::Merchant),
            approval: Default::default(),
            reference: Default::default(),
        })
        .unwrap(),
        created_at: t("2026-01-01T00:00:00Z"),
        updated_at: t("2026-01-01T00:00:00Z"),
        aborted_at: None,
        pause: None,
        version: 1,
        enrollment_seq: 0,
    }
}
fn draft(activity: bool) -> TemplateDraft {
    TemplateDraft {
        conditions: None,
        use_limits: Vec::new(),
        stacking_group: None,
        rule_id: None,
        priority: Default::default(),
        activity_id: activity.then(|| ActivityId::new(3).unwrap()),
        title: "20 off".into(),
        description: String::new(),
        value: CouponValue::AmountOff {
            amount: Money::new(2000).unwrap(),
        },
        threshold: Money::ZERO,
        deduction: DeductionMode::Upfront,
        scope: Coverage::All.into(),
        cities: cities(&[1]),
        audience: Audience::Everyone,
        total_stock: 100,
        per_user_limit: 1,
        stacking: Stacking::Exclusive,
        claim_window: (!activity)
            .then(|| Window::new(t("2026-04-01T00:00:00Z"), t("2026-04-10T00:00:00Z")).unwrap()),
        validity: Validity::Relative { days: 30 },
        budget: None,
        metadata: Default::default(),
        refund_policy: Default::default(),
        reminder_days_before: None,
        reference: Default::default(),
    }
}
const FREEZE: Duration = Duration::minutes(5);

fn check(d: TemplateDraft, now: &str) -> Result<TemplateSpec, DomainError> {
    let (m, a) = (merchant(), activity());
    TemplateSpec::validate(
        d,
        TemplateContext {
            owner: Some(&m),
            activity: Some(&a),
            now: t(now),
            freeze: FREEZE,
            rule: None,
        },
    )
}

#[test]
fn activity_template_fits_its_activity() {
    let spec = check(draft(true), "2026-03-05T00:00:00Z").unwrap();
    assert_eq!(spec.claim_window(), activity().spec.run);

    let mut d = draft(true);
    d.value = CouponValue::PercentOff {
        bps: crate::BasisPoints::new(100).unwrap(),
        cap: None,
    };
    assert_eq!(
        check(d, "2026-03-05T00:00:00Z").unwrap_err().code,
        "kind_mismatch"
    );

    let mut d = draft(true);
    d.value = CouponValue::AmountOff {
        amount: Money::new(5001).unwrap(),
    };
    assert_eq!(
        check(d, "2026-03-05T00:00:00Z").unwrap_err().code,
        "value_out_of_bounds"
    );

    let mut d = draft(true);
    d.cities = cities(&[2]);
    assert_eq!(
        check(d, "2026-03-05T00:00:00Z").unwrap_err().code,
        "cities_out_of_bounds"
    );

    let mut d = draft(true);
    d.cities = cities(&[3]);
    assert_eq!(
        check(d, "2026-03-05T00:00:00Z").unwrap_err().code,
        "city_not_served"
    );

    let mut d = draft(true);
    d.claim_window =
        Some(Window::new(t("2026-03-14T00:00:00Z"), t("2026-03-20T00:00:00Z")).unwrap());
    assert_eq!(
        check(d, "2026-03-05T00:00:00Z").unwrap_err().code,
        "window_out_of_bounds"
    );

    assert_eq!(
        check(draft(true), "2026-02-05T00:00:00Z").unwrap_err().code,
        "enrollment_closed"
    );
    assert_eq!(
        check(draft(true), "2026-03-10T00:00:00Z").unwrap_err().code,
        "activity_frozen"
    );
    assert_eq!(
        check(draft(true), "2026-03-20T00:00:00Z").unwrap_err().code,
        "enrollment_closed"
    );
}

#[test]
fn metadata_refuses_nul_anywhere() {
    let mut d = draft(false);
    d.metadata = serde_json::json!({"a": ["ok", {"b": "x\u{0}y"}]})
        .as_object()
        .unwrap()
        .clone();
    assert_eq!(
        check(d, "2026-03-05T00:00:00Z").unwrap_err().code,
        "invalid_characters"
    );
    let mut d = draft(false);
    d.metadata = serde_json::json!({"k\u{0}": 1})
        .as_object()
        .unwrap()
        .clone();
    assert_eq!(
        check(d, "2026-03-05T00:00:00Z")
            .unwrap_err()
            .field
            .as_deref(),
        Some("metadata")
    );
}

#[test]
fn standalone_template_needs_a_claim_window() {
    let mut d = draft(false);
    d.claim_window = None;
    let err = check(d, "2026-03-05T00:00:00Z").unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        ("required", Some("claim_window"))
    );
    let mut d = draft(false);
    d.validity = Validity::Fixed {
        from: t("2026-04-01T00:00:00Z"),
        until: t("2026-04-05T00:00:00Z"),
    };
    assert_eq!(
        check(d, "2026-03-05T00:00:00Z")
            .unwrap_err()
            .field
            .as_deref(),
        Some("validity.until")
    );
    let mut d = draft(false);
    d.scope = Coverage::Merchant.into();
    let m = merchant();
    assert!(TemplateSpec::validate(
        d.clone(),
        TemplateContext {
            owner: None,
            activity: None,
            now: t("2026-03-05T00:00:00Z"),
            freeze: FREEZE,
            rule: None,
        }
    )
    .is_err());
    assert!(TemplateSpec::validate(
        d,
        TemplateContext {
            owner: Some(&m),
            activity: None,
            now: t("2026-03-05T00:00:00Z"),
            freeze: FREEZE,
            rule: None,
        }
    )
    .is_ok());
}

fn template(d: TemplateDraft, published: bool) -> Template {
    let spec = check(d, "2026-03-05T00:00:00Z").unwrap();
    Template {
        id: TemplateId::new(1).unwrap(),
        merchant_id: Some(MerchantId::new(7).unwrap()),
        spec,
        claimed: 0,
        used: 0,
        given: Money::ZERO,
        reserved: Money::ZERO,
        created_at: t("2026-03-05T00:00:00Z"),
        updated_at: t("2026-03-05T00:00:00Z"),
        published_at: published.then(|| t("2026-03-05T00:00:00Z")),
        aborted_at: None,
        review: Default::default(),
        pause: None,
        version: 1,
    }
}

/// A published standalone template claimable in April 2026, with an instant before, during
/// and after its claim window.
pub(crate) fn fixture() -> (Template, Timestamp, Timestamp, Timestamp) {
    (
        template(draft(false), true),
        t("2026-03-20T00:00:00Z"),
        t("2026-04-05T00:00:00Z"),
        t("2026-04-20T00:00:00Z"),
    )
}

#[test]
fn status_at_every_boundary() {
    let standalone = template(draft(false), true);
    let cases = [
        ("2026-03-31T23:59:59.999999Z", TemplateStatus::Scheduled),
        ("2026-04-01T00:00:00Z", TemplateStatus::Active),
        ("2026-04-09T23:59:59.999999Z", TemplateStatus::Active),
        ("2026-04-10T00:00:00Z", TemplateStatus::Ended),
        // Relative validity of 30 days after the end of claiming.
        ("2026-05-09T23:59:59.999999Z", TemplateStatus::Ended),
        ("2026-05-10T00:00:00Z", TemplateStatus::Expired),
    ];
    for (at, want) in cases {
        assert_eq!(standalone.status(t(at)), want, "at {at}");
    }
    let unpublished = template(draft(false), false);
    assert_eq!(
        unpublished.status(t("2026-04-05T00:00:00Z")),
        TemplateStatus::Draft
    );
    let in_activity = template(draft(true), false);
    assert_eq!(
        in_activity.status(t("2026-03-14T23:59:59.999999Z")),
        TemplateStatus::Scheduled
    );
    assert_eq!(
        in_activity.status(t("2026-03-15T00:00:00Z")),
        TemplateStatus::Active
    );
    let mut aborted = template(draft(false), true);
    aborted.aborted_at = Some(t("2026-04-02T00:00:00Z"));
    assert_eq!(
        aborted.status(t("2026-04-01T00:00:00Z")),
        TemplateStatus::Aborted
    );
}

#[test]
fn patch_keeps_activity_and_clears_budget() {
    let mut d = draft(true);
    d.budget = Some(Money::new(10).unwrap());
    let spec = check(d, "2026-03-05T00:00:00Z").unwrap();
    let p: TemplatePatch = serde_json::from_str(r#"{"budget": null, "title": "New"}"#).unwrap();
    let patched = p.apply(&spec);
    assert_eq!(patched.budget, None);
    assert_eq!(patched.title, "New");
    assert_eq!(patched.activity_id, spec.activity_id);
    assert!(serde_json::from_str::<TemplatePatch>(r#"{"activity_id": 4}"#).is_err());
    assert!(serde_json::from_str::<TemplatePatch>(r#"{"claimed": 4}"#).is_err());
}

proptest! {
    #[test]
    fn status_is_monotonic(start in 0i64..1_000_000, len in 1i64..1_000_000, days in 1u32..100,
                           a in 0i64..20_000_000, b in 0i64..20_000_000) {
        let base = 1_800_000_000_000_000i64;
        let ts = |s: i64| Timestamp::from_unix_micros(base + s * 1_000_000).unwrap();
        let mut d = draft(false);
        d.claim_window = Some(Window::new(ts(start), ts(start + len)).unwrap());
        d.validity = Validity::Relative { days };
        let tpl = template(d, true);
        let rank = |s: TemplateStatus| TemplateStatus::ALL.iter().position(|x| *x == s).unwrap();
        let (lo, hi) = (a.min(b), a.max(b));
        prop_assert!(rank(tpl.status(ts(lo))) <= rank(tpl.status(ts(hi))));
        prop_assert_eq!(tpl.status(ts(lo)) == TemplateStatus::Active,
            tpl.spec.claim_window().contains(ts(lo)));
    }
}

/// Each state rule of `lifecycle`, at an instant of each status: the code it answers, or
/// `ok`.
#[test]
fn state_rules_by_status() {
    let code = |r: Result<(), DomainError>| r.map_or_else(|e| e.code, |()| "ok");
    let published = template(draft(false), true);
    let rows = [
        // (instant, editable, publishable, abortable, codes, issuing, bindable): scheduled (its
        // terms may still change), active, ended, expired.
        (
            "2026-03-06T00:00:00Z",
            ["ok", "not_draft", "ok", "ok", "ok", "ok"],
        ),
        (
            "2026-04-05T00:00:00Z",
            ["not_editable", "not_draft", "ok", "ok", "ok", "ok"],
        ),
        (
            "2026-04-20T00:00:00Z",
            [
                "not_editable",
                "not_draft",
                "ok",
                "ok",
                "not_claimable",
                "ok",
            ],
        ),
        (
            "2026-05-20T00:00:00Z",
            [
                "not_editable",
                "not_draft",
                "already_final",
                "already_final",
                "not_claimable",
                "template_not_bindable",
            ],
        ),
    ];
    for (at, want) in rows {
        let now = t(at);
        let got = [
            code(published.check_editable(now)),
            code(published.check_publishable(now)),
            code(published.check_abortable(now, None)),
            code(published.check_codes_open(now)),
            code(published.check_issuing(now)),
            code(published.check_bindable(now)),
        ];
        assert_eq!(got, want, "at {at}");
    }
    let draft_t = template(draft(false), false);
    let before = t("2026-03-06T00:00:00Z");
    assert_eq!(code(draft_t.check_editable(before)), "ok");
    assert_eq!(code(draft_t.check_publishable(before)), "ok");
    assert_eq!(
        code(draft_t.check_publishable(t("2026-04-10T00:00:00Z"))),
        "claim_window_passed"
    );
    let enrolled = template(draft(true), false);
    assert_eq!(code(enrolled.check_publishable(before)), "not_standalone");
    assert_eq!(
        code(enrolled.check_abortable(before, Some(ActivityStatus::Frozen))),
        "activity_frozen"
    );
    assert_eq!(code(enrolled.check_abortable(before, None)), "ok");
}

/// An activity taking `kind` coupons with values in `[min, max]`.
fn activity_of(kind: CouponKind, min: i64, max: i64) -> Activity {
    let mut a = activity();
    let mut d = a.spec.clone().into_draft();
    (d.kind, d.value_min, d.value_max) = (kind, min, max);
    a.spec = ActivitySpec::try_from(d).unwrap();
    a
}

#[test]
fn new_kinds_fit_activity_bounds() {
    let check_in = |value: CouponValue, a: &Activity| {
        let mut d = draft(true);
        d.value = value;
        let m = merchant();
        TemplateSpec::validate(
            d,
            TemplateContext {
                owner: Some(&m),
                activity: Some(a),
                now: t("2026-03-05T00:00:00Z"),
                freeze: FREEZE,
                rule: None,
            },
        )
        .map(|_| ())
        .map_err(|e| e.code)
    };
    // Free shipping: the cap is the magnitude; uncapped is unbounded.
    let a = activity_of(CouponKind::FreeShipping, 0, 2_000);
    let cap = |c: Option<i64>| CouponValue::FreeShipping {
        cap: c.map(|c| Money::new(c).unwrap()),
    };
    assert_eq!(check_in(cap(Some(1_500)), &a), Ok(()));
    assert_eq!(check_in(cap(Some(2_001)), &a), Err("value_out_of_bounds"));
    assert_eq!(check_in(cap(None), &a), Err("value_out_of_bounds"));
    // Buy-x-get-y: free units per order, get × max_applications.
    let a = activity_of(CouponKind::BuyXGetY, 1, 6);
    let bxgy = |get, max_applications| CouponValue::BuyXGetY {
        buy: 2,
        get,
        gift: crate::coupon::Gift::Cheapest,
        max_applications,
    };
    assert_eq!(check_in(bxgy(2, Some(3)), &a), Ok(()));
    assert_eq!(check_in(bxgy(1, Some(7)), &a), Err("value_out_of_bounds"));
    assert_eq!(check_in(bxgy(1, None), &a), Err("value_out_of_bounds"));
    assert_eq!(check_in(cap(Some(1)), &a), Err("kind_mismatch"));
    // The value's own rules come first.
    assert_eq!(check_in(bxgy(0, Some(3)), &a), Err("invalid_value"));
}

/// An enrollment waiting for approval is neither public nor claimable nor issuable; approved,
/// it follows its activity's run; rejected, it keeps the reason; any edit asks again.
#[test]
fn review_gates_an_enrollment() {
    let mut pending = template(draft(true), false);
    pending.review = Review::Pending;
    let running = t("2026-03-20T00:00:00Z");
    assert_eq!(pending.status(running), TemplateStatus::PendingApproval);
    assert!(!pending.is_public());
    assert!(pending.check_issuing(running).is_err());
    assert!(pending.check_editable(running).is_ok());

    let early = t("2026-03-06T00:00:00Z");
    let approved = pending.check_review(Decision::Approve, early).unwrap();
    let mut t2 = pending.clone();
    t2.review = approved.clone();
    assert!(t2.is_public());
    assert_eq!(t2.status(running), TemplateStatus::Active);
    assert_eq!(
        t2.status_as_of(t("2026-03-05T12:00:00Z")),
        TemplateStatus::PendingApproval
    );
    assert_eq!(approved.after_edit(), Review::Pending);
    let again = t2.check_review(Decision::Approve, early).unwrap_err();
    assert_eq!(again.code, "not_pending");

    let rejected = pending
        .check_review(Decision::reject("  stock too small ").unwrap(), early)
        .unwrap();
    assert_eq!(rejected.reason(), Some("stock too small"));
    pending.review = rejected;
    assert_eq!(pending.status(running), TemplateStatus::Rejected);
    assert!(!pending.is_public());
    assert!(Decision::reject("   ").is_err());
    assert_eq!(Review::NotNeeded.after_edit(), Review::NotNeeded);
}
