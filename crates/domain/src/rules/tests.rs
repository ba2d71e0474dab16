use serde_json::{json, Value};

use super::*;
use crate::ids::CityId;
use crate::money::Money;
use crate::tags::Tag;
use crate::time::Timestamp;
use crate::zone::Zone;

fn tree(v: Value) -> Condition {
    serde_json::from_value(v).unwrap()
}

fn compile(v: Value) -> Conditions {
    Conditions::compile(&tree(v)).unwrap()
}

fn refusal(v: Value) -> crate::error::DomainError {
    Conditions::compile(&tree(v)).unwrap_err()
}

/// Saturday 2027-01-09, 10:30 in Shanghai.
fn saturday() -> LocalNow {
    let zone = Zone::parse("Asia/Shanghai").unwrap();
    LocalNow::new(Timestamp::parse("2027-01-09T02:30:00Z").unwrap(), zone)
}

struct Order {
    subtotal: i64,
    quantity: i64,
    city: i64,
    channel: Option<&'static str>,
}

const CART: Order = Order {
    subtotal: 60_000,
    quantity: 2,
    city: 7,
    channel: Some("app"),
};

fn facts<'a>(o: &'a Order, local: &'a LocalNow, customer: Option<&'a Customer>) -> Facts<'a> {
    Facts {
        subtotal: Money::new(o.subtotal).unwrap(),
        quantity: o.quantity,
        city_id: CityId::new(o.city).unwrap(),
        channel: o.channel,
        local,
        customer,
    }
}

fn regular() -> Customer {
    Customer::new(vec![Tag::parse("vip").unwrap()], 3)
}

fn holds(v: Value) -> bool {
    let local = saturday();
    let c = regular();
    compile(v).holds(&facts(&CART, &local, Some(&c)))
}

fn unmet(v: Value) -> Vec<Unmet> {
    let local = saturday();
    let c = regular();
    compile(v).unmet(&facts(&CART, &local, Some(&c)))
}

#[test]
fn the_four_shapes_read_and_write_back() {
    let v = json!({"all": [
        {"fact": "order.subtotal", "op": "gte", "value": 100},
        {"any": [{"fact": "order.channel", "op": "eq", "value": "app"}]},
        {"not": {"fact": "customer.tags", "op": "in", "value": ["staff"]}}
    ]});
    assert_eq!(serde_json::to_value(tree(v.clone())).unwrap(), v);
}

