//! One coupon at a time: each kind's arithmetic worked out by hand, and every eligibility
//! reason.

use super::eligible as eligibility;
use super::*;
use crate::checkout::discount::{discount, Discount, LineDiscount, TemplateUse};
use crate::checkout::eligibility::{standing, Reason};

fn use_of(t: &Template) -> TemplateUse<'_> {
    TemplateUse {
        template: t,
        given: Money::ZERO,
    }
}

fn on(order: &Order, t: &Template) -> Discount {
    discount(order, use_of(t)).expect("in scope")
}

fn ld(line: usize, amount: i64) -> LineDiscount {
    LineDiscount {
        line,
        amount: m(amount),
    }
}

fn upfront(amount: i64, months: usize) -> Vec<Money> {
    let mut s = vec![Money::ZERO; months];
    s[0] = m(amount);
    s
}

/// `n` months of `a` followed by `k` months of `b`.
fn months(a: i64, n: usize, b: i64, k: usize) -> Vec<Money> {
    let mut s = vec![m(a); n];
    s.extend(vec![m(b); k]);
    s
}

fn spread(d: &mut TemplateDraft) {
    d.deduction = DeductionMode::Spread;
}

#[test]
fn amount_off_on_a_lease() {
    // 500.00 off the rent line (the deposit is not something bought).
    let o = rental();
    let tpl = template(1, amount_off(50_000), |_| {});
    assert_eq!(
        on(&o, &tpl),
        Discount {
            discount: m(50_000),
            lines: vec![ld(0, 50_000)],
            schedule: upfront(50_000, 12),
        }
    );
    // Spread: 50000 / 12 = 4166 remainder 8, so eight months of 41.67 then four of 41.66.
    let tpl = template(1, amount_off(50_000), spread);
    let d = on(&o, &tpl);
    assert_eq!(d.schedule, months(4_167, 8, 4_166, 4));
    assert_eq!(d.discount, m(50_000));
    // More than the rent: capped at the rent line (36000.00), never touching the deposit.
    let tpl = template(1, amount_off(5_000_000), |_| {});
    assert_eq!(on(&o, &tpl).lines, vec![ld(0, 3_600_000)]);
}

#[test]
fn percent_off_on_a_lease() {
    // 5 % of 36000.00 = 1800.00, capped at 1000.00.
    let o = rental();
    let value = |cap| CouponValue::PercentOff { bps: bps(500), cap };
    assert_eq!(
        on(&o, &template(1, value(None), |_| {})).discount,
        m(180_000)
    );
    let tpl = template(1, value(Some(m(100_000))), spread);
    let d = on(&o, &tpl);
    assert_eq!(d.discount, m(100_000));
    // 100000 / 12 = 8333 remainder 4.
    assert_eq!(d.schedule, months(8_334, 4, 8_333, 8));
    // 1800.00 spread evenly: 150.00 a month.
    let d = on(&o, &template(1, value(None), spread));
    assert_eq!(d.schedule, vec![m(15_000); 12]);
}

#[test]
fn free_days_on_a_lease() {
    // Daily rent 3000.00 / 30 = 100.00; 7 days = 700.00.
    let o = rental();
    let tpl = template(1, CouponValue::FreeDays { days: 7 }, |_| {});
    assert_eq!(
        on(&o, &tpl),
        Discount {
            discount: m(70_000),
            lines: vec![ld(0, 70_000)],
            schedule: upfront(70_000, 12),
        }
    );
    // Spread: 70000 / 12 = 5833 remainder 4: four months of 58.34, then eight of 58.33
    // (largest remainder puts the extra cents first; 4 × 58.34 + 8 × 58.33 = 700.00).
    let tpl = template(1, CouponValue::FreeDays { days: 7 }, spread);
    assert_eq!(on(&o, &tpl).schedule, months(5_834, 4, 5_833, 8));
    // 2999.99 a month: daily rent 99.99 (99.9997 rounded down), 7 days = 699.93.
    let odd = order(
        vec![line(10, 1, 299_999, 12, LineKind::Rent)],
        Some((299_999, 12)),
    );
    assert_eq!(on(&odd, &tpl).discount, m(69_993));
    // 366 free days on a rent line billing one month: capped at that month's rent.
    let one_month = order(
        vec![line(10, 1, 300_000, 1, LineKind::Rent)],
        Some((300_000, 12)),
    );
    let tpl = template(1, CouponValue::FreeDays { days: 366 }, |_| {});
    assert_eq!(on(&one_month, &tpl).discount, m(300_000));
    // No lease, or no rent line: nothing to apply to.
    let no_lease = order(vec![line(10, 1, 300_000, 12, LineKind::Rent)], None);
    assert_eq!(discount(&no_lease, use_of(&tpl)), None);
    let deposit_only = order(
        vec![line(10, 1, 300_000, 1, LineKind::Deposit)],
        Some((300_000, 12)),
    );
    assert_eq!(discount(&deposit_only, use_of(&tpl)), None);
}

