//! Stored records: round trips, unknown fields tolerated, broken invariants reported.
use serde_json::{json, Value};

use super::*;

fn values() -> Vec<CouponValue> {
    let m = |v| Money::new(v).unwrap();
    let bxgy = |gift, max_applications| CouponValue::BuyXGetY {
        buy: 2,
        get: 1,
        gift,
        max_applications,
    };
    vec![
        CouponValue::AmountOff { amount: m(2000) },
        CouponValue::PercentOff {
            bps: BasisPoints::new(1500).unwrap(),
            cap: Some(m(5000)),
        },
        CouponValue::FreeDays { days: 7 },
        CouponValue::DepositWaiver { cap: None },
        CouponValue::SpecialPrice { price: m(199_900) },
        CouponValue::FreeShipping { cap: None },
        CouponValue::FreeShipping { cap: Some(m(1500)) },
        bxgy(Gift::Cheapest, Some(3)),
        bxgy(
            Gift::Product {
                product_id: "sku-1".into(),
            },
            None,
        ),
        bxgy(
            Gift::Listing {
                id: ListingId::new(12).unwrap(),
            },
            Some(1),
        ),
        bxgy(
            Gift::Category {
                id: CategoryId::new(3).unwrap(),
            },
            None,
        ),
    ]
}

fn read(json: Value) -> CouponValue {
    serde_json::from_value::<ValueRecord>(json).unwrap().into()
}

#[test]
fn values_are_stored_as_the_request_json_and_read_back() {
    for v in values() {
        let stored = serde_json::to_value(ValueRecord::from(&v)).unwrap();
        assert_eq!(stored, serde_json::to_value(&v).unwrap(), "{v:?}");
        assert_eq!(read(stored), v);
    }
    assert_eq!(
        serde_json::to_value(ValueRecord::from(&values()[7])).unwrap(),
        json!({"kind": "buy_x_get_y", "buy": 2, "get": 1, "gift": {"type": "cheapest"},
               "max_applications": 3})
    );
}

#[test]
fn values_tolerate_fields_a_newer_version_adds() {
    for v in values() {
        let mut stored = serde_json::to_value(ValueRecord::from(&v)).unwrap();
        stored["rounding"] = json!("half_even");
        if stored.get("gift").is_some() {
            stored["gift"]["note"] = json!({"colour": "red"});
        }
        assert_eq!(read(stored), v);
    }
    // A gift left out is the cheapest unit.
    assert_eq!(
        read(json!({"kind": "buy_x_get_y", "buy": 1, "get": 1})),
        CouponValue::BuyXGetY {
            buy: 1,
            get: 1,
            gift: Gift::Cheapest,
            max_applications: None
        }
    );
}

fn template(value: Value) -> Result<TemplateSpec, StoreError> {
    let record: TemplateRecord = serde_json::from_value(json!({
        "title": "t", "value": value, "cities": [1], "total_stock": 10,
        "validity": {"type": "relative", "days": 30}
    }))
    .unwrap();
    let w = Window::new(
        Timestamp::parse("2026-04-01T00:00:00Z").unwrap(),
        Timestamp::parse("2026-05-01T00:00:00Z").unwrap(),
    )
    .unwrap();
    record.into_spec(w)
}

#[test]
fn broken_values_are_reported() {
    let ok = template(json!({"kind": "buy_x_get_y", "buy": 2, "get": 1})).unwrap();
    assert_eq!(ok.value.kind(), CouponKind::BuyXGetY);
    // Looser than a request: 5000 free units per application stays readable.
    assert!(template(json!({"kind": "buy_x_get_y", "buy": 1, "get": 5000})).is_ok());
    for broken in [
        json!({"kind": "buy_x_get_y", "buy": 0, "get": 1}),
        json!({"kind": "buy_x_get_y", "buy": 1, "get": 0}),
        json!({"kind": "buy_x_get_y", "buy": 1, "get": 1, "max_applications": 0}),
        json!({"kind": "free_shipping", "cap": 0}),
    ] {
        assert!(
            matches!(template(broken.clone()), Err(StoreError::Corrupt(_))),
            "{broken}"
        );
    }
}
