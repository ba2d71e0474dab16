//! A quote over a wallet of 200 coupons and a 50-line order (DESIGN §7: well under a
//! millisecond): eligibility of every coupon, every template's discount, and the best
//! combination.
//!
//! `CARGO_TARGET_DIR=... cargo bench -p coupond-domain --bench best_combination`

use std::hint::black_box;

use coupond_domain::{
    quote, Audience, BasisPoints, CategoryId, CityId, CitySet, Coupon, CouponId, CouponStatus,
    CouponValue, Coverage, DeductionMode, Exclusions, Gift, LeaseDraft, LineDraft, LineKind,
    ListingId, MerchantId, Money, Order, OrderDraft, QuoteInput, Stacking, Template, TemplateDraft,
    TemplateId, TemplateSpec, TemplateUse, Timestamp, UserId, Validity, Window,
};
use criterion::{criterion_group, criterion_main, Criterion};

const TEMPLATES: i64 = 24;
const COUPONS: i64 = 200;
const LINES: i64 = 50;
const MIXED_TEMPLATES: i64 = 100;

fn t(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn m(v: i64) -> Money {
    Money::new(v).unwrap()
}

fn user() -> UserId {
    UserId::parse("u-1").unwrap()
}

/// 50 lines: 40 items over 5 categories and two merchants, 5 rent lines, 3 deposits, 2
/// shipping; a 12-month lease.
fn order_draft() -> OrderDraft {
    let lines = (0..LINES)
        .map(|i| {
            let kind = match i {
                0..40 => LineKind::Item,
                40..45 => LineKind::Rent,
                45..48 => LineKind::Deposit,
                _ => LineKind::Shipping,
            };
            let (unit, qty) = match kind {
                LineKind::Item => (1_000 + 137 * i, 1 + i % 3),
                LineKind::Rent => (300_000 + 1_000 * i, 12),
                LineKind::Deposit => (300_000, 1),
                LineKind::Shipping => (1_500, 1),
            };
            LineDraft {
                listing_id: Some(ListingId::new(i + 1).unwrap()),
                product_id: None,
                merchant_id: MerchantId::new(7 + i % 2).unwrap(),
                category_id: CategoryId::new(1 + i % 5).unwrap(),
                unit_price: m(unit),
                quantity: qty,
                kind,
            }
        })
        .collect();
    OrderDraft {
        channel: None,
        user_id: user(),
        city_id: CityId::new(1).unwrap(),
        lines,
        lease: Some(LeaseDraft {
            monthly_rent: m(300_000),
            months: 12,
        }),
    }
}

/// 24 templates cycling through the seven kinds and four scopes, two thirds stackable, some
/// with a threshold or a budget.
fn templates() -> Vec<Template> {
    let claim = Window::new(t("2026-04-01T00:00:00Z"), t("2026-05-01T00:00:00Z")).unwrap();
    (0..TEMPLATES)
        .map(|i| {
            let value = match i % 7 {
                0 => CouponValue::AmountOff {
                    amount: m(2_000 + 500 * i),
                },
                1 => CouponValue::PercentOff {
                    bps: BasisPoints::new(500 + 100 * i).unwrap(),
                    cap: (i % 2 == 0).then(|| m(50_000)),
                },
                2 => CouponValue::FreeDays { days: 3 + i as u32 },
                3 => CouponValue::DepositWaiver {
                    cap: Some(m(100_000 + 10_000 * i)),
                },
                4 => CouponValue::SpecialPrice {
                    price: m(2_000 + 100 * i),
                },
                5 => CouponValue::FreeShipping {
                    cap: (i % 2 == 0).then(|| m(2_000)),
                },
                _ => CouponValue::BuyXGetY {
                    buy: 2,
                    get: 1,
                    gift: if i % 2 == 0 {
                        Gift::Cheapest
                    } else {
                        Gift::Category {
                            id: CategoryId::new(2).unwrap(),
                        }
                    },
                    max_applications: (i % 3 == 0).then_some(3),
                },
            };
            let scope = match i % 4 {
                0 => Coverage::All,
                1 => Coverage::Merchant,
                2 => Coverage::Categories {
                    ids: (1..=3).map(|c| CategoryId::new(c).unwrap()).collect(),
                },
                _ => Coverage::Listings {
                    ids: (1..=LINES)
                        .step_by(2)
                        .map(|l| ListingId::new(l).unwrap())
                        .collect(),
                },
            };
            let draft = TemplateDraft {
                conditions: None,
                use_limits: Vec::new(),
                stacking_group: None,
                rule_id: None,
                priority: Default::default(),
                activity_id: None,
                title: format!("template {i}"),
                description: String::new(),
                value,
                threshold: m(if i % 6 == 0 { 50_000 } else { 0 }),
                deduction: if i % 2 == 0 {
                    DeductionMode::Upfront
                } else {
                    DeductionMode::Spread
                },
                scope: scope.into(),
                cities: CitySet::new(vec![CityId::new(1).unwrap()]).unwrap(),
                audience: Audience::Everyone,
                total_stock: 1_000,
                per_user_limit: 20,
                stacking: if i % 3 == 0 {
                    Stacking::Exclusive
                } else {
                    Stacking::Stackable
                },
                claim_window: Some(claim),
                validity: Validity::Relative { days: 365 },
                budget: (i % 7 == 0).then(|| m(1_000_000)),
                metadata: Default::default(),
                refund_policy: Default::default(),
                reminder_days_before: None,
                reference: Default::default(),
            };
            Template {
                id: TemplateId::new(i + 1).unwrap(),
                merchant_id: Some(MerchantId::new(7).unwrap()),
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
        })
        .collect()
}

/// 200 coupons over the templates, with varied expiries; one in ten locked, used or expired.
fn coupons() -> Vec<Coupon> {
    let base = t("2026-06-02T00:00:00Z").unix_micros();
    (0..COUPONS)
        .map(|i| {
            let until =
                Timestamp::from_unix_micros(base + (i * 7919 % 90) * 86_400_000_000).unwrap();
            Coupon {
                id: CouponId::new(1_000 + i).unwrap(),
                template_id: TemplateId::new(1 + i % TEMPLATES).unwrap(),
                user_id: user(),
                stored_status: match i % 30 {
                    0 => CouponStatus::Locked,
                    1 => CouponStatus::Used,
                    2 => CouponStatus::Expired,
                    _ => CouponStatus::Unused,
                },
                claimed_at: t("2026-04-02T00:00:00Z"),
                valid_from: t("2026-04-02T00:00:00Z"),
                valid_until: until,
                code: None,
                order_id: None,
                locked_until: None,
                discount: None,
                used_at: None,
            }
        })
        .collect()
}

/// The mixed wallet of `coupond loadtest --scenario quote`: 100 templates, amounts and
/// percentages off (half of the percentages capped), every scope but listings, two thirds
/// stackable, thresholds of 0, 50.00, 200.00 and 600.00; two coupons of each.
fn mixed_templates() -> Vec<Template> {
    let mut base = templates().swap_remove(0);
    (0..MIXED_TEMPLATES)
        .map(|i| {
            let mut draft = base.spec.draft().clone();
            draft.value = if i % 2 == 0 {
                CouponValue::AmountOff {
                    amount: m(500 + 50 * i),
                }
            } else {
                CouponValue::PercentOff {
                    bps: BasisPoints::new(500 + 10 * i).unwrap(),
                    cap: (i % 4 == 1).then(|| m(3_000 + 100 * i)),
                }
            };
            draft.threshold = m([0, 5_000, 20_000, 60_000][(i % 4) as usize]);
            draft.scope = match i % 3 {
                0 => Coverage::All,
                1 => Coverage::Merchant,
                _ => Coverage::Categories {
                    ids: vec![CategoryId::new(1 + i % 5).unwrap()],
                },
            }
            .into();
            draft.stacking = if i % 3 == 0 {
                Stacking::Exclusive
            } else {
                Stacking::Stackable
            };
            draft.budget = None;
            base.id = TemplateId::new(i + 1).unwrap();
            base.spec = TemplateSpec::from_stored(draft, base.spec.claim_window()).unwrap();
            base.clone()
        })
        .collect()
}

/// Two unused coupons of each mixed template, with varied expiries.
fn mixed_coupons() -> Vec<Coupon> {
    let mut all = coupons();
    all.truncate(1);
    let one = all.remove(0);
    (0..2 * MIXED_TEMPLATES)
        .map(|i| Coupon {
            id: CouponId::new(5_000 + i).unwrap(),
            template_id: TemplateId::new(1 + i % MIXED_TEMPLATES).unwrap(),
            stored_status: CouponStatus::Unused,
            valid_until: Timestamp::from_unix_micros(
                one.valid_until.unix_micros() + (i * 7919 % 90) * 86_400_000_000,
            )
            .unwrap(),
            ..one.clone()
        })
        .collect()
}

/// The mixed wallet where every template has a 5-test condition tree on the order (as
/// `coupond loadtest --scenario quote --conditions`) and every third excludes two of the
/// lines its category covers.
fn ruled_templates() -> Vec<Template> {
    let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    mixed_templates()
        .into_iter()
        .enumerate()
        .map(|(i, mut t)| {
            let i = i as i64;
            let some_days: Vec<&str> = days
                .iter()
                .enumerate()
                .filter(|(d, _)| *d as i64 != i % 7)
                .map(|(_, d)| *d)
                .collect();
            let spend = [0, 5_000, 20_000, 60_000][(i % 4) as usize];
            let tree = serde_json::json!({"all": [
                {"fact": "order.subtotal", "op": "gte", "value": spend},
                {"fact": "order.quantity", "op": "gte", "value": 1 + i % 20},
                {"any": [
                    {"fact": "order.weekday", "op": "in", "value": some_days},
                    {"fact": "order.channel", "op": "eq", "value": "app"}
                ]},
                {"not": {"fact": "order.city_id", "op": "eq", "value": 2 + i % 3}}
            ]});
            let mut draft = t.spec.draft().clone();
            draft.conditions = Some(serde_json::from_value(tree).unwrap());
            if i % 3 == 2 {
                // Two of the lines its category covers (line k is listing k + 1, category
                // 1 + k % 5).
                let listing = |k: i64| ListingId::new(k + 1).unwrap();
                draft.scope.exclude = Exclusions::new(
                    vec![],
                    vec![],
                    vec![listing(i % 5), listing(i % 5 + 5)],
                    vec![],
                );
            }
            t.spec = TemplateSpec::from_stored(draft, t.spec.claim_window()).unwrap();
            t
        })
        .collect()
}

fn bench_mixed(c: &mut Criterion, order: &Order) {
    bench_wallet(
        c,
        order,
        mixed_templates(),
        "quote/mixed wallet: 100 templates x 2 coupons, 50 lines",
    );
    bench_wallet(
        c,
        order,
        ruled_templates(),
        "quote/mixed wallet with 5-test conditions, a third with exclusions",
    );
}

fn bench_wallet(c: &mut Criterion, order: &Order, templates: Vec<Template>, name: &str) {
    let uses: Vec<TemplateUse<'_>> = templates
        .iter()
        .map(|template| TemplateUse {
            template,
            given: Money::ZERO,
        })
        .collect();
    let coupons = mixed_coupons();
    let input = QuoteInput {
        order,
        now: t("2026-06-01T00:00:00Z"),
        coupons: &coupons,
        templates: &uses,
        situation: Default::default(),
    };
    let q = quote(&input).unwrap();
    assert_eq!(q.coupons.len(), 2 * MIXED_TEMPLATES as usize);
    assert!(q.best.coupons.len() > 1, "a stackable set wins");
    assert!(
        q.coupons.iter().any(|c| !c.applicable),
        "some thresholds are not met"
    );
    c.bench_function(name, |b| b.iter(|| quote(black_box(&input)).unwrap()));
}

fn bench(c: &mut Criterion) {
    let draft = order_draft();
    let order = Order::try_from(draft.clone()).unwrap();
    let templates = templates();
    let uses: Vec<TemplateUse<'_>> = templates
        .iter()
        .enumerate()
        .map(|(i, template)| TemplateUse {
            template,
            given: m(if i % 7 == 0 { 400_000 } else { 0 }),
        })
        .collect();
    let coupons = coupons();
    let now = t("2026-06-01T00:00:00Z");
    let input = QuoteInput {
        order: &order,
        now,
        coupons: &coupons,
        templates: &uses,
        situation: Default::default(),
    };

    // Sanity: the wallet exercises the interesting paths.
    let q = quote(&input).unwrap();
    assert_eq!(q.coupons.len(), COUPONS as usize);
    assert!(q.best.coupons.len() > 1, "a stackable set wins");
    assert!(q.coupons.iter().any(|c| !c.applicable));

    c.bench_function("quote/200 coupons, 50 lines", |b| {
        b.iter(|| quote(black_box(&input)).unwrap())
    });
    c.bench_function("quote/200 coupons, 50 lines, with order validation", |b| {
        b.iter(|| {
            let order = Order::try_from(black_box(draft.clone())).unwrap();
            quote(&QuoteInput {
                order: &order,
                now,
                coupons: &coupons,
                templates: &uses,
                situation: Default::default(),
            })
            .unwrap()
        })
    });
    bench_mixed(c, &order);
}

criterion_group!(benches, bench);
criterion_main!(benches);