#[test]
fn deposit_waiver_on_a_lease() {
    let o = rental();
    let tpl = template(1, CouponValue::DepositWaiver { cap: None }, |_| {});
    assert_eq!(
        on(&o, &tpl),
        Discount {
            discount: m(300_000),
            lines: vec![ld(1, 300_000)],
            schedule: upfront(300_000, 12),
        }
    );
    // Capped at 2000.00, spread: 200000 / 12 = 16666 remainder 8.
    let capped = CouponValue::DepositWaiver {
        cap: Some(m(200_000)),
    };
    let d = on(&o, &template(1, capped, spread));
    assert_eq!(d.discount, m(200_000));
    assert_eq!(d.lines, vec![ld(1, 200_000)]);
    assert_eq!(d.schedule, months(16_667, 8, 16_666, 4));
}

#[test]
fn special_price_on_a_lease() {
    // The rent becomes 2800.00 a month: 200.00 × 12 months = 2400.00 off.
    let o = rental();
    let tpl = template(1, CouponValue::SpecialPrice { price: m(280_000) }, spread);
    assert_eq!(
        on(&o, &tpl),
        Discount {
            discount: m(240_000),
            lines: vec![ld(0, 240_000)],
            schedule: vec![m(20_000); 12],
        }
    );
    // A special price above the price takes nothing (but the coupon is in scope).
    let tpl = template(1, CouponValue::SpecialPrice { price: m(310_000) }, |_| {});
    assert_eq!(on(&o, &tpl).discount, Money::ZERO);
    assert_eq!(on(&o, &tpl).lines, vec![]);
}

#[test]
fn special_price_per_line() {
    // Two items: 50.00 × 3 and 20.00 × 2, special price 30.00: (50 − 30) × 3 = 60.00 off
    // the first, nothing off the second (already cheaper).
    let o = order(
        vec![
            line(1, 1, 5_000, 3, LineKind::Item),
            line(2, 1, 2_000, 2, LineKind::Item),
        ],
        None,
    );
    let tpl = template(1, CouponValue::SpecialPrice { price: m(3_000) }, |_| {});
    let d = on(&o, &tpl);
    assert_eq!((d.discount, d.lines), (m(6_000), vec![ld(0, 6_000)]));
    assert!(d.schedule.is_empty());
    // With a budget of 50.00 left, the saving is cut to 50.00.
    let tpl = template(1, CouponValue::SpecialPrice { price: m(3_000) }, |d| {
        d.budget = Some(m(10_000))
    });
    let d = discount(
        &o,
        TemplateUse {
            template: &tpl,
            given: m(5_000),
        },
    )
    .unwrap();
    assert_eq!((d.discount, d.lines), (m(5_000), vec![ld(0, 5_000)]));
}

#[test]
fn splits_by_largest_remainder() {
    // 1.00 off three lines of 1.00: 0.34, 0.33, 0.33 (ties go to the earlier line).
    let o = order(
        vec![
            line(1, 1, 100, 1, LineKind::Item),
            line(2, 1, 100, 1, LineKind::Item),
            line(3, 1, 100, 1, LineKind::Item),
        ],
        None,
    );
    let d = on(&o, &template(1, amount_off(100), |_| {}));
    assert_eq!(d.lines, vec![ld(0, 34), ld(1, 33), ld(2, 33)]);
    // 15 % of 3.33 + 3.33 + 3.34 = 1.50: exact shares 0.4995, 0.4995, 0.501 → floors 0.49,
    // 0.49, 0.50 (1.48), the two cents left go to the two largest remainders.
    let o = order(
        vec![
            line(1, 1, 333, 1, LineKind::Item),
            line(2, 1, 333, 1, LineKind::Item),
            line(3, 1, 334, 1, LineKind::Item),
        ],
        None,
    );
    let value = CouponValue::PercentOff {
        bps: bps(1_500),
        cap: None,
    };
    let d = on(&o, &template(1, value.clone(), |_| {}));
    assert_eq!(d.discount, m(150));
    assert_eq!(d.lines, vec![ld(0, 50), ld(1, 50), ld(2, 50)]);
    // 15 % of 0.99 = 0.1485, rounded down to 0.14.
    let o = order(vec![line(1, 1, 99, 1, LineKind::Item)], None);
    assert_eq!(on(&o, &template(1, value, |_| {})).discount, m(14));
}

