//! Proptest strategies for checkout: small orders (every line kind, two merchants, product
//! lines), every coupon kind, scopes, templates and wallets.

use proptest::prelude::*;

use super::*;
use crate::coupon::{Exclusions, Gift, Priority, Scope, StackingGroup, MAX_PRIORITY};
use crate::rules::{Condition, Fact, Op};

pub(super) fn arb_kind() -> impl Strategy<Value = LineKind> {
    prop_oneof![
        3 => Just(LineKind::Item),
        2 => Just(LineKind::Rent),
        1 => Just(LineKind::Deposit),
        1 => Just(LineKind::Shipping),
    ]
}

pub(super) fn arb_line() -> impl Strategy<Value = LineDraft> {
    (
        1i64..=4,
        1i64..=3,
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.1),
        0i64..=5_000,
        1i64..=4,
        arb_kind(),
    )
        .prop_map(|(listing, category, other, product, unit, qty, kind)| {
            let mut l = line(listing, category, unit, qty, kind);
            if other {
                l.merchant_id = MerchantId::new(8).unwrap();
            }
            if product {
                l.listing_id = None;
                l.product_id = Some(format!("p-{listing}"));
            }
            l
        })
}

pub(super) fn arb_order() -> impl Strategy<Value = Order> {
    (
        prop::collection::vec(arb_line(), 1..=6),
        prop::option::weighted(0.6, (0i64..=400_000, 1i64..=13)),
    )
        .prop_map(|(lines, lease)| order(lines, lease))
}

/// A gift naming what `arb_line` makes: products `p-1`..`p-4`, listings 1..4, categories
/// 1..3 (and one that matches nothing).
pub(super) fn arb_gift() -> impl Strategy<Value = Gift> {
    prop_oneof![
        3 => Just(Gift::Cheapest),
        1 => (1i64..=5).prop_map(|i| Gift::Product { product_id: format!("p-{i}") }),
        1 => (1i64..=4).prop_map(|i| Gift::Listing { id: ListingId::new(i).unwrap() }),
        1 => (1i64..=3).prop_map(|i| Gift::Category { id: CategoryId::new(i).unwrap() }),
    ]
}

/// Small `buy_x_get_y` terms, so that a few lines of a few units make applications.
pub(super) fn arb_bxgy() -> impl Strategy<Value = CouponValue> {
    (
        1u32..=3,
        1u32..=2,
        arb_gift(),
        prop::option::weighted(0.4, 1u32..=3),
    )
        .prop_map(|(buy, get, gift, max_applications)| CouponValue::BuyXGetY {
            buy,
            get,
            gift,
            max_applications,
        })
}

pub(super) fn arb_value() -> impl Strategy<Value = CouponValue> {
    let cap = || prop::option::of((1i64..=20_000).prop_map(m));
    prop_oneof![
        (1i64..=20_000).prop_map(amount_off),
        (1i64..=10_000, cap()).prop_map(|(b, cap)| CouponValue::PercentOff { bps: bps(b), cap }),
        (1u32..=366).prop_map(|days| CouponValue::FreeDays { days }),
        cap().prop_map(|cap| CouponValue::DepositWaiver { cap }),
        (0i64..=5_000).prop_map(|p| CouponValue::SpecialPrice { price: m(p) }),
        prop::option::of((1i64..=3_000).prop_map(m))
            .prop_map(|cap| CouponValue::FreeShipping { cap }),
        arb_bxgy(),
    ]
}

/// Exclusions of some categories (of 4) and merchants (of 2), in 3 scopes of 10.
pub(super) fn arb_exclusions() -> impl Strategy<Value = Exclusions> {
    let some = |n: i64| prop::sample::subsequence((1..=n).collect::<Vec<i64>>(), 0..=1);
    prop::option::weighted(0.3, (some(4), some(2))).prop_map(|e| match e {
        None => Exclusions::default(),
        Some((cats, merchants)) => Exclusions::new(
            vec![],
            cats.into_iter()
                .map(|i| CategoryId::new(i).unwrap())
                .collect(),
            vec![],
            merchants
                .into_iter()
                .map(|i| MerchantId::new(i).unwrap())
                .collect(),
        ),
    })
}

pub(super) fn arb_scope() -> impl Strategy<Value = Scope> {
    (arb_coverage(), arb_exclusions()).prop_map(|(coverage, exclude)| Scope { coverage, exclude })
}

