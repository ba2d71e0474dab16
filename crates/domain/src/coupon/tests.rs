//! Coupon values: JSON shapes, validation, magnitudes and kind codes.

use serde_json::json;

use super::*;
use CouponValue::{BuyXGetY, FreeShipping};

#[test]
fn value_json_is_tagged_and_strict() {
    let v: CouponValue = serde_json::from_str(r#"{"kind":"percent_off","bps":1500}"#).unwrap();
    assert_eq!(v.kind(), CouponKind::PercentOff);
    assert_eq!(v.magnitude(), 1500);
    assert!(serde_json::from_str::<CouponValue>(r#"{"kind":"bogus"}"#).is_err());
    assert!(
        serde_json::from_str::<CouponValue>(r#"{"kind":"amount_off","amount":1,"x":2}"#).is_err()
    );
    assert!(serde_json::from_str::<CouponValue>(r#"{"kind":"amount_off","amount":-1}"#).is_err());
    assert!(CouponValue::FreeDays { days: 0 }.validate().is_err());
    assert_eq!(
        CouponValue::DepositWaiver { cap: None }.magnitude(),
        i64::MAX
    );
}

#[test]
fn new_kinds_json_round_trips() {
    let cases = [
        (json!({"kind": "free_shipping"}), FreeShipping { cap: None }),
        (
            json!({"kind": "free_shipping", "cap": 1500}),
            FreeShipping {
                cap: Some(Money::new(1500).unwrap()),
            },
        ),
        (
            json!({"kind": "buy_x_get_y", "buy": 2, "get": 1, "gift": {"type": "cheapest"},
                   "max_applications": 3}),
            BuyXGetY {
                buy: 2,
                get: 1,
                gift: Gift::Cheapest,
                max_applications: Some(3),
            },
        ),
        (
            json!({"kind": "buy_x_get_y", "buy": 1, "get": 1,
                   "gift": {"type": "product", "product_id": "sku-1"}}),
            BuyXGetY {
                buy: 1,
                get: 1,
                gift: Gift::Product {
                    product_id: "sku-1".into(),
                },
                max_applications: None,
            },
        ),
        (
            json!({"kind": "buy_x_get_y", "buy": 3, "get": 2,
                   "gift": {"type": "listing", "id": 12}}),
            BuyXGetY {
                buy: 3,
                get: 2,
                gift: Gift::Listing {
                    id: ListingId::new(12).unwrap(),
                },
                max_applications: None,
            },
        ),
        (
            json!({"kind": "buy_x_get_y", "buy": 2, "get": 1,
                   "gift": {"type": "category", "id": 3}}),
            BuyXGetY {
                buy: 2,
                get: 1,
                gift: Gift::Category {
                    id: CategoryId::new(3).unwrap(),
                },
                max_applications: None,
            },
        ),
    ];
    for (json, value) in cases {
        assert_eq!(
            serde_json::from_value::<CouponValue>(json.clone()).unwrap(),
            value
        );
        assert_eq!(serde_json::to_value(&value).unwrap(), json);
        assert!(value.validate().is_ok(), "{value:?}");
    }
    // The gift defaults to the cheapest unit (and is then written out).
    let v: CouponValue =
        serde_json::from_value(json!({"kind": "buy_x_get_y", "buy": 2, "get": 1})).unwrap();
    assert_eq!(
        serde_json::to_value(&v).unwrap()["gift"],
        json!({"type": "cheapest"})
    );
    for bad in [
        json!({"kind": "free_shipping", "cap": -1}),
        json!({"kind": "free_shipping", "extra": 1}),
        json!({"kind": "buy_x_get_y", "buy": 2}),
        json!({"kind": "buy_x_get_y", "buy": -1, "get": 1}),
        json!({"kind": "buy_x_get_y", "buy": 1, "get": 1, "gift": {"type": "dearest"}}),
        json!({"kind": "buy_x_get_y", "buy": 1, "get": 1, "gift": {"type": "product"}}),
        json!({"kind": "buy_x_get_y", "buy": 1, "get": 1, "gift": {"type": "listing", "id": 0}}),
    ] {
        assert!(
            serde_json::from_value::<CouponValue>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    // (serde ignores extra fields on a unit variant, `cheapest` as `all` of a scope.)
    let lenient = json!({"type": "cheapest", "id": 3});
    assert_eq!(
        serde_json::from_value::<Gift>(lenient).unwrap(),
        Gift::Cheapest
    );
    let lenient = json!({"type": "all", "ids": [3]});
    assert_eq!(
        serde_json::from_value::<Scope>(lenient).unwrap(),
        Coverage::All.into()
    );
    // Any other key is refused, so a misspelt `exclude` is never dropped in silence.
    for bad in [
        json!({"type": "all", "excludes": {"category_ids": [2]}}),
        json!({"type": "categories"}),
        json!({"type": "listings", "ids": [0]}),
    ] {
        assert!(
            serde_json::from_value::<Scope>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    let back =
        json!({"type": "categories", "ids": [2], "exclude": {"product_ids": ["b", "a", "b"]}});
    let scope: Scope = serde_json::from_value(back).unwrap();
    assert_eq!(scope.exclude.product_ids(), ["a", "b"]);
    assert_eq!(
        serde_json::to_value(&scope).unwrap(),
        json!({"type": "categories", "ids": [2], "exclude": {"product_ids": ["a", "b"]}})
    );
}

#[test]
fn new_kinds_validate_their_ranges() {
    let bxgy = |buy, get, max_applications, gift| BuyXGetY {
        buy,
        get,
        gift,
        max_applications,
    };
    let field = |v: CouponValue| v.validate().unwrap_err().field.unwrap();
    assert_eq!(
        field(FreeShipping {
            cap: Some(Money::ZERO)
        }),
        "value.cap"
    );
    assert!(bxgy(1, 1, Some(1), Gift::Cheapest).validate().is_ok());
    assert!(bxgy(1000, 1000, Some(10_000), Gift::Cheapest)
        .validate()
        .is_ok());
    assert_eq!(field(bxgy(0, 1, None, Gift::Cheapest)), "value.buy");
    assert_eq!(field(bxgy(1001, 1, None, Gift::Cheapest)), "value.buy");
    assert_eq!(field(bxgy(1, 0, None, Gift::Cheapest)), "value.get");
    assert_eq!(field(bxgy(1, 1001, None, Gift::Cheapest)), "value.get");
    assert_eq!(
        field(bxgy(1, 1, Some(0), Gift::Cheapest)),
        "value.max_applications"
    );
    assert_eq!(
        field(bxgy(1, 1, Some(10_001), Gift::Cheapest)),
        "value.max_applications"
    );
    let product = |id: &str| Gift::Product {
        product_id: id.into(),
    };
    for id in ["", "  ", &"x".repeat(129), "a\u{202E}b"] {
        assert_eq!(
            field(bxgy(1, 1, None, product(id))),
            "value.gift.product_id",
            "{id:?}"
        );
    }
    assert!(bxgy(1, 1, None, product(&"x".repeat(128)))
        .validate()
        .is_ok());
}

#[test]
fn new_kinds_magnitudes() {
    assert_eq!(FreeShipping { cap: None }.magnitude(), i64::MAX);
    let capped = FreeShipping {
        cap: Some(Money::new(1500).unwrap()),
    };
    assert_eq!(capped.magnitude(), 1500);
    let bxgy = |get, max_applications| BuyXGetY {
        buy: 2,
        get,
        gift: Gift::Cheapest,
        max_applications,
    };
    // Free units per order: get × max_applications, unbounded without a limit.
    assert_eq!(bxgy(2, Some(3)).magnitude(), 6);
    assert_eq!(bxgy(1, None).magnitude(), i64::MAX);
    assert_eq!(bxgy(u32::MAX, Some(u32::MAX)).magnitude(), i64::MAX);
}

#[test]
fn kinds_round_trip_as_str() {
    for k in CouponKind::ALL {
        assert_eq!(CouponKind::parse(k.as_str()), Some(k));
        assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
    }
    assert_eq!(CouponKind::parse("buy_x_get_y"), Some(CouponKind::BuyXGetY));
    assert_eq!(
        CouponKind::parse("free_shipping"),
        Some(CouponKind::FreeShipping)
    );
}

#[test]
fn tag_audiences_are_sets_decided_by_the_store() {
    let a: Audience =
        serde_json::from_str(r#"{"type":"tags","any":["vip","gold","vip"]}"#).unwrap();
    let a = a.validate().unwrap();
    let tags: Vec<&str> = a.tags().iter().map(|t| t.as_str()).collect();
    assert_eq!(tags, ["gold", "vip"]);
    let u = UserId::parse("u-1").unwrap();
    assert_eq!(a.admits(&u), None, "the claim's transaction decides");
    assert_eq!(Audience::Everyone.admits(&u), Some(true));
    assert!(Audience::Everyone.tags().is_empty());
    let none: Audience = serde_json::from_str(r#"{"type":"tags","any":[]}"#).unwrap();
    assert_eq!(
        none.validate().unwrap_err().field.as_deref(),
        Some("audience.any")
    );
    assert!(serde_json::from_str::<Audience>(r#"{"type":"tags","any":["VIP"]}"#).is_err());
}