#[test]
fn scope_and_kinds_pick_the_lines() {
    // Line 0: listing 1, category 1; line 1: listing 2, category 2, another merchant;
    // line 2: listing 3, category 2; line 3: shipping; line 4: a product, no listing.
    let mut other = line(2, 2, 2_000, 1, LineKind::Item);
    other.merchant_id = MerchantId::new(8).unwrap();
    let mut product = line(1, 1, 5_000, 1, LineKind::Item);
    product.listing_id = None;
    product.product_id = Some("sku-5".into());
    let o = order(
        vec![
            line(1, 1, 1_000, 1, LineKind::Item),
            other,
            line(3, 2, 3_000, 1, LineKind::Item),
            line(1, 1, 4_000, 1, LineKind::Shipping),
            product,
        ],
        None,
    );
    let lines_of = |scope: Coverage| {
        let tpl = template(1, amount_off(1_000_000), |d| d.scope = scope.into());
        on(&o, &tpl).lines
    };
    // A price discount never touches shipping; everything else it takes in full.
    assert_eq!(
        lines_of(Coverage::All),
        vec![ld(0, 1_000), ld(1, 2_000), ld(2, 3_000), ld(4, 5_000)]
    );
    assert_eq!(
        lines_of(Coverage::Merchant),
        vec![ld(0, 1_000), ld(2, 3_000), ld(4, 5_000)]
    );
    let cats = Coverage::Categories {
        ids: vec![CategoryId::new(2).unwrap(), CategoryId::new(9).unwrap()],
    };
    assert_eq!(lines_of(cats), vec![ld(1, 2_000), ld(2, 3_000)]);
    // A listing scope matches listing ids only: the product line 4 is not listing 1.
    let listings = Coverage::Listings {
        ids: vec![ListingId::new(1).unwrap(), ListingId::new(3).unwrap()],
    };
    assert_eq!(lines_of(listings), vec![ld(0, 1_000), ld(2, 3_000)]);
}

/// A shop order: two items of merchant 7 (50.00 and 2 × 10.00), its shipping (15.00), and
/// merchant 8's shipping (8.00, category 2). Purchase subtotal 70.00; total 93.00.
fn shipped() -> Order {
    let mut theirs = line(4, 2, 800, 1, LineKind::Shipping);
    theirs.merchant_id = MerchantId::new(8).unwrap();
    order(
        vec![
            line(1, 1, 5_000, 1, LineKind::Item),
            line(2, 1, 1_000, 2, LineKind::Item),
            line(3, 1, 1_500, 1, LineKind::Shipping),
            theirs,
        ],
        None,
    )
}

#[test]
fn free_shipping_waives_shipping_lines() {
    let o = shipped();
    let free = |cap: Option<i64>| CouponValue::FreeShipping { cap: cap.map(m) };
    // Both shipping lines, in full; never an item.
    let d = on(&o, &template(1, free(None), |_| {}));
    assert_eq!(
        d,
        Discount {
            discount: m(2_300),
            lines: vec![ld(2, 1_500), ld(3, 800)],
            schedule: vec![],
        }
    );
    // Capped at 10.00, split over 15.00 and 8.00: exact shares 6.5217 and 3.4783, floors
    // 6.52 and 3.47, the cent left to the larger remainder: 6.52 + 3.48.
    let d = on(&o, &template(1, free(Some(1_000)), |_| {}));
    assert_eq!(d.discount, m(1_000));
    assert_eq!(d.lines, vec![ld(2, 652), ld(3, 348)]);
    // A cap above the shipping changes nothing.
    assert_eq!(
        on(&o, &template(1, free(Some(100_000)), |_| {})).discount,
        m(2_300)
    );
    // Merchant-scoped: only merchant 7's shipping.
    let mine = template(1, free(None), |d| d.scope = Coverage::Merchant.into());
    assert_eq!(on(&o, &mine).lines, vec![ld(2, 1_500)]);
    // Category 2 holds only merchant 8's shipping line.
    let cat = template(1, free(None), |d| {
        d.scope = Coverage::Categories {
            ids: vec![CategoryId::new(2).unwrap()],
        }
        .into()
    });
    assert_eq!(on(&o, &cat).lines, vec![ld(3, 800)]);
    // With a budget of 12.00 of which 2.00 is given: 10.00 left.
    let budgeted = template(1, free(None), |d| d.budget = Some(m(1_200)));
    let tu = TemplateUse {
        template: &budgeted,
        given: m(200),
    };
    assert_eq!(discount(&o, tu).unwrap().discount, m(1_000));
    // No shipping line in scope: nothing to apply to.
    let items = order(vec![line(1, 1, 5_000, 1, LineKind::Item)], None);
    assert_eq!(
        discount(&items, use_of(&template(1, free(None), |_| {}))),
        None
    );
    let c = coupon(1, 1, "2027-01-01T00:00:00Z");
    assert_eq!(
        eligibility(&items, now(), &c, use_of(&template(1, free(None), |_| {}))),
        vec![Reason::OutOfScope]
    );
}