fn arb_coverage() -> impl Strategy<Value = Coverage> {
    let ids = |n: i64| prop::sample::subsequence((1..=n).collect::<Vec<i64>>(), 1..=2);
    prop_oneof![
        3 => Just(Coverage::All),
        1 => Just(Coverage::Merchant),
        1 => ids(4).prop_map(|v| Coverage::Categories {
            ids: v.into_iter().map(|i| CategoryId::new(i).unwrap()).collect()
        }),
        1 => ids(5).prop_map(|v| Coverage::Listings {
            ids: v.into_iter().map(|i| ListingId::new(i).unwrap()).collect()
        }),
    ]
}

/// A condition tree on the order's facts (the customer is not read in these tests, so its
/// tests never hold), at most 4 levels deep.
pub(super) fn arb_condition() -> impl Strategy<Value = Condition> {
    use serde_json::json;
    let leaf = prop_oneof![
        (0i64..=20_000).prop_map(|v| Condition::test(Fact::OrderSubtotal, Op::Gte, json!(v))),
        (1i64..=6).prop_map(|v| Condition::test(Fact::OrderQuantity, Op::Gte, json!(v))),
        (1i64..=6).prop_map(|v| Condition::test(Fact::OrderQuantity, Op::Lt, json!(v))),
        (1i64..=2).prop_map(|v| Condition::test(Fact::OrderCityId, Op::Eq, json!(v))),
        Just(Condition::test(
            Fact::OrderWeekday,
            Op::In,
            json!(["mon", "sun"])
        )),
        Just(Condition::test(
            Fact::OrderLocalTime,
            Op::Between,
            json!(["00:00", "12:00"])
        )),
        Just(Condition::test(
            Fact::CustomerFirstOrder,
            Op::Eq,
            json!(true)
        )),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..=3).prop_map(Condition::All),
            prop::collection::vec(inner.clone(), 1..=3).prop_map(Condition::Any),
            inner.prop_map(|c| Condition::Not(Box::new(c))),
        ]
    })
}

/// A stacking group (of two, or none) and a priority (of a few, so ties happen).
pub(super) fn arb_place() -> impl Strategy<Value = (Option<StackingGroup>, Priority)> {
    let group = prop_oneof![
        2 => Just(None),
        1 => Just(Some(StackingGroup::parse("a").unwrap())),
        1 => Just(Some(StackingGroup::parse("b").unwrap())),
    ];
    let priority = prop_oneof![2 => Just(0u16), 1 => 1u16..=3, 1 => Just(MAX_PRIORITY)]
        .prop_map(|p| Priority::new(p).unwrap());
    (group, priority)
}

/// A template with its `given` budget use.
#[derive(Clone, Debug)]
pub(super) struct Tpl {
    pub(super) template: Template,
    pub(super) given: Money,
}

pub(super) fn arb_templates() -> impl Strategy<Value = Vec<Tpl>> {
    let one = (
        arb_value(),
        prop_oneof![6 => Just(0i64), 1 => 0i64..=20_000],
        arb_scope(),
        prop::bool::weighted(0.7),
        any::<bool>(),
        prop::option::weighted(0.3, (1i64..=20_000, 0i64..=10_000)),
        prop::bool::weighted(0.05),
        prop::bool::weighted(0.05),
        prop::option::weighted(0.3, arb_condition()),
        arb_place(),
    );
    prop::collection::vec(one, 1..=5).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(
                |(
                    i,
                    (
                        value,
                        threshold,
                        scope,
                        stackable,
                        spread,
                        budget,
                        city2,
                        aborted,
                        when,
                        place,
                    ),
                )| {
                    let mut template = template(i as i64 + 1, value, |d| {
                        (d.stacking_group, d.priority) = place;
                        d.conditions = when;
                        d.threshold = m(threshold);
                        d.scope = scope;
                        d.stacking = if stackable {
                            Stacking::Stackable
                        } else {
                            Stacking::Exclusive
                        };
                        if spread {
                            d.deduction = DeductionMode::Spread;
                        }
                        d.budget = budget.map(|(b, _)| m(b));
                        if city2 {
                            d.cities = CitySet::new(vec![CityId::new(2).unwrap()]).unwrap();
                        }
                    });
                    if aborted {
                        template.aborted_at = Some(t("2026-05-15T00:00:00Z"));
                    }
                    Tpl {
                        template,
                        given: m(budget.map_or(0, |(_, g)| g)),
                    }
                },
            )
            .collect()
    })
}

