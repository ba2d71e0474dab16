//! Properties: I8 for every discount and combination, the best combination against brute
//! force, and independence from input order.

use proptest::prelude::*;

use super::*;
use crate::checkout::discount::{discount, TemplateUse};
use crate::checkout::eligibility::{eligibility, Reason};
use crate::checkout::quote::{quote, Quote, QuoteInput};
use crate::money::MONEY_MAX;

fn arb_kind() -> impl Strategy<Value = LineKind> {
    prop_oneof![
        3 => Just(LineKind::Item),
        2 => Just(LineKind::Rent),
        1 => Just(LineKind::Deposit),
        1 => Just(LineKind::Shipping),
    ]
}

fn arb_line() -> impl Strategy<Value = LineDraft> {
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

fn arb_order() -> impl Strategy<Value = Order> {
    (
        prop::collection::vec(arb_line(), 1..=6),
        prop::option::weighted(0.6, (0i64..=400_000, 1i64..=13)),
    )
        .prop_map(|(lines, lease)| order(lines, lease))
}

fn arb_value() -> impl Strategy<Value = CouponValue> {
    let cap = || prop::option::of((1i64..=20_000).prop_map(m));
    prop_oneof![
        (1i64..=20_000).prop_map(amount_off),
        (1i64..=10_000, cap()).prop_map(|(b, cap)| CouponValue::PercentOff { bps: bps(b), cap }),
        (1u32..=366).prop_map(|days| CouponValue::FreeDays { days }),
        cap().prop_map(|cap| CouponValue::DepositWaiver { cap }),
        (0i64..=5_000).prop_map(|p| CouponValue::SpecialPrice { price: m(p) }),
    ]
}

fn arb_scope() -> impl Strategy<Value = Scope> {
    let ids = |n: i64| prop::sample::subsequence((1..=n).collect::<Vec<i64>>(), 1..=2);
    prop_oneof![
        3 => Just(Scope::All),
        1 => Just(Scope::Merchant),
        1 => ids(4).prop_map(|v| Scope::Categories {
            ids: v.into_iter().map(|i| CategoryId::new(i).unwrap()).collect()
        }),
        1 => ids(5).prop_map(|v| Scope::Listings {
            ids: v.into_iter().map(|i| ListingId::new(i).unwrap()).collect()
        }),
    ]
}

/// A template with its `given` budget use.
#[derive(Clone, Debug)]
struct Tpl {
    template: Template,
    given: Money,
}

fn arb_templates() -> impl Strategy<Value = Vec<Tpl>> {
    let one = (
        arb_value(),
        prop_oneof![6 => Just(0i64), 1 => 0i64..=20_000],
        arb_scope(),
        prop::bool::weighted(0.7),
        any::<bool>(),
        prop::option::weighted(0.3, (1i64..=20_000, 0i64..=10_000)),
        prop::bool::weighted(0.05),
        prop::bool::weighted(0.05),
    );
    prop::collection::vec(one, 1..=5).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(
                |(i, (value, threshold, scope, stackable, spread, budget, city2, aborted))| {
                    let mut template = template(i as i64 + 1, value, |d| {
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
fn arb_coupons(n: usize) -> impl Strategy<Value = Vec<Coupon>> {
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

fn arb_case() -> impl Strategy<Value = (Order, Vec<Tpl>, Vec<Coupon>, u64)> {
    (arb_order(), arb_templates()).prop_flat_map(|(o, tpls)| {
        let n = tpls.len();
        (Just(o), Just(tpls), arb_coupons(n), any::<u64>())
    })
}

/// Usable coupons only (owned, unused, valid, no threshold, in city), mostly stackable price
/// discounts on one to four purchase lines: their parts overlap, so line caps bind often.
fn arb_stacking_case() -> impl Strategy<Value = (Order, Vec<Tpl>, Vec<Coupon>, u64)> {
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
    ];
    let scope = prop_oneof![
        3 => Just(Scope::All),
        1 => (1i64..=2).prop_map(|c| Scope::Categories { ids: vec![CategoryId::new(c).unwrap()] }),
    ];
    let one = (
        value,
        scope,
        prop::bool::weighted(0.8),
        any::<bool>(),
        prop::option::weighted(0.2, 1i64..=6_000),
    );
    let templates = prop::collection::vec(one, 1..=5).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (value, scope, stackable, spread, budget))| Tpl {
                template: template(i as i64 + 1, value, |d| {
                    d.scope = scope;
                    if !stackable {
                        d.stacking = Stacking::Exclusive;
                    }
                    if spread {
                        d.deduction = DeductionMode::Spread;
                    }
                    d.budget = budget.map(m);
                }),
                given: Money::ZERO,
            })
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

fn uses(tpls: &[Tpl]) -> Vec<TemplateUse<'_>> {
    tpls.iter()
        .map(|t| TemplateUse {
            template: &t.template,
            given: t.given,
        })
        .collect()
}

fn run(o: &Order, tpls: &[Tpl], coupons: &[Coupon]) -> Quote {
    quote(&QuoteInput {
        order: o,
        now: now(),
        coupons,
        templates: &uses(tpls),
    })
    .unwrap()
}

/// Fisher-Yates with a xorshift generator seeded by proptest.
fn shuffle<T>(v: &mut [T], mut seed: u64) {
    for i in (1..v.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

fn sum(v: impl IntoIterator<Item = Money>) -> i64 {
    v.into_iter().map(Money::minor).sum()
}

/// I8 for a whole quote, and the shape of the best combination.
fn check_quote(o: &Order, tpls: &[Tpl], coupons: &[Coupon]) -> Result<(), TestCaseError> {
    let q = run(o, tpls, coupons);
    let amounts = o.amounts();
    let best = &q.best;
    prop_assert_eq!(q.order_total, o.total());
    prop_assert!(best.discount <= o.total());
    prop_assert_eq!(
        best.total_after.minor(),
        o.total().minor() - best.discount.minor()
    );
    prop_assert_eq!(
        sum(best.lines.iter().map(|l| l.amount)),
        best.discount.minor()
    );
    for l in &best.lines {
        prop_assert!(l.amount <= amounts[l.line]);
    }
    prop_assert_eq!(
        sum(best.coupons.iter().map(|c| c.discount)),
        best.discount.minor()
    );
    if let Some(l) = o.lease() {
        prop_assert_eq!(best.schedule.len(), l.months as usize);
        prop_assert_eq!(sum(best.schedule.iter().copied()), best.discount.minor());
    } else {
        prop_assert!(best.schedule.is_empty());
    }
    // Each chosen coupon: applicable, positive, within its own discount line by line,
    // one per template, one exclusive alone or only stackables.
    let tpl_of = |id| tpls.iter().find(|t| t.template.id == id).unwrap();
    let mut seen = Vec::new();
    for a in &best.coupons {
        let cq = q
            .coupons
            .iter()
            .find(|c| c.coupon_id == a.coupon_id)
            .unwrap();
        prop_assert!(cq.chosen && cq.applicable && a.discount > Money::ZERO);
        prop_assert_eq!(sum(a.lines.iter().map(|l| l.amount)), a.discount.minor());
        if o.lease().is_some() {
            prop_assert_eq!(sum(a.schedule.iter().copied()), a.discount.minor());
        } else {
            prop_assert!(a.schedule.is_empty());
        }
        let tu = uses(std::slice::from_ref(tpl_of(a.template_id)))[0];
        let own = discount(o, tu).unwrap();
        for l in &a.lines {
            let part = own
                .lines
                .iter()
                .find(|x| x.line == l.line)
                .map(|x| x.amount);
            prop_assert!(Some(l.amount) <= part);
        }
        prop_assert!(!seen.contains(&a.template_id));
        seen.push(a.template_id);
        if best.coupons.len() > 1 {
            prop_assert_eq!(
                tpl_of(a.template_id).template.spec.stacking,
                Stacking::Stackable
            );
        }
    }
    prop_assert_eq!(
        q.coupons.iter().filter(|c| c.chosen).count(),
        best.coupons.len()
    );
    // Reasons: exactly eligibility's, plus exclusive_conflict for some eligible ones.
    for c in coupons {
        let cq = q.coupons.iter().find(|x| x.coupon_id == c.id).unwrap();
        let tu = uses(std::slice::from_ref(tpl_of(c.template_id)))[0];
        let alone = eligibility(o, now(), c, tu);
        if alone.is_empty() {
            prop_assert!(cq.reasons.is_empty() || cq.reasons == vec![Reason::ExclusiveConflict]);
        } else {
            prop_assert_eq!(&cq.reasons, &alone);
        }
        prop_assert_eq!(cq.applicable, cq.reasons.is_empty());
    }
    Ok(())
}

/// The best combination is at least as good as every valid set of applicable coupons, found
/// by trying them all (at most 2^8), and is reached by one of them.
fn check_brute_force(o: &Order, tpls: &[Tpl], coupons: &[Coupon]) -> Result<(), TestCaseError> {
    let q = run(o, tpls, coupons);
    let amounts = o.amounts();
    let tpl_of = |id| tpls.iter().find(|t| t.template.id == id).unwrap();
    // Applicable coupons with their own allocation over the lines.
    let usable: Vec<(&Coupon, Vec<Money>)> = coupons
        .iter()
        .filter_map(|c| {
            let tu = uses(std::slice::from_ref(tpl_of(c.template_id)))[0];
            if !eligibility(o, now(), c, tu).is_empty() {
                return None;
            }
            let mut parts = vec![Money::ZERO; amounts.len()];
            for l in discount(o, tu)?.lines {
                parts[l.line] = l.amount;
            }
            Some((c, parts))
        })
        .collect();
    let mut best = 0i64;
    for set in 0u32..(1 << usable.len()) {
        let members: Vec<&(&Coupon, Vec<Money>)> = (0..usable.len())
            .filter(|i| set & (1 << i) != 0)
            .map(|i| &usable[i])
            .collect();
        let mut templates: Vec<_> = members.iter().map(|(c, _)| c.template_id).collect();
        templates.sort();
        templates.dedup();
        if templates.len() != members.len() {
            continue;
        }
        let stackable =
            |c: &Coupon| tpl_of(c.template_id).template.spec.stacking == Stacking::Stackable;
        if members.len() > 1 && !members.iter().all(|(c, _)| stackable(c)) {
            continue;
        }
        let total: i64 = (0..amounts.len())
            .map(|i| {
                amounts[i]
                    .minor()
                    .min(members.iter().map(|(_, p)| p[i].minor()).sum())
            })
            .sum();
        prop_assert!(
            q.best.discount.minor() >= total,
            "set {:?} gives {} > best {}",
            set,
            total,
            q.best.discount.minor()
        );
        best = best.max(total);
    }
    prop_assert_eq!(q.best.discount.minor(), best);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn one_discount_keeps_i8((o, tpls, _, _) in arb_case()) {
        let amounts = o.amounts();
        for tu in uses(&tpls) {
            let Some(d) = discount(&o, tu) else { continue };
            let spec = &tu.template.spec;
            // 0 <= discount <= base: the parts are on lines the kind applies to, each at most
            // its line, and sum to the discount.
            prop_assert!(d.discount >= Money::ZERO);
            prop_assert_eq!(sum(d.lines.iter().map(|l| l.amount)), d.discount.minor());
            for l in &d.lines {
                prop_assert!(l.amount > Money::ZERO && l.amount <= amounts[l.line]);
                let kind = o.lines[l.line].kind;
                let ok = match spec.value {
                    CouponValue::FreeDays { .. } => kind == LineKind::Rent,
                    CouponValue::DepositWaiver { .. } => kind == LineKind::Deposit,
                    _ => kind.is_purchase(),
                };
                prop_assert!(ok, "{:?} on a {:?} line", spec.value, kind);
            }
            let mut lines: Vec<usize> = d.lines.iter().map(|l| l.line).collect();
            lines.dedup();
            prop_assert_eq!(lines.len(), d.lines.len());
            // Never more than the value promises or the budget allows.
            match spec.value {
                CouponValue::AmountOff { amount } => prop_assert!(d.discount <= amount),
                CouponValue::PercentOff { cap: Some(c), .. }
                | CouponValue::DepositWaiver { cap: Some(c) } => prop_assert!(d.discount <= c),
                _ => {}
            }
            if let Some(r) = tu.remaining_budget() {
                prop_assert!(d.discount <= r);
            }
            // The schedule: one entry per month, summing to the discount.
            match o.lease() {
                None => prop_assert!(d.schedule.is_empty()),
                Some(l) => {
                    prop_assert_eq!(d.schedule.len(), l.months as usize);
                    prop_assert_eq!(sum(d.schedule.iter().copied()), d.discount.minor());
                }
            }
        }
    }

    #[test]
    fn best_combination_keeps_i8((o, tpls, coupons, _) in arb_case()) {
        check_quote(&o, &tpls, &coupons)?;
    }

    #[test]
    fn best_combination_keeps_i8_when_stacking((o, tpls, coupons, _) in arb_stacking_case()) {
        check_quote(&o, &tpls, &coupons)?;
    }

    #[test]
    fn best_combination_matches_brute_force((o, tpls, coupons, _) in arb_case()) {
        check_brute_force(&o, &tpls, &coupons)?;
    }

    /// Many usable coupons whose parts overlap on the same lines, so line caps bind.
    #[test]
    fn best_combination_matches_brute_force_when_stacking(
        (o, tpls, coupons, _) in arb_stacking_case()
    ) {
        check_brute_force(&o, &tpls, &coupons)?;
    }


    #[test]
    fn quote_ignores_input_order((o, tpls, coupons, seed) in arb_case()) {
        let q = run(&o, &tpls, &coupons);
        let mut shuffled_coupons = coupons.clone();
        shuffle(&mut shuffled_coupons, seed | 1);
        let mut shuffled_tpls = tpls.clone();
        shuffle(&mut shuffled_tpls, seed.rotate_left(17) | 1);
        prop_assert_eq!(run(&o, &shuffled_tpls, &shuffled_coupons), q);
    }

    /// Hostile orders are refused with a field, never a panic; accepted ones add up.
    #[test]
    fn order_validation_never_panics(
        lines in prop::collection::vec(
            (prop_oneof![Just(0i64), Just(MONEY_MAX), 0..MONEY_MAX], any::<i64>(), any::<bool>()),
            0..8),
        lease in prop::option::of((prop_oneof![Just(MONEY_MAX), 0..MONEY_MAX], any::<i64>())),
    ) {
        let draft = OrderDraft {
            user_id: user(),
            city_id: CityId::new(1).unwrap(),
            lines: lines
                .iter()
                .map(|&(unit, qty, listed)| {
                    let mut l = line(1, 1, unit, 1, LineKind::Item);
                    l.quantity = qty;
                    if !listed {
                        l.listing_id = None;
                    }
                    l
                })
                .collect(),
            lease: lease.map(|(r, months)| crate::checkout::order::LeaseDraft {
                monthly_rent: m(r),
                months,
            }),
        };
        match Order::try_from(draft) {
            Ok(o) => {
                let total: i128 = o.amounts().iter().map(|a| i128::from(a.minor())).sum();
                prop_assert_eq!(total, i128::from(o.total().minor()));
                for (l, a) in o.lines.iter().zip(o.amounts()) {
                    prop_assert_eq!(i128::from(a.minor()),
                        i128::from(l.unit_price.minor()) * i128::from(l.quantity));
                }
            }
            Err(e) => prop_assert!(e.field.is_some()),
        }
    }
}