#[test]
fn free_shipping_threshold_counts_purchases_only() {
    // The subtotal is 70.00 of items; the 23.00 of shipping does not count.
    let o = shipped();
    let c = coupon(1, 1, "2027-01-01T00:00:00Z");
    let with = |threshold| {
        template(1, CouponValue::FreeShipping { cap: None }, |d| {
            d.threshold = m(threshold)
        })
    };
    assert_eq!(eligibility(&o, now(), &c, use_of(&with(7_000))), vec![]);
    assert_eq!(
        eligibility(&o, now(), &c, use_of(&with(7_001))),
        vec![Reason::BelowThreshold]
    );
    // Scoped to category 2: merchant 8's shipping, but nothing bought there, so the in-scope
    // subtotal is zero and any threshold is missed.
    let theirs = template(1, CouponValue::FreeShipping { cap: None }, |d| {
        d.threshold = m(1);
        d.scope = Coverage::Categories {
            ids: vec![CategoryId::new(2).unwrap()],
        }
        .into();
    });
    assert_eq!(
        eligibility(&o, now(), &c, use_of(&theirs)),
        vec![Reason::BelowThreshold]
    );
}

#[test]
fn budget_caps_the_discount() {
    let o = rental();
    let tpl = template(1, amount_off(50_000), |d| d.budget = Some(m(100_000)));
    let with_given = |given| TemplateUse {
        template: &tpl,
        given: m(given),
    };
    assert_eq!(discount(&o, with_given(0)).unwrap().discount, m(50_000));
    assert_eq!(
        discount(&o, with_given(80_000)).unwrap().discount,
        m(20_000)
    );
    let c = coupon(1, 1, "2027-01-01T00:00:00Z");
    assert_eq!(eligibility(&o, now(), &c, with_given(99_999)), vec![]);
    assert_eq!(
        eligibility(&o, now(), &c, with_given(100_000)),
        vec![Reason::BudgetExhausted]
    );
    assert_eq!(
        eligibility(&o, now(), &c, with_given(150_000)),
        vec![Reason::BudgetExhausted]
    );
}