/// Up to 8 coupons over `n` templates, with distinct ids and a few shared expiries (so ties
/// happen).
pub(super) fn arb_coupons(n: usize) -> impl Strategy<Value = Vec<Coupon>> {
    let one = (
        0..n,
        prop_oneof![
            1 => Just("2026-05-01T00:00:00Z"),
            3 => Just("2026-07-01T00:00:00Z"),
            3 => Just("2026-08-01T00:00:00Z"),
            3 => Just("2026-09-01T00:00:00Z"),
        ],
        prop_oneof![
            12 => Just(CouponStatus::Unused),
            1 => Just(CouponStatus::Locked),
            1 => Just(CouponStatus::Used),
            1 => Just(CouponStatus::Revoked),
        ],
        prop::bool::weighted(0.05),
    );
    prop::collection::vec(one, 1..=8).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (tpl, until, status, theirs))| {
                // 17 is coprime with 31: distinct ids, not in input order.
                let mut c = coupon((i as i64 * 17) % 31 + 1, tpl as i64 + 1, until);
                c.stored_status = status;
                if theirs {
                    c.user_id = UserId::parse("u-2").unwrap();
                }
                c
            })
            .collect()
    })
}

pub(super) fn arb_case() -> impl Strategy<Value = (Order, Vec<Tpl>, Vec<Coupon>, u64)> {
    (arb_order(), arb_templates()).prop_flat_map(|(o, tpls)| {
        let n = tpls.len();
        (Just(o), Just(tpls), arb_coupons(n), any::<u64>())
    })
}

/// Usable coupons only (owned, unused, valid, no threshold, in city), mostly stackable price
/// discounts (and buy-x-get-y) on one to four purchase lines: their parts overlap, so line
/// caps bind often.
pub(super) fn arb_stacking_case() -> impl Strategy<Value = (Order, Vec<Tpl>, Vec<Coupon>, u64)> {
    let line = (1i64..=2, 1i64..=3_000, 1i64..=3, prop::bool::weighted(0.3)).prop_map(
        |(category, unit, qty, rent)| {
            let kind = if rent { LineKind::Rent } else { LineKind::Item };
            line(category, category, unit, qty, kind)
        },
    );
    let order = (
        prop::collection::vec(line, 1..=4),
        prop::option::weighted(0.3, (0i64..=100_000, 1i64..=13)),
    )
        .prop_map(|(lines, lease)| order(lines, lease));
    let value = prop_oneof![
        3 => (1i64..=6_000).prop_map(amount_off),
        2 => (1i64..=10_000, prop::option::of((1i64..=6_000).prop_map(m)))
            .prop_map(|(b, cap)| CouponValue::PercentOff { bps: bps(b), cap }),
        1 => (0i64..=3_000).prop_map(|p| CouponValue::SpecialPrice { price: m(p) }),
        1 => (1u32..=30).prop_map(|days| CouponValue::FreeDays { days }),
        2 => arb_bxgy(),
    ];
    let coverage = prop_oneof![
        3 => Just(Coverage::All),
        1 => (1i64..=2).prop_map(|c| Coverage::Categories { ids: vec![CategoryId::new(c).unwrap()] }),
    ];
    let scope =
        (coverage, arb_exclusions()).prop_map(|(coverage, exclude)| Scope { coverage, exclude });
    let one = (
        value,
        scope,
        prop::bool::weighted(0.8),
        any::<bool>(),
        prop::option::weighted(0.2, 1i64..=6_000),
        prop::option::weighted(0.3, arb_condition()),
        arb_place(),
    );
    let templates = prop::collection::vec(one, 1..=5).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(
                |(i, (value, scope, stackable, spread, budget, when, place))| Tpl {
                    template: template(i as i64 + 1, value, |d| {
                        (d.stacking_group, d.priority) = place;
                        d.scope = scope;
                        d.conditions = when;
                        if !stackable {
                            d.stacking = Stacking::Exclusive;
                        }
                        if spread {
                            d.deduction = DeductionMode::Spread;
                        }
                        d.budget = budget.map(m);
                    }),
                    given: Money::ZERO,
                },
            )
            .collect::<Vec<_>>()
    });
    (order, templates).prop_flat_map(|(o, tpls)| {
        let n = tpls.len();
        let one_coupon = (
            0..n,
            prop::sample::select(vec![
                "2026-07-01T00:00:00Z",
                "2026-08-01T00:00:00Z",
                "2026-09-01T00:00:00Z",
            ]),
        );
        let coupons = prop::collection::vec(one_coupon, 1..=8).prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(i, (tpl, until))| coupon((i as i64 * 17) % 31 + 1, tpl as i64 + 1, until))
                .collect::<Vec<_>>()
        });
        (Just(o), Just(tpls), coupons, any::<u64>())
    })
}
