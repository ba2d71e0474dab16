//! Properties: I8 for every discount and combination, the best combination against brute
//! force, buy-x-get-y against a unit-by-unit model, and independence from input order.

use std::collections::VecDeque;

use proptest::prelude::*;

use super::arb::*;
use super::eligible as eligibility;
use super::*;
use crate::checkout::discount::{discount, scope_mask, take_from, terms, TemplateUse};
use crate::checkout::eligibility::Reason;
use crate::checkout::quote::{quote, Quote, QuoteInput};
use crate::money::MONEY_MAX;

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
        situation: Default::default(),
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

/// Buy-x-get-y unit by unit, per line the amount of its free units. Every in-scope purchase
/// unit on its own; applications are formed one at a time while enough units are left: `buy`
/// units paid for (units that are not gifts first, then the dearest gift units) and the `get`
/// cheapest gift units left free.
fn bxgy_model(o: &Order, template: &Template) -> Vec<i64> {
    let CouponValue::BuyXGetY {
        buy,
        get,
        gift,
        max_applications,
    } = &template.spec.value
    else {
        panic!("not a buy_x_get_y template");
    };
    let (buy, get) = (*buy as usize, *get as usize);
    let mask = scope_mask(o, template);
    let mut gifts = Vec::new();
    let mut others = 0usize;
    for (i, l) in o.lines.iter().enumerate() {
        if !mask[i] || !l.kind.is_purchase() {
            continue;
        }
        for _ in 0..l.quantity {
            if gift.matches(l) {
                gifts.push((l.unit_price.minor(), i));
            } else {
                others += 1;
            }
        }
    }
    gifts.sort();
    let mut gifts = VecDeque::from(gifts);
    let mut free = vec![0i64; o.lines.len()];
    let mut applications = 0u32;
    while max_applications.is_none_or(|n| applications < n) {
        let paid_gifts = buy.saturating_sub(others);
        if gifts.len() < paid_gifts + get {
            break;
        }
        others -= buy - paid_gifts;
        for _ in 0..paid_gifts {
            gifts.pop_back();
        }
        for _ in 0..get {
            let (price, line) = gifts.pop_front().unwrap();
            free[line] += price;
        }
        applications += 1;
    }
    free
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
    let mut groups = Vec::new();
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
        // Never more than it gives alone: what the coupons before it left is a smaller base.
        let tu = uses(std::slice::from_ref(tpl_of(a.template_id)))[0];
        prop_assert!(a.discount <= discount(o, tu).unwrap().discount);
        prop_assert!(!seen.contains(&a.template_id));
        seen.push(a.template_id);
        if let Some(g) = &tpl_of(a.template_id).template.spec.stacking_group {
            prop_assert!(!groups.contains(&g), "two coupons of group {}", g);
            groups.push(g);
        }
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
    // Reasons: exactly eligibility's, plus exclusive_conflict for some eligible ones, and
    // redundant for an eligible one that takes nothing off on its own.
    for c in coupons {
        let cq = q.coupons.iter().find(|x| x.coupon_id == c.id).unwrap();
        let tu = uses(std::slice::from_ref(tpl_of(c.template_id)))[0];
        let alone = eligibility(o, now(), c, tu);
        let takes_nothing = discount(o, tu).is_none_or(|d| d.discount == Money::ZERO);
        if alone.is_empty() && takes_nothing {
            prop_assert_eq!(&cq.reasons, &vec![Reason::Redundant]);
        } else if alone.is_empty() {
            prop_assert!(
                cq.reasons.is_empty()
                    || cq.reasons == vec![Reason::ExclusiveConflict]
                    || cq.reasons == vec![Reason::GroupConflict]
            );
        } else {
            prop_assert_eq!(&cq.reasons, &alone);
        }
        prop_assert_eq!(cq.applicable, cq.reasons.is_empty());
    }
    Ok(())
}

