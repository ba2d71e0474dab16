//! Buy-x-get-y worked out by hand, and the two new kinds stacked in a quote.

use super::eligible as eligibility;
use super::*;
use crate::checkout::discount::{discount, Discount, LineDiscount, TemplateUse};
use crate::checkout::eligibility::Reason;
use crate::checkout::quote::Quote;
use crate::coupon::Gift;

fn on(order: &Order, t: &Template) -> Discount {
    discount(
        order,
        TemplateUse {
            template: t,
            given: Money::ZERO,
        },
    )
    .expect("in scope")
}

fn ld(line: usize, amount: i64) -> LineDiscount {
    LineDiscount {
        line,
        amount: m(amount),
    }
}

fn bxgy(buy: u32, get: u32, gift: Gift, max_applications: Option<u32>) -> CouponValue {
    CouponValue::BuyXGetY {
        buy,
        get,
        gift,
        max_applications,
    }
}

/// Buy 2, get the cheapest free, no limit.
fn b2g1() -> CouponValue {
    bxgy(2, 1, Gift::Cheapest, None)
}

fn item(listing: i64, unit: i64, qty: i64) -> LineDraft {
    line(listing, 1, unit, qty, LineKind::Item)
}

/// A line of a product (no listing) in category 2.
fn product(id: &str, unit: i64, qty: i64) -> LineDraft {
    let mut l = line(1, 2, unit, qty, LineKind::Item);
    l.listing_id = None;
    l.product_id = Some(id.into());
    l
}

#[test]
fn cheapest_unit_free_across_lines() {
    // 2 × 10.00 and 1 × 4.00: three units, one application, the 4.00 unit is free.
    let o = order(vec![item(1, 1_000, 2), item(2, 400, 1)], None);
    assert_eq!(
        on(&o, &template(1, b2g1(), |_| {})),
        Discount {
            discount: m(400),
            lines: vec![ld(1, 400)],
            schedule: vec![],
        }
    );
    // Two units: no application, but the coupon is in scope (like a special price above
    // the price), so it is applicable with nothing off.
    let two = order(vec![item(1, 1_000, 2)], None);
    assert_eq!(on(&two, &template(1, b2g1(), |_| {})).discount, Money::ZERO);
}

#[test]
fn six_units_make_two_applications() {
    // 2 × 10.00, 1 × 4.00, 3 × 6.00: six units, two applications, the two cheapest units
    // (4.00 and one 6.00) are free.
    let o = order(
        vec![item(1, 1_000, 2), item(2, 400, 1), item(3, 600, 3)],
        None,
    );
    let d = on(&o, &template(1, b2g1(), |_| {}));
    assert_eq!(d.discount, m(1_000));
    assert_eq!(d.lines, vec![ld(1, 400), ld(2, 600)]);
    // Five units: still one.
    let five = order(vec![item(1, 1_000, 2), item(3, 600, 3)], None);
    assert_eq!(
        on(&five, &template(1, b2g1(), |_| {})).lines,
        vec![ld(1, 600)]
    );
    // Equal prices: the earlier line's units go first.
    let tie = order(vec![item(1, 500, 3), item(2, 500, 3)], None);
    assert_eq!(
        on(&tie, &template(1, b2g1(), |_| {})).lines,
        vec![ld(0, 1_000)]
    );
}

#[test]
fn max_applications_caps_the_free_units() {
    // Nine units of 1.00 to 9.00: three applications without a limit, two with.
    let o = order((1..=9).map(|i| item(i, i * 100, 1)).collect(), None);
    let free = |max| on(&o, &template(1, bxgy(2, 1, Gift::Cheapest, max), |_| {}));
    assert_eq!(free(None).discount, m(100 + 200 + 300));
    assert_eq!(free(Some(2)).discount, m(100 + 200));
    assert_eq!(free(Some(2)).lines, vec![ld(0, 100), ld(1, 200)]);
    // Buy 1 get 2, at most once: the two cheapest of nine.
    let b1g2 = on(
        &o,
        &template(1, bxgy(1, 2, Gift::Cheapest, Some(1)), |_| {}),
    );
    assert_eq!(b1g2.lines, vec![ld(0, 100), ld(1, 200)]);
}

