//! Stacking groups and priorities: the order discounts apply in, a percentage of what is
//! left, one coupon per group, and `group_conflict`.

use super::*;
use crate::checkout::eligibility::Reason;
use crate::checkout::quote::{CouponQuote, Quote};
use crate::coupon::{Priority, StackingGroup};

const AUG: &str = "2026-08-01T00:00:00Z";

/// One item line of 1000.00.
fn shop() -> Order {
    order(vec![line(1, 1, 100_000, 1, LineKind::Item)], None)
}

fn percent(p: i64) -> CouponValue {
    CouponValue::PercentOff {
        bps: bps(p * 100),
        cap: None,
    }
}

fn in_group(name: &str) -> impl FnOnce(&mut TemplateDraft) + '_ {
    move |d| d.stacking_group = Some(StackingGroup::parse(name).unwrap())
}

fn run(coupons: &[Coupon], templates: &[Template]) -> Quote {
    quote_in(&shop(), coupons, templates, Default::default())
}

fn find(q: &Quote, id: i64) -> &CouponQuote {
    q.coupons.iter().find(|c| c.coupon_id.get() == id).unwrap()
}

/// `(coupon id, what it took)` in the order applied.
fn taken(q: &Quote) -> Vec<(i64, i64)> {
    q.best
        .coupons
        .iter()
        .map(|c| (c.coupon_id.get(), c.discount.minor()))
        .collect()
}

#[test]
fn a_percentage_is_taken_from_what_the_higher_priorities_left() {
    let coupons = [coupon(1, 1, AUG), coupon(2, 2, AUG)];
    // Equal priorities: template 1 (100.00 off) first, then 10 % of the 900.00 left.
    let templates = [
        template(1, amount_off(10_000), |_| {}),
        template(2, percent(10), |_| {}),
    ];
    let q = run(&coupons, &templates);
    assert_eq!(taken(&q), vec![(1, 10_000), (2, 9_000)]);
    assert_eq!(q.best.discount, m(19_000));
    // The percentage first (priority 500): 10 % of 1000.00, then the 100.00.
    let templates = [
        template(1, amount_off(10_000), |_| {}),
        template(2, percent(10), |d| d.priority = Priority::new(500).unwrap()),
    ];
    let q = run(&coupons, &templates);
    assert_eq!(taken(&q), vec![(2, 10_000), (1, 10_000)]);
    assert_eq!(q.best.discount, m(20_000));
    // Each coupon alone still shows its own discount.
    assert_eq!(find(&q, 2).discount, m(10_000));
}

#[test]
fn an_amount_takes_what_earlier_discounts_left_on_other_lines() {
    // Two lines of 100.00; 100.00 off line 0 first (priority 1), then 150.00 off both: it
    // takes its whole 150.00 from what is left (line 1's 100.00 and nothing from line 0)...
    let o = order(
        vec![
            line(1, 1, 10_000, 1, LineKind::Item),
            line(2, 2, 10_000, 1, LineKind::Item),
        ],
        None,
    );
    let templates = [
        template(1, amount_off(10_000), |d| {
            d.priority = Priority::new(1).unwrap();
            d.scope = Coverage::Categories {
                ids: vec![CategoryId::new(1).unwrap()],
            }
            .into();
        }),
        template(2, amount_off(15_000), |_| {}),
    ];
    let coupons = [coupon(1, 1, AUG), coupon(2, 2, AUG)];
    let q = quote_in(&o, &coupons, &templates, Default::default());
    // ...which is only 100.00: a line is never taken below zero.
    assert_eq!(taken(&q), vec![(1, 10_000), (2, 10_000)]);
    assert_eq!(q.best.total_after, Money::ZERO);
}

#[test]
fn one_coupon_of_a_group_applies_the_other_is_in_conflict() {
    // 20 % and 150.00 off in group "weekend", and 50.00 off outside it.
    let templates = [
        template(1, percent(20), in_group("weekend")),
        template(2, amount_off(15_000), in_group("weekend")),
        template(3, amount_off(5_000), |_| {}),
    ];
    let coupons = [coupon(1, 1, AUG), coupon(2, 2, AUG), coupon(3, 3, AUG)];
    let q = run(&coupons, &templates);
    // The 20 % (of 1000.00: template 1 applies first) and the 50.00.
    assert_eq!(taken(&q), vec![(1, 20_000), (3, 5_000)]);
    let other = find(&q, 2);
    assert_eq!(other.reasons, vec![Reason::GroupConflict]);
    assert!(!other.applicable && !other.chosen);
    assert_eq!(other.discount, m(15_000));
}

#[test]
fn a_group_pick_is_the_best_with_the_rest_not_the_best_alone() {
    // 500.00 off applies first (priority 10). Alone, 30 % (300.00) beats 250.00 off; after
    // the 500.00, 30 % of what is left is 150.00 and the 250.00 is worth more.
    let templates = [
        template(1, percent(30), in_group("g")),
        template(2, amount_off(25_000), in_group("g")),
        template(3, amount_off(50_000), |d| {
            d.priority = Priority::new(10).unwrap();
        }),
    ];
    let coupons = [coupon(1, 1, AUG), coupon(2, 2, AUG), coupon(3, 3, AUG)];
    let q = run(&coupons, &templates);
    assert_eq!(taken(&q), vec![(3, 50_000), (2, 25_000)]);
    assert_eq!(q.best.discount, m(75_000));
    assert_eq!(find(&q, 1).reasons, vec![Reason::GroupConflict]);
    assert_eq!(find(&q, 1).discount, m(30_000));
}

#[test]
fn a_group_and_a_priority_are_checked_when_written() {
    assert!(StackingGroup::parse("spring-2026.b:1").is_ok());
    for bad in ["", "has space", "é", &"x".repeat(65)] {
        let e = StackingGroup::parse(bad).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("stacking_group"));
    }
    assert_eq!(Priority::new(1000).unwrap().get(), 1000);
    let e = Priority::new(1001).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("priority"));
    let d: Result<TemplateDraft, _> = serde_json::from_value(serde_json::json!({
        "title": "t", "value": {"kind": "amount_off", "amount": 100}, "cities": [1],
        "total_stock": 1, "validity": {"type": "relative", "days": 1}, "priority": 1001
    }));
    assert!(d.is_err());
}

#[test]
fn a_free_unit_after_a_percentage_is_worth_what_is_left_of_it() {
    // 2 units of 100.00; 50 % off first (priority 10), then buy one get one: the free unit
    // is worth the 50.00 left of its price, not the 100.00 it cost (the order is not free).
    let o = order(vec![line(1, 1, 10_000, 2, LineKind::Item)], None);
    let bogo = CouponValue::BuyXGetY {
        buy: 1,
        get: 1,
        gift: crate::coupon::Gift::Cheapest,
        max_applications: None,
    };
    let templates = [
        template(1, percent(50), |d| d.priority = Priority::new(10).unwrap()),
        template(2, bogo, |_| {}),
    ];
    let coupons = [coupon(1, 1, AUG), coupon(2, 2, AUG)];
    let q = quote_in(&o, &coupons, &templates, Default::default());
    assert_eq!(taken(&q), vec![(1, 10_000), (2, 5_000)]);
    assert_eq!(q.best.total_after, m(5_000));
}
