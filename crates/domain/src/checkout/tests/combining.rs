//! Whole quotes: the best combination, its tie-breaks, and `exclusive_conflict`.

use super::*;
use crate::checkout::discount::{LineDiscount, TemplateUse};
use crate::checkout::eligibility::Reason;
use crate::checkout::quote::{quote, CouponQuote, Quote, QuoteInput};

fn run(order: &Order, coupons: &[Coupon], templates: &[Template]) -> Quote {
    quote_in(order, coupons, templates, Default::default())
}

fn exclusive(d: &mut TemplateDraft) {
    d.stacking = Stacking::Exclusive;
}

/// One item line of 1000.00.
fn shop() -> Order {
    order(vec![line(1, 1, 100_000, 1, LineKind::Item)], None)
}

fn find(q: &Quote, id: i64) -> &CouponQuote {
    q.coupons.iter().find(|c| c.coupon_id.get() == id).unwrap()
}

fn chosen(q: &Quote) -> Vec<i64> {
    q.best.coupons.iter().map(|c| c.coupon_id.get()).collect()
}

const JUL: &str = "2026-07-01T00:00:00Z";
const AUG: &str = "2026-08-01T00:00:00Z";
const SEP: &str = "2026-09-01T00:00:00Z";

#[test]
fn exclusive_beats_a_smaller_stack_and_loses_to_a_larger_one() {
    let o = shop();
    let percent = CouponValue::PercentOff {
        bps: bps(1_000),
        cap: None,
    };
    let coupons = [coupon(1, 1, AUG), coupon(2, 2, AUG), coupon(3, 3, AUG)];
    // Exclusive 300.00 against 100.00 + 10 % of the 900.00 left (90.00) stacked.
    let templates = [
        template(1, amount_off(30_000), exclusive),
        template(2, amount_off(10_000), |_| {}),
        template(3, percent.clone(), |_| {}),
    ];
    let q = run(&o, &coupons, &templates);
    assert_eq!(chosen(&q), vec![1]);
    assert_eq!(
        (q.best.discount, q.best.total_after),
        (m(30_000), m(70_000))
    );
    assert!(find(&q, 1).applicable && find(&q, 1).chosen);
    for id in [2, 3] {
        let c = find(&q, id);
        assert_eq!(c.reasons, vec![Reason::ExclusiveConflict]);
        assert!(!c.applicable && !c.chosen);
        // Its own discount is still shown.
        assert_eq!(c.discount, m(10_000));
    }

    // Exclusive 150.00 against the same 190.00 stack.
    let templates = [
        template(1, amount_off(15_000), exclusive),
        template(2, amount_off(10_000), |_| {}),
        template(3, percent.clone(), |_| {}),
    ];
    let q = run(&o, &coupons, &templates);
    assert_eq!(chosen(&q), vec![2, 3]);
    // Applied in order (equal priorities: lowest template id first): 100.00, then 10 % of
    // the 900.00 left.
    assert_eq!(q.best.discount, m(19_000));
    assert_eq!(
        q.best.lines,
        vec![LineDiscount {
            line: 0,
            amount: m(19_000)
        }]
    );
    assert_eq!(find(&q, 1).reasons, vec![Reason::ExclusiveConflict]);
    assert_eq!(find(&q, 1).discount, m(15_000));
}

#[test]
fn stacked_coupons_never_take_more_than_a_line() {
    // 80.00 then 50.00 off a 100.00 line: the second takes only the 20.00 left.
    let o = order(vec![line(1, 1, 10_000, 1, LineKind::Item)], None);
    let coupons = [coupon(1, 1, JUL), coupon(2, 2, AUG)];
    let templates = [
        template(1, amount_off(8_000), |_| {}),
        template(2, amount_off(5_000), |_| {}),
    ];
    let q = run(&o, &coupons, &templates);
    let taken: Vec<(i64, Money)> = q
        .best
        .coupons
        .iter()
        .map(|c| (c.coupon_id.get(), c.discount))
        .collect();
    assert_eq!(taken, vec![(1, m(8_000)), (2, m(2_000))]);
    assert_eq!(
        (q.best.discount, q.best.total_after),
        (m(10_000), Money::ZERO)
    );
    // Each coupon still reports its own discount.
    assert_eq!(find(&q, 2).discount, m(5_000));

    // A coupon that would add nothing is not spent: 100.00 then 50.00 off a 100.00 line.
    let templates = [
        template(1, amount_off(10_000), |_| {}),
        template(2, amount_off(5_000), |_| {}),
    ];
    let q = run(&o, &coupons, &templates);
    assert_eq!(chosen(&q), vec![1]);
    let second = find(&q, 2);
    assert!(second.applicable && !second.chosen && second.reasons.is_empty());
}