#[test]
fn a_named_gift_beyond_the_bought_units() {
    // Buy 2 shirts (30.00), get a belt (product "belt-1", 15.00) free.
    let belt = || Gift::Product {
        product_id: "belt-1".into(),
    };
    let tpl = template(1, bxgy(2, 1, belt(), None), |_| {});
    let shirts_and_belts = |shirts, belts| {
        order(
            vec![item(1, 3_000, shirts), product("belt-1", 1_500, belts)],
            None,
        )
    };
    // 2 shirts + 1 belt: one application, the belt is free.
    assert_eq!(on(&shirts_and_belts(2, 1), &tpl).lines, vec![ld(1, 1_500)]);
    // 2 shirts + 2 belts: still one (four units make one group of three).
    assert_eq!(on(&shirts_and_belts(2, 2), &tpl).discount, m(1_500));
    // 4 shirts + 2 belts: two. 4 shirts + 1 belt: one, there is only one gift unit.
    assert_eq!(on(&shirts_and_belts(4, 2), &tpl).discount, m(3_000));
    assert_eq!(on(&shirts_and_belts(4, 1), &tpl).discount, m(1_500));
    // No belt: nothing is free, however many shirts.
    let shirts = order(vec![item(1, 3_000, 9)], None);
    assert_eq!(on(&shirts, &tpl).discount, Money::ZERO);
    // Three belts alone: two are paid for as the `buy` units, one is free.
    let belts = order(vec![product("belt-1", 1_500, 3)], None);
    assert_eq!(on(&belts, &tpl).lines, vec![ld(0, 1_500)]);
    // Gift units of two prices: the cheapest gift unit is the free one, even though a
    // cheaper non-gift unit (a 5.00 shirt) is in the order.
    let o = order(
        vec![
            item(1, 500, 2),
            product("belt-1", 2_000, 1),
            product("belt-1", 1_500, 1),
        ],
        None,
    );
    assert_eq!(on(&o, &tpl).lines, vec![ld(2, 1_500)]);
    // A category or listing gift works the same way.
    let cat = template(
        1,
        bxgy(
            2,
            1,
            Gift::Category {
                id: CategoryId::new(2).unwrap(),
            },
            None,
        ),
        |_| {},
    );
    assert_eq!(on(&o, &cat).lines, vec![ld(2, 1_500)]);
    let listing = template(
        1,
        bxgy(
            1,
            1,
            Gift::Listing {
                id: ListingId::new(1).unwrap(),
            },
            None,
        ),
        |_| {},
    );
    // Listing 1 is line 0 (the product lines have no listing). Buy 1 get 1 on four units:
    // two applications, the two belts paid for, both units of listing 1 free.
    assert_eq!(on(&o, &listing).lines, vec![ld(0, 1_000)]);
}

#[test]
fn only_in_scope_purchase_units_count() {
    // Deposits and shipping are never units; another merchant's units are out of a merchant
    // scope, and so is a gift of theirs.
    let mut theirs = item(5, 100, 5);
    theirs.merchant_id = MerchantId::new(8).unwrap();
    let o = order(
        vec![
            item(1, 1_000, 2),
            line(1, 1, 50, 4, LineKind::Deposit),
            line(1, 1, 30, 4, LineKind::Shipping),
            theirs,
        ],
        None,
    );
    let mine = template(1, b2g1(), |d| d.scope = Coverage::Merchant.into());
    assert_eq!(on(&o, &mine).discount, Money::ZERO);
    // Scope all: seven units, two applications, two of merchant 8's 1.00 units.
    let all = template(1, b2g1(), |_| {});
    assert_eq!(on(&o, &all).lines, vec![ld(3, 200)]);
    // A rental: each month billed is a unit. 12 months of 3000.00, buy 2 get 1: four months
    // free; the deposit is not a unit.
    assert_eq!(on(&rental(), &all).lines, vec![ld(0, 1_200_000)]);
    // Nothing bought in scope: out of scope.
    let deposit_only = order(vec![line(1, 1, 50, 4, LineKind::Deposit)], None);
    let tu = TemplateUse {
        template: &all,
        given: Money::ZERO,
    };
    assert_eq!(discount(&deposit_only, tu), None);
    let c = coupon(1, 1, "2027-01-01T00:00:00Z");
    assert_eq!(
        eligibility(&deposit_only, now(), &c, tu),
        vec![Reason::OutOfScope]
    );
}

