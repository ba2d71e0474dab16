//! Quotes of templates with conditions and exclusions: what an excluded line does not count
//! for, and what a quote says is missing.

use serde_json::json;

use super::*;
use crate::checkout::discount::TemplateUse;
use crate::checkout::eligibility::{Reason, Situation};
use crate::checkout::quote::{quote, Quote, QuoteInput};
use crate::coupon::{Exclusions, Scope};
use crate::rules::{Condition, Customer, Fact, Op};
use crate::tags::Tag;
use crate::zone::Zone;

fn run(order: &Order, coupons: &[Coupon], templates: &[Template], s: Situation<'_>) -> Quote {
    quote_in(order, coupons, templates, s)
}

/// 300.00 in category 1 (2 units) and 700.00 in category 2 (1 unit).
fn cart() -> Order {
    order(
        vec![
            line(1, 1, 15_000, 2, LineKind::Item),
            line(2, 2, 70_000, 1, LineKind::Item),
        ],
        None,
    )
}

fn no_category_2() -> Scope {
    Scope {
        coverage: Coverage::All,
        exclude: Exclusions::new(vec![], vec![CategoryId::new(2).unwrap()], vec![], vec![]),
    }
}

#[test]
fn an_excluded_line_counts_for_nothing() {
    // 10 % off above 500.00: the 700.00 line is excluded, so only 300.00 is in scope.
    let tpl = template(
        1,
        CouponValue::PercentOff {
            bps: bps(1_000),
            cap: None,
        },
        |d| {
            d.scope = no_category_2();
            d.threshold = m(50_000);
        },
    );
    let q = run(
        &cart(),
        &[coupon(1, 1, "2026-12-31T00:00:00Z")],
        &[tpl],
        Situation::default(),
    );
    assert_eq!(q.coupons[0].reasons, vec![Reason::BelowThreshold]);

    // Without a threshold it takes 10 % of 300.00, all of it from the first line.
    let tpl = template(
        1,
        CouponValue::PercentOff {
            bps: bps(1_000),
            cap: None,
        },
        |d| {
            d.scope = no_category_2();
        },
    );
    let q = run(
        &cart(),
        &[coupon(1, 1, "2026-12-31T00:00:00Z")],
        &[tpl],
        Situation::default(),
    );
    assert_eq!(q.best.discount, m(3_000));
    assert!(q.best.lines.iter().all(|l| l.line == 0));
}

#[test]
fn a_quote_says_what_the_conditions_miss() {
    // 3 units in scope, weekends only, first order: the cart has 2 units (category 2
    // excluded), 2026-06-01 is a Monday, and the customer has ordered before.
    let tpl = template(1, amount_off(5_000), |d| {
        d.scope = no_category_2();
        d.conditions = Some(Condition::all(vec![
            Condition::test(Fact::OrderQuantity, Op::Gte, json!(3)),
            Condition::test(Fact::OrderWeekday, Op::In, json!(["sat", "sun"])),
            Condition::test(Fact::CustomerFirstOrder, Op::Eq, json!(true)),
            Condition::test(Fact::CustomerTags, Op::NotIn, json!(["staff"])),
        ]));
    });
    let regular = Customer::new(vec![Tag::parse("vip").unwrap()], 2);
    let s = Situation {
        zone: Zone::UTC,
        customer: Some(&regular),
    };
    let q = run(
        &cart(),
        &[coupon(1, 1, "2026-12-31T00:00:00Z")],
        std::slice::from_ref(&tpl),
        s,
    );
    let c = &q.coupons[0];
    assert_eq!(c.reasons, vec![Reason::ConditionsUnmet]);
    assert!(!c.applicable && !c.chosen);
    let said: Vec<(Fact, serde_json::Value, serde_json::Value)> = c
        .unmet
        .iter()
        .map(|u| (u.fact, u.have.clone(), u.need.clone()))
        .collect();
    assert_eq!(
        said,
        vec![
            (Fact::OrderQuantity, json!(2), json!(1)),
            (
                Fact::OrderWeekday,
                json!("mon"),
                json!(t("2026-06-06T00:00:00Z"))
            ),
            (
                Fact::CustomerFirstOrder,
                json!(false),
                serde_json::Value::Null
            ),
        ]
    );
    assert_eq!(q.best.discount, Money::ZERO);

    // A new customer with 3 units on a Saturday gets it.
    let new = Customer::new(vec![], 0);
    let three = order(
        vec![
            line(1, 1, 15_000, 3, LineKind::Item),
            line(2, 2, 70_000, 1, LineKind::Item),
        ],
        None,
    );
    let uses = [TemplateUse::of(&tpl)];
    let q = quote(&QuoteInput {
        order: &three,
        now: t("2026-06-06T10:00:00Z"),
        coupons: &[coupon(1, 1, "2026-12-31T00:00:00Z")],
        templates: &uses,
        situation: Situation {
            zone: Zone::UTC,
            customer: Some(&new),
        },
    })
    .unwrap();
    assert!(q.coupons[0].applicable, "{:?}", q.coupons[0]);
    assert_eq!(q.best.discount, m(5_000));
}

#[test]
fn the_answer_names_unmet_only_when_there_is_some() {
    let tpl = template(1, amount_off(5_000), |_| {});
    let q = run(
        &cart(),
        &[coupon(1, 1, "2026-12-31T00:00:00Z")],
        &[tpl],
        Situation::default(),
    );
    let v = serde_json::to_value(&q.coupons[0]).unwrap();
    assert!(v.get("unmet").is_none(), "{v}");
}