#[test]
fn one_coupon_per_template_the_earliest_expiring() {
    let o = shop();
    let coupons = [
        coupon(5, 1, SEP),
        coupon(4, 1, AUG),
        coupon(3, 1, AUG),
        coupon(9, 2, JUL),
    ];
    let templates = [
        template(1, amount_off(1_000), |_| {}),
        template(2, amount_off(2_000), |_| {}),
    ];
    let q = run(&o, &coupons, &templates);
    // Template 1: coupons 3 and 4 expire first; 3 has the lower id. Applied by template id.
    assert_eq!(chosen(&q), vec![3, 9]);
    assert_eq!(q.best.discount, m(3_000));
    for id in [4, 5] {
        let c = find(&q, id);
        assert!(c.applicable && !c.chosen && c.reasons.is_empty());
    }
    // Listed by coupon id.
    let ids: Vec<i64> = q.coupons.iter().map(|c| c.coupon_id.get()).collect();
    assert_eq!(ids, vec![3, 4, 5, 9]);
}

#[test]
fn ties_go_to_the_earliest_expiring() {
    let o = shop();
    // Two exclusive coupons worth 50.00: the one expiring first wins, whatever its id.
    let templates = [
        template(1, amount_off(5_000), exclusive),
        template(2, amount_off(5_000), exclusive),
    ];
    let q = run(&o, &[coupon(1, 1, AUG), coupon(2, 2, JUL)], &templates);
    assert_eq!(chosen(&q), vec![2]);
    assert_eq!(find(&q, 1).reasons, vec![Reason::ExclusiveConflict]);
    // Same expiry: the lower id.
    let q = run(&o, &[coupon(1, 1, AUG), coupon(2, 2, AUG)], &templates);
    assert_eq!(chosen(&q), vec![1]);

    // An exclusive 50.00 against a stack of 20.00 + 30.00: sorted (valid_until, id) lists
    // compared. Stack [(JUL, 2), (SEP, 3)] < [(AUG, 1)]: the stack wins.
    let templates = [
        template(1, amount_off(5_000), exclusive),
        template(2, amount_off(2_000), |_| {}),
        template(3, amount_off(3_000), |_| {}),
    ];
    let q = run(
        &o,
        &[coupon(1, 1, AUG), coupon(2, 2, JUL), coupon(3, 3, SEP)],
        &templates,
    );
    assert_eq!(chosen(&q), vec![2, 3]);
    // Exclusive [(JUL, 1)] < stack [(AUG, 2), (SEP, 3)]: the exclusive wins.
    let q = run(
        &o,
        &[coupon(1, 1, JUL), coupon(2, 2, AUG), coupon(3, 3, SEP)],
        &templates,
    );
    assert_eq!(chosen(&q), vec![1]);
    assert_eq!(find(&q, 2).reasons, vec![Reason::ExclusiveConflict]);
    // Same expiry: the lower id decides, (JUL, 1) < (JUL, 2).
    let q = run(
        &o,
        &[coupon(1, 1, JUL), coupon(2, 2, JUL), coupon(3, 3, SEP)],
        &templates,
    );
    assert_eq!(chosen(&q), vec![1]);
}