/// What `members` (coupons with their templates) take together: applied highest priority
/// first, then lowest template id, each on what the ones before it left.
fn in_order(o: &Order, members: &mut [(&Coupon, TemplateUse<'_>)]) -> i64 {
    members.sort_by_key(|(_, tu)| (std::cmp::Reverse(tu.template.spec.priority), tu.template.id));
    let mut left = o.amounts().to_vec();
    let mut total = 0;
    for (_, tu) in members.iter() {
        let tm = terms(o, *tu);
        for (line, part) in take_from(o, *tu, &tm, &left) {
            assert!(
                part <= left[line],
                "a discount took more than was left of a line"
            );
            left[line] = left[line].saturating_sub(part);
            total += part.minor();
        }
    }
    total
}

/// The best combination against every set the rules allow, tried one by one (at most 2^8):
/// an exclusive coupon alone, or stackable coupons of distinct templates, at most one of each
/// stacking group.
///
/// - Among the sets that take one coupon of every stackable template and one template of each
///   group (what a combination is: a usable stackable discount is never left out), the best is
///   exactly the quote's.
/// - Leaving a coupon out never gains more than rounding: every discount splits over lines
///   by largest remainder, so what it leaves on a line may differ by a minor unit from a
///   proportional share. At most one minor unit per line per coupon of the quote's set.
fn check_brute_force(o: &Order, tpls: &[Tpl], coupons: &[Coupon]) -> Result<(), TestCaseError> {
    let q = run(o, tpls, coupons);
    let tpl_of = |id| tpls.iter().find(|t| t.template.id == id).unwrap();
    let usable: Vec<(&Coupon, TemplateUse<'_>)> = coupons
        .iter()
        .filter_map(|c| {
            let tu = uses(std::slice::from_ref(tpl_of(c.template_id)))[0];
            let gives = discount(o, tu).is_some_and(|d| d.discount > Money::ZERO);
            (eligibility(o, now(), c, tu).is_empty() && gives).then_some((c, tu))
        })
        .collect();
    let stackable = |tu: &TemplateUse<'_>| tu.template.spec.stacking == Stacking::Stackable;
    // Templates with a usable stackable coupon, and the groups among them.
    let mut stack_tpls: Vec<_> = usable
        .iter()
        .filter(|(_, tu)| stackable(tu))
        .map(|(_, tu)| tu.template.id)
        .collect();
    stack_tpls.sort();
    stack_tpls.dedup();
    let group_of = |id| tpl_of(id).template.spec.stacking_group.as_ref();
    let mut all_groups: Vec<_> = stack_tpls.iter().filter_map(|&id| group_of(id)).collect();
    all_groups.sort();
    all_groups.dedup();
    let slack = (o.lines.len() * q.best.coupons.len().max(1)) as i64;
    let (mut best_full, mut best_any) = (0i64, 0i64);
    for set in 0u32..(1 << usable.len()) {
        let mut members: Vec<(&Coupon, TemplateUse<'_>)> = (0..usable.len())
            .filter(|i| set & (1 << i) != 0)
            .map(|i| usable[i])
            .collect();
        let mut templates: Vec<_> = members.iter().map(|(c, _)| c.template_id).collect();
        templates.sort();
        templates.dedup();
        let mut groups: Vec<_> = templates.iter().filter_map(|&id| group_of(id)).collect();
        let grouped = groups.len();
        groups.sort();
        groups.dedup();
        if templates.len() != members.len() || groups.len() != grouped {
            continue;
        }
        let all_stackable = members.iter().all(|(_, tu)| stackable(tu));
        if members.len() > 1 && !all_stackable {
            continue;
        }
        let total = in_order(o, &mut members);
        // Every ungrouped stackable template, and one of each group.
        let full = all_stackable
            && groups == all_groups
            && stack_tpls
                .iter()
                .all(|&id| group_of(id).is_some() || templates.contains(&id));
        if full || (members.len() == 1 && !all_stackable) {
            prop_assert!(
                q.best.discount.minor() >= total,
                "set {:?} gives {} > best {}",
                set,
                total,
                q.best.discount.minor()
            );
            best_full = best_full.max(total);
        }
        prop_assert!(
            total <= q.best.discount.minor() + slack,
            "set {:?} gives {}, more than rounding above the best {}",
            set,
            total,
            q.best.discount.minor()
        );
        best_any = best_any.max(total);
    }
    prop_assert_eq!(q.best.discount.minor(), best_full);
    prop_assert!(best_any >= best_full);
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
                    CouponValue::FreeShipping { .. } => kind == LineKind::Shipping,
                    _ => kind.is_purchase(),
                };
                prop_assert!(ok, "{:?} on a {:?} line", spec.value, kind);
                // An excluded line never takes a discount, whatever the scope covers.
                let line = &o.lines[l.line];
                let e = &spec.scope.exclude;
                prop_assert!(!e.category_ids().contains(&line.category_id));
                prop_assert!(!e.merchant_ids().contains(&line.merchant_id));
            }
            let mut lines: Vec<usize> = d.lines.iter().map(|l| l.line).collect();
            lines.dedup();
            prop_assert_eq!(lines.len(), d.lines.len());
            // Never more than the value promises or the budget allows.
            match spec.value {
                CouponValue::AmountOff { amount } => prop_assert!(d.discount <= amount),
                CouponValue::PercentOff { cap: Some(c), .. }
                | CouponValue::DepositWaiver { cap: Some(c) }
                | CouponValue::FreeShipping { cap: Some(c) } => prop_assert!(d.discount <= c),
                CouponValue::BuyXGetY { .. } => {
                    // Never more than the free units' prices, line by line.
                    let free = bxgy_model(&o, tu.template);
                    prop_assert!(d.discount.minor() <= free.iter().sum::<i64>());
                    for l in &d.lines {
                        prop_assert!(l.amount.minor() <= free[l.line]);
                    }
                }
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

    /// Without a budget, buy-x-get-y takes exactly the free units' prices, line by line.
    #[test]
    fn bxgy_frees_the_cheapest_gift_units(
        o in arb_order(),
        value in arb_bxgy(),
        scope in arb_scope(),
    ) {
        let tpl = template(1, value, |d| d.scope = scope);
        let tu = TemplateUse { template: &tpl, given: Money::ZERO };
        let free = bxgy_model(&o, &tpl);
        match discount(&o, tu) {
            None => prop_assert!(free.iter().all(|&f| f == 0)),
            Some(d) => {
                let lines: Vec<(usize, i64)> =
                    d.lines.iter().map(|l| (l.line, l.amount.minor())).collect();
                let want: Vec<(usize, i64)> =
                    free.iter().copied().enumerate().filter(|&(_, f)| f > 0).collect();
                prop_assert_eq!(lines, want);
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
            channel: None,
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