#[test]
fn a_bad_shape_names_its_key() {
    let e = serde_json::from_value::<Condition>(json!({"al": []})).unwrap_err();
    assert!(e.to_string().contains("unknown field `al`"), "{e}");
    for bad in [
        json!({"all": [], "any": []}),
        json!({"fact": "order.subtotal", "op": "gte"}),
        json!({"all": [], "fact": "order.subtotal"}),
        json!({}),
    ] {
        assert!(
            serde_json::from_value::<Condition>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    let e = serde_json::from_value::<Condition>(
        json!({"fact": "order.colour", "op": "eq", "value": 1}),
    )
    .unwrap_err();
    assert!(e.to_string().contains("order.colour"), "{e}");
}

#[test]
fn every_broken_node_is_named_by_its_path() {
    let e = refusal(json!({"all": [
        {"fact": "order.channel", "op": "gte", "value": "app"},
        {"any": [{"fact": "order.weekday", "op": "in", "value": ["sat", "caturday"]}]},
        {"fact": "order.local_time", "op": "between", "value": ["18:00", "09:00"]},
        {"all": []}
    ]}));
    let mut found = vec![(e.field.clone().unwrap(), e.code)];
    found.extend(e.also.iter().map(|a| (a.field.clone().unwrap(), a.code)));
    assert_eq!(
        found,
        vec![
            ("all[0].op".to_owned(), "invalid_operator"),
            ("all[1].any[0].value[1]".to_owned(), "invalid_value"),
            ("all[2].value".to_owned(), "invalid_value"),
            ("all[3].all".to_owned(), "invalid_length"),
        ]
    );
}

#[test]
fn trees_are_bounded_in_depth_and_tests() {
    let test = json!({"fact": "order.quantity", "op": "gte", "value": 1});
    // Four levels are fine, a fifth is not.
    let four = json!({"all": [{"any": [{"not": test.clone()}]}]});
    assert!(Conditions::compile(&tree(four)).is_ok());
    let e = refusal(json!({"all": [{"any": [{"not": {"not": test.clone()}}]}]}));
    assert_eq!(
        (e.field.as_deref(), e.code),
        (Some("all[0].any[0].not.not"), "too_deep")
    );
    let many: Vec<Value> = (0..=MAX_LEAVES).map(|_| test.clone()).collect();
    assert_eq!(refusal(json!({"all": many})).code, "too_many_conditions");
    let enough: Vec<Value> = (0..MAX_LEAVES).map(|_| test.clone()).collect();
    assert!(Conditions::compile(&tree(json!({"all": enough}))).is_ok());
}

#[test]
fn values_must_fit_their_fact() {
    for (fact, op, value) in [
        ("order.subtotal", "gte", json!(-1)),
        ("order.subtotal", "gte", json!("100")),
        ("order.quantity", "between", json!([1])),
        ("order.city_id", "in", json!([])),
        ("order.channel", "eq", json!("has space")),
        ("order.weekday", "eq", json!("Saturday")),
        ("order.local_time", "gte", json!("24:00")),
        ("order.local_time", "gte", json!("+9:00")),
        ("customer.tags", "in", json!(["VIP"])),
        ("customer.first_order", "eq", json!("yes")),
        ("customer.tags", "eq", json!("vip")),
    ] {
        let e = refusal(json!({"fact": fact, "op": op, "value": value}));
        assert!(
            ["invalid_value", "invalid_operator"].contains(&e.code),
            "{fact} {op} {value}: {e:?}"
        );
    }
}

#[test]
fn each_fact_and_operator_tests_what_it_says() {
    let t =
        |fact: &str, op: &str, value: Value| holds(json!({"fact": fact, "op": op, "value": value}));
    assert!(t("order.subtotal", "gte", json!(60_000)));
    assert!(!t("order.subtotal", "gt", json!(60_000)));
    assert!(t("order.subtotal", "between", json!([50_000, 60_000])));
    assert!(t("order.quantity", "eq", json!(2)));
    assert!(t("order.quantity", "lt", json!(3)));
    assert!(!t("order.quantity", "lte", json!(1)));
    assert!(t("order.city_id", "in", json!([3, 7])));
    assert!(t("order.city_id", "ne", json!(3)));
    assert!(t("order.channel", "eq", json!("app")));
    assert!(t("order.channel", "not_in", json!(["web"])));
    assert!(t("order.weekday", "in", json!(["sat", "sun"])));
    assert!(!t("order.weekday", "eq", json!("fri")));
    assert!(t("order.local_time", "between", json!(["10:00", "10:30"])));
    assert!(!t("order.local_time", "gt", json!("10:30")));
    assert!(t("customer.tags", "in", json!(["new", "vip"])));
    assert!(!t("customer.tags", "not_in", json!(["vip"])));
    assert!(t("customer.first_order", "eq", json!(false)));
    assert!(t("customer.orders", "gte", json!(3)));
    assert!(!t("customer.orders", "gt", json!(3)));
}

#[test]
fn groups_combine_and_not_negates() {
    let yes = json!({"fact": "order.quantity", "op": "eq", "value": 2});
    let no = json!({"fact": "order.quantity", "op": "eq", "value": 5});
    assert!(holds(json!({"all": [yes.clone(), yes.clone()]})));
    assert!(!holds(json!({"all": [yes.clone(), no.clone()]})));
    assert!(holds(json!({"any": [no.clone(), yes.clone()]})));
    assert!(!holds(json!({"any": [no.clone(), no.clone()]})));
    assert!(holds(json!({"not": no.clone()})));
    assert!(holds(json!({"not": {"all": [yes.clone(), no.clone()]}})));
    assert!(!holds(json!({"not": {"any": [yes, no]}})));
}

#[test]
fn an_unknown_customer_never_qualifies() {
    let local = saturday();
    for v in [
        json!({"fact": "customer.first_order", "op": "eq", "value": true}),
        json!({"not": {"fact": "customer.first_order", "op": "eq", "value": true}}),
        json!({"fact": "customer.tags", "op": "not_in", "value": ["staff"]}),
    ] {
        let c = compile(v.clone());
        assert!(c.reads_customer());
        assert!(!c.holds(&facts(&CART, &local, None)), "{v}");
        assert_eq!(c.unmet(&facts(&CART, &local, None))[0].have, Value::Null);
    }
    let no_channel = Order {
        channel: None,
        ..CART
    };
    let c = compile(json!({"fact": "order.channel", "op": "ne", "value": "web"}));
    assert!(!c.reads_customer());
    assert!(c.holds(&facts(&no_channel, &local, None)));
}

#[test]
fn unmet_says_how_much_more_is_needed() {
    let u = unmet(json!({"fact": "order.subtotal", "op": "gte", "value": 100_000}));
    assert_eq!(u.len(), 1);
    assert_eq!((u[0].fact, u[0].op), (Fact::OrderSubtotal, Op::Gte));
    assert_eq!(
        (u[0].have.clone(), u[0].need.clone()),
        (json!(60_000), json!(40_000))
    );
    let u = unmet(json!({"fact": "order.quantity", "op": "gt", "value": 2}));
    assert_eq!(u[0].need, json!(1));
    let u = unmet(json!({"fact": "order.quantity", "op": "lte", "value": 1}));
    assert_eq!(u[0].need, json!(-1));
    // Every failing test of an `all`, none of the ones that hold.
    let u = unmet(json!({"all": [
        {"fact": "order.quantity", "op": "gte", "value": 3},
        {"fact": "order.city_id", "op": "eq", "value": 7},
        {"fact": "customer.first_order", "op": "eq", "value": true}
    ]}));
    let facts: Vec<Fact> = u.iter().map(|u| u.fact).collect();
    assert_eq!(facts, vec![Fact::OrderQuantity, Fact::CustomerFirstOrder]);
    assert_eq!(
        (u[1].have.clone(), u[1].need.clone()),
        (json!(false), Value::Null)
    );
}

#[test]
fn an_any_group_reports_its_cheapest_branch() {
    let u = unmet(json!({"any": [
        {"all": [
            {"fact": "order.quantity", "op": "gte", "value": 5},
            {"fact": "order.channel", "op": "eq", "value": "web"}
        ]},
        {"fact": "order.subtotal", "op": "gte", "value": 70_000}
    ]}));
    assert_eq!(u.len(), 1);
    assert_eq!(
        (u[0].fact, u[0].need.clone()),
        (Fact::OrderSubtotal, json!(10_000))
    );
}

#[test]
fn under_not_the_opposite_test_is_what_is_needed() {
    let u = unmet(json!({"not": {"fact": "order.channel", "op": "eq", "value": "app"}}));
    assert_eq!((u[0].op, u[0].have.clone()), (Op::Ne, json!("app")));
    let u = unmet(json!({"not": {"any": [
        {"fact": "customer.tags", "op": "in", "value": ["vip"]},
        {"fact": "order.quantity", "op": "lt", "value": 5}
    ]}}));
    let ops: Vec<Op> = u.iter().map(|u| u.op).collect();
    assert_eq!(ops, vec![Op::NotIn, Op::Gte]);
    assert_eq!(u[1].need, json!(3));
    // Outside [1, 10] with 2 units: below 1 (2 fewer) is nearer than above 10 (9 more).
    let u = unmet(json!({"not": {"fact": "order.quantity", "op": "between", "value": [1, 10]}}));
    assert_eq!(
        (u[0].op, u[0].value.clone(), u[0].need.clone()),
        (Op::Lt, json!(1), json!(-2))
    );
}

#[test]
fn clock_tests_say_from_when_they_hold() {
    // Saturday 10:30 in Shanghai; weekdays only from Monday 00:00 local.
    let u = unmet(
        json!({"fact": "order.weekday", "op": "in", "value": ["mon", "tue", "wed", "thu", "fri"]}),
    );
    assert_eq!(u[0].have, json!("sat"));
    assert_eq!(
        u[0].need,
        json!(Timestamp::parse("2027-01-10T16:00:00Z").unwrap())
    );
    // From 18:00 today.
    let u = unmet(json!({"fact": "order.local_time", "op": "gte", "value": "18:00"}));
    assert_eq!(
        (u[0].have.clone(), u[0].need.clone()),
        (
            json!("10:30"),
            json!(Timestamp::parse("2027-01-09T10:00:00Z").unwrap())
        )
    );
    // Before 09:00: from midnight.
    let u = unmet(json!({"fact": "order.local_time", "op": "lt", "value": "09:00"}));
    assert_eq!(
        u[0].need,
        json!(Timestamp::parse("2027-01-09T16:00:00Z").unwrap())
    );
    // Not during 10:00-11:00: from 11:01 today.
    let u = unmet(
        json!({"not": {"fact": "order.local_time", "op": "between", "value": ["10:00", "11:00"]}}),
    );
    assert_eq!(
        (u[0].op, u[0].need.clone()),
        (
            Op::Gt,
            json!(Timestamp::parse("2027-01-09T03:01:00Z").unwrap())
        )
    );
}

#[test]
fn periods_begin_at_local_midnight_on_monday_and_the_first() {
    // Saturday 2027-01-09 10:30 in Shanghai (02:30 UTC).
    let zone = Zone::parse("Asia/Shanghai").unwrap();
    let now = Timestamp::parse("2027-01-09T02:30:00Z").unwrap();
    let start = |p: Period| p.start(now, zone).unwrap();
    assert_eq!(
        start(Period::Day),
        Timestamp::parse("2027-01-08T16:00:00Z").unwrap()
    );
    assert_eq!(
        start(Period::Week),
        Timestamp::parse("2027-01-03T16:00:00Z").unwrap()
    );
    assert_eq!(
        start(Period::Month),
        Timestamp::parse("2026-12-31T16:00:00Z").unwrap()
    );
    let limit = UseLimit {
        period: Period::Day,
        max: 2,
    };
    assert!(limit.allows(1, 1) && !limit.allows(2, 1) && !limit.allows(0, 3));
    let e = UseLimit::validate(&[
        limit,
        UseLimit {
            period: Period::Day,
            max: 0,
        },
    ])
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("use_limits[1].max"));
    assert_eq!(e.also[0].field.as_deref(), Some("use_limits[1].period"));
}