#[test]
fn conflicts_only_for_applicable_coupons() {
    let o = shop();
    let templates = [
        template(1, amount_off(30_000), exclusive),
        template(2, amount_off(10_000), exclusive),
        template(3, amount_off(10_000), |_| {}),
    ];
    let used = Coupon {
        stored_status: CouponStatus::Used,
        ..coupon(2, 2, AUG)
    };
    let q = run(
        &o,
        &[coupon(1, 1, AUG), used, coupon(3, 3, AUG)],
        &templates,
    );
    assert_eq!(chosen(&q), vec![1]);
    assert_eq!(find(&q, 2).reasons, vec![Reason::Used]);
    assert_eq!(find(&q, 2).discount, Money::ZERO);
    assert_eq!(find(&q, 3).reasons, vec![Reason::ExclusiveConflict]);

    // Nothing usable: an empty combination and no conflicts.
    let q = run(&o, &[coupon(1, 1, "2026-05-01T00:00:00Z")], &templates);
    assert_eq!(q.best.coupons, vec![]);
    assert_eq!(
        (q.best.discount, q.best.total_after),
        (Money::ZERO, m(100_000))
    );
    assert_eq!(find(&q, 1).reasons, vec![Reason::Expired]);
    let q = run(&o, &[], &templates);
    assert_eq!(q.coupons, vec![]);
    assert_eq!(q.order_total, m(100_000));
}

#[test]
fn a_lease_combination_sums_the_schedules() {
    // 7 free days upfront (700.00) + a deposit waiver capped at 1200.00 spread (100.00 a
    // month) on the 12-month lease.
    let o = rental();
    let templates = [
        template(1, CouponValue::FreeDays { days: 7 }, |_| {}),
        template(
            2,
            CouponValue::DepositWaiver {
                cap: Some(m(120_000)),
            },
            |d| d.deduction = DeductionMode::Spread,
        ),
    ];
    let q = run(&o, &[coupon(1, 1, AUG), coupon(2, 2, AUG)], &templates);
    assert_eq!(chosen(&q), vec![1, 2]);
    assert_eq!(q.best.discount, m(190_000));
    let mut want = vec![m(10_000); 12];
    want[0] = m(80_000);
    assert_eq!(q.best.schedule, want);
    assert_eq!(
        q.best.lines,
        vec![
            LineDiscount {
                line: 0,
                amount: m(70_000)
            },
            LineDiscount {
                line: 1,
                amount: m(120_000)
            }
        ]
    );
    assert_eq!(q.best.total_after, m(3_900_000 - 190_000));
    // An empty combination on a lease still has one (zero) entry per month.
    let q = run(&o, &[], &templates);
    assert_eq!(q.best.schedule, vec![Money::ZERO; 12]);
}

#[test]
fn refuses_inconsistent_input() {
    let o = shop();
    let tpl = template(1, amount_off(1_000), |_| {});
    let uses = [TemplateUse {
        template: &tpl,
        given: Money::ZERO,
    }];
    let field = |coupons: &[Coupon], templates: &[TemplateUse<'_>]| {
        quote(&QuoteInput {
            order: &o,
            now: now(),
            coupons,
            templates,
            situation: Default::default(),
        })
        .unwrap_err()
        .field
        .unwrap()
    };
    assert_eq!(field(&[coupon(1, 2, AUG)], &uses), "coupons[0].template_id");
    assert_eq!(
        field(&[coupon(1, 1, AUG), coupon(1, 1, SEP)], &uses),
        "coupons[1].id"
    );
    assert_eq!(
        field(&[coupon(1, 1, AUG)], &[uses[0], uses[0]]),
        "templates[1]"
    );
}

/// A coupon that takes nothing off this order (a special price above the price) is not
/// `applicable`: the quote says `redundant`, as a lock of it would, instead of `applicable`
/// with a discount of 0.
#[test]
fn a_coupon_that_takes_nothing_is_redundant_in_the_quote() {
    let o = shop();
    let coupons = [coupon(1, 1, AUG), coupon(2, 2, AUG)];
    let templates = [
        template(1, CouponValue::SpecialPrice { price: m(200_000) }, |_| {}),
        template(2, amount_off(10_000), |_| {}),
    ];
    let q = run(&o, &coupons, &templates);
    let nothing = find(&q, 1);
    assert_eq!(
        (nothing.applicable, &nothing.reasons[..], nothing.discount),
        (false, &[Reason::Redundant][..], Money::ZERO)
    );
    assert!(find(&q, 2).applicable);
    assert_eq!(chosen(&q), vec![2]);
}