#[test]
fn every_eligibility_reason() {
    let o = rental();
    let base = template(1, amount_off(1_000), |_| {});
    let ok = coupon(1, 1, "2027-01-01T00:00:00Z");
    let check = |c: &Coupon, tpl: &Template| eligibility(&o, now(), c, use_of(tpl));
    assert_eq!(check(&ok, &base), vec![]);

    let expired = coupon(1, 1, "2026-06-01T00:00:00Z");
    assert_eq!(check(&expired, &base), vec![Reason::Expired]);
    let marked = Coupon {
        stored_status: CouponStatus::Expired,
        ..ok.clone()
    };
    assert_eq!(check(&marked, &base), vec![Reason::Expired]);
    let early = Coupon {
        valid_from: t("2026-06-01T00:00:00.000001Z"),
        ..ok.clone()
    };
    assert_eq!(check(&early, &base), vec![Reason::NotYetValid]);

    // The threshold is compared with the purchase subtotal (36000.00 of rent; the deposit
    // does not count): reached exactly passes, one cent more fails.
    let at = template(1, amount_off(1_000), |d| d.threshold = m(3_600_000));
    assert_eq!(check(&ok, &at), vec![]);
    let above = template(1, amount_off(1_000), |d| d.threshold = m(3_600_001));
    assert_eq!(check(&ok, &above), vec![Reason::BelowThreshold]);
    // Also for a deposit waiver: the deposit itself does not reach a threshold.
    let waiver = template(1, CouponValue::DepositWaiver { cap: None }, |d| {
        d.threshold = m(3_600_001)
    });
    assert_eq!(check(&ok, &waiver), vec![Reason::BelowThreshold]);

    let elsewhere = template(1, amount_off(1_000), |d| {
        d.scope = Coverage::Listings {
            ids: vec![ListingId::new(99).unwrap()],
        }
        .into()
    });
    assert_eq!(check(&ok, &elsewhere), vec![Reason::OutOfScope]);
    let shop = order(vec![line(1, 1, 1_000, 1, LineKind::Item)], None);
    let free_days = template(1, CouponValue::FreeDays { days: 3 }, |_| {});
    assert_eq!(
        eligibility(&shop, now(), &ok, use_of(&free_days)),
        vec![Reason::OutOfScope]
    );

    let city = template(1, amount_off(1_000), |d| {
        d.cities = CitySet::new(vec![CityId::new(2).unwrap()]).unwrap()
    });
    assert_eq!(check(&ok, &city), vec![Reason::WrongCity]);

    let theirs = Coupon {
        user_id: UserId::parse("u-2").unwrap(),
        ..ok.clone()
    };
    assert_eq!(check(&theirs, &base), vec![Reason::NotOwner]);

    for (status, reason) in [
        (CouponStatus::Locked, Reason::Locked),
        (CouponStatus::Used, Reason::Used),
        (CouponStatus::Revoked, Reason::Revoked),
    ] {
        let c = Coupon {
            stored_status: status,
            ..ok.clone()
        };
        assert_eq!(check(&c, &base), vec![reason]);
    }

    let mut aborted = base.clone();
    aborted.aborted_at = Some(t("2026-05-15T00:00:00Z"));
    assert_eq!(check(&ok, &aborted), vec![Reason::TemplateAborted]);

    // Everything at once, in declaration order.
    let worst = Coupon {
        user_id: UserId::parse("u-2").unwrap(),
        stored_status: CouponStatus::Used,
        valid_from: t("2026-07-01T00:00:00Z"),
        valid_until: t("2026-05-01T00:00:00Z"),
        ..ok.clone()
    };
    let mut bad = template(1, CouponValue::FreeDays { days: 1 }, |d| {
        d.threshold = m(1_001);
        d.cities = CitySet::new(vec![CityId::new(2).unwrap()]).unwrap();
        d.budget = Some(m(5));
        d.conditions = Some(crate::rules::Condition::test(
            crate::rules::Fact::OrderQuantity,
            crate::rules::Op::Gte,
            serde_json::json!(1_000),
        ));
    });
    bad.aborted_at = Some(t("2026-05-15T00:00:00Z"));
    let all = eligibility(
        &shop,
        now(),
        &worst,
        TemplateUse {
            template: &bad,
            given: m(5),
        },
    );
    // (A coupon has one stored status: `used` here, so neither `locked` nor `revoked`.)
    let want: Vec<Reason> = Reason::ALL[..12]
        .iter()
        .copied()
        .filter(|r| !matches!(r, Reason::Locked | Reason::Revoked))
        .collect();
    assert_eq!(all, want);

    // A wallet's view: only what no order can change, in the same order.
    let standing_all = standing(
        now(),
        &worst,
        TemplateUse {
            template: &bad,
            given: m(5),
        },
    );
    let order_free = [
        Reason::Expired,
        Reason::NotYetValid,
        Reason::Used,
        Reason::TemplateAborted,
        Reason::BudgetExhausted,
    ];
    assert_eq!(standing_all, order_free);
    assert_eq!(standing(now(), &ok, use_of(&base)), vec![]);
    assert_eq!(
        standing(now(), &ok, use_of(&aborted)),
        vec![Reason::TemplateAborted]
    );
}

#[test]
fn reason_codes_are_stable() {
    for r in Reason::ALL {
        assert_eq!(Reason::parse(r.as_str()), Some(r));
        assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
    }
    assert_eq!(Reason::NotYetValid.as_str(), "not_yet_valid");
    assert_eq!(Reason::parse("bogus"), None);
}