#[test]
fn budget_and_threshold_apply_as_for_every_kind() {
    // Two applications free 4.00 + 6.00; with 7.00 of budget left, 7.00 split 4 : 6.
    let o = order(
        vec![item(1, 1_000, 2), item(2, 400, 1), item(3, 600, 3)],
        None,
    );
    let tpl = template(1, b2g1(), |d| d.budget = Some(m(1_000)));
    let d = discount(
        &o,
        TemplateUse {
            template: &tpl,
            given: m(300),
        },
    )
    .unwrap();
    assert_eq!(
        (d.discount, d.lines),
        (m(700), vec![ld(1, 280), ld(2, 420)])
    );
    // Threshold against the in-scope subtotal, 20.00 + 4.00 + 18.00 = 42.00.
    let c = coupon(1, 1, "2027-01-01T00:00:00Z");
    let at = |threshold| {
        let t = template(1, b2g1(), |d| d.threshold = m(threshold));
        eligibility(
            &o,
            now(),
            &c,
            TemplateUse {
                template: &t,
                given: Money::ZERO,
            },
        )
    };
    assert_eq!(at(4_200), vec![]);
    assert_eq!(at(4_201), vec![Reason::BelowThreshold]);
}

fn run(order: &Order, coupons: &[Coupon], templates: &[Template]) -> Quote {
    quote_in(order, coupons, templates, Default::default())
}

#[test]
fn stacked_with_an_amount_off() {
    // 2 × 10.00, 1 × 4.00 and 5.00 of shipping. Buy 2 get 1 frees the 4.00 unit; 10.00 off
    // comes from what is left (the 20.00); free shipping takes the 5.00.
    let o = order(
        vec![
            item(1, 1_000, 2),
            item(2, 400, 1),
            line(3, 1, 500, 1, LineKind::Shipping),
        ],
        None,
    );
    let templates = [
        template(1, b2g1(), |_| {}),
        template(2, amount_off(1_000), |_| {}),
        template(3, CouponValue::FreeShipping { cap: None }, |_| {}),
    ];
    let coupons = [
        coupon(1, 1, "2026-07-01T00:00:00Z"),
        coupon(2, 2, "2026-08-01T00:00:00Z"),
        coupon(3, 3, "2026-09-01T00:00:00Z"),
    ];
    let q = run(&o, &coupons, &templates);
    let ids: Vec<i64> = q.best.coupons.iter().map(|c| c.coupon_id.get()).collect();
    assert_eq!(ids, vec![1, 2, 3]);
    // Applied in order: the free unit first (4.00 off line 1), then the amount off takes all
    // of its 10.00 from line 0 (line 1 is already free), then the shipping.
    let took: Vec<(i64, Vec<LineDiscount>)> = q
        .best
        .coupons
        .iter()
        .map(|c| (c.discount.minor(), c.lines.clone()))
        .collect();
    assert_eq!(
        took,
        vec![
            (400, vec![ld(1, 400)]),
            (1000, vec![ld(0, 1000)]),
            (500, vec![ld(2, 500)]),
        ]
    );
    assert_eq!(q.best.discount, m(1_900));
    assert_eq!(q.best.lines, vec![ld(0, 1000), ld(1, 400), ld(2, 500)]);
    assert_eq!(q.best.total_after, m(2_900 - 1_900));
    // An exclusive buy-x-get-y (4.00) loses to the stack of the other two (10.00 + 5.00).
    let mut templates = templates;
    templates[0] = template(1, b2g1(), |d| d.stacking = Stacking::Exclusive);
    let q = run(&o, &coupons, &templates);
    assert_eq!(q.best.discount, m(833 + 167 + 500));
    let c1 = q.coupons.iter().find(|c| c.coupon_id.get() == 1).unwrap();
    assert_eq!(c1.reasons, vec![Reason::ExclusiveConflict]);
}
