//! A condition tree as a caller writes it: `{"all": [...]}`, `{"any": [...]}`,
//! `{"not": {...}}`, or a test `{"fact": F, "op": O, "value": V}`. Only its shape is checked
//! here (a refused key names itself); what a value must be is [`Conditions::compile`]'s.
//!
//! [`Conditions::compile`]: crate::rules::Conditions::compile

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema};
use utoipa::openapi::{Ref, RefOr};
use utoipa::ToSchema;

use crate::rules::{MAX_DEPTH, MAX_LEAVES};

/// What a test reads. `order.*` facts come from the order (subtotal and quantity of the lines
/// in the template's scope, after exclusions; the weekday and local time in the platform's
/// time zone when it is checked); `customer.*` facts from what coupond knows of its user.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
pub enum Fact {
    /// The subtotal of the purchase (`item`, `rent`) lines in scope, minor units.
    #[serde(rename = "order.subtotal")]
    OrderSubtotal,
    /// The units of the purchase lines in scope.
    #[serde(rename = "order.quantity")]
    OrderQuantity,
    /// The order's city.
    #[serde(rename = "order.city_id")]
    OrderCityId,
    /// The label the order service sends as the order's `channel` (`app`, `web`, ...).
    #[serde(rename = "order.channel")]
    OrderChannel,
    /// `mon` to `sun`, in the platform's time zone.
    #[serde(rename = "order.weekday")]
    OrderWeekday,
    /// `"HH:MM"`, in the platform's time zone.
    #[serde(rename = "order.local_time")]
    OrderLocalTime,
    /// The user's tags; `in` holds when the user has any of them, `not_in` when none.
    #[serde(rename = "customer.tags")]
    CustomerTags,
    /// Whether the user has no other order: none confirmed, none held by a lock.
    #[serde(rename = "customer.first_order")]
    CustomerFirstOrder,
    /// How many orders the user has placed so far: confirmed (refunded ones too), or held by
    /// a lock and not yet paid.
    #[serde(rename = "customer.orders")]
    CustomerOrders,
}

impl Fact {
    pub const ALL: [Fact; 9] = [
        Fact::OrderSubtotal,
        Fact::OrderQuantity,
        Fact::OrderCityId,
        Fact::OrderChannel,
        Fact::OrderWeekday,
        Fact::OrderLocalTime,
        Fact::CustomerTags,
        Fact::CustomerFirstOrder,
        Fact::CustomerOrders,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Fact::OrderSubtotal => "order.subtotal",
            Fact::OrderQuantity => "order.quantity",
            Fact::OrderCityId => "order.city_id",
            Fact::OrderChannel => "order.channel",
            Fact::OrderWeekday => "order.weekday",
            Fact::OrderLocalTime => "order.local_time",
            Fact::CustomerTags => "customer.tags",
            Fact::CustomerFirstOrder => "customer.first_order",
            Fact::CustomerOrders => "customer.orders",
        }
    }

    pub fn parse(s: &str) -> Option<Fact> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// The operators a test of this fact may use.
    pub fn ops(self) -> &'static [Op] {
        use Op::*;
        match self {
            Fact::OrderSubtotal
            | Fact::OrderQuantity
            | Fact::CustomerOrders
            | Fact::OrderLocalTime => &[Eq, Ne, Gte, Gt, Lte, Lt, Between],
            Fact::OrderCityId | Fact::OrderChannel | Fact::OrderWeekday => &[Eq, Ne, In, NotIn],
            Fact::CustomerTags => &[In, NotIn],
            Fact::CustomerFirstOrder => &[Eq, Ne],
        }
    }

    /// Whether it reads what coupond knows of the customer (a read the order does not carry).
    pub fn is_customer(self) -> bool {
        matches!(
            self,
            Fact::CustomerTags | Fact::CustomerFirstOrder | Fact::CustomerOrders
        )
    }
}

/// How a test compares its fact with its value.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Eq,
    Ne,
    /// The value is a list (1 to 100 entries); holds when the fact is one of them.
    In,
    NotIn,
    Gte,
    Gt,
    Lte,
    Lt,
    /// The value is `[low, high]`, both included.
    Between,
}

impl Op {
    pub const ALL: [Op; 9] = [
        Op::Eq,
        Op::Ne,
        Op::In,
        Op::NotIn,
        Op::Gte,
        Op::Gt,
        Op::Lte,
        Op::Lt,
        Op::Between,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Ne => "ne",
            Op::In => "in",
            Op::NotIn => "not_in",
            Op::Gte => "gte",
            Op::Gt => "gt",
            Op::Lte => "lte",
            Op::Lt => "lt",
            Op::Between => "between",
        }
    }

    pub fn parse(s: &str) -> Option<Op> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// The operator that holds exactly when this one does not; `between` has none of its own
    /// (outside a range is `lt` its low or `gt` its high).
    pub fn negated(self) -> Option<Op> {
        Some(match self {
            Op::Eq => Op::Ne,
            Op::Ne => Op::Eq,
            Op::In => Op::NotIn,
            Op::NotIn => Op::In,
            Op::Gte => Op::Lt,
            Op::Lt => Op::Gte,
            Op::Gt => Op::Lte,
            Op::Lte => Op::Gt,
            Op::Between => return None,
        })
    }
}

/// One test: `{"fact": "order.subtotal", "op": "gte", "value": 100000}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConditionTest {
    pub fact: Fact,
    pub op: Op,
    /// By fact: minor units (`order.subtotal`), a count (`order.quantity`,
    /// `customer.orders`), a city id, a channel label, `mon`..`sun`, `"HH:MM"`, a tag, or
    /// `true`/`false` (`customer.first_order`); a list of them for `in`/`not_in`, two for
    /// `between`.
    #[schema(value_type = Object, example = json!(100000))]
    pub value: serde_json::Value,
}

/// A condition tree: a test, or a group of conditions that must all hold (`all`), at least one
/// (`any`), or not hold (`not`).
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    All(Vec<Condition>),
    Any(Vec<Condition>),
    Not(Box<Condition>),
    Test(ConditionTest),
}

impl Condition {
    /// `all` of `items`.
    pub fn all(items: Vec<Condition>) -> Condition {
        Condition::All(items)
    }

    /// A test of `fact`.
    pub fn test(fact: Fact, op: Op, value: serde_json::Value) -> Condition {
        Condition::Test(ConditionTest { fact, op, value })
    }
}

impl Serialize for Condition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Condition::Test(t) => t.serialize(s),
            Condition::All(items) => one_key(s, "all", items),
            Condition::Any(items) => one_key(s, "any", items),
            Condition::Not(inner) => one_key(s, "not", inner),
        }
    }
}

fn one_key<S: Serializer, T: Serialize + ?Sized>(
    s: S,
    key: &str,
    v: &T,
) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(1))?;
    m.serialize_entry(key, v)?;
    m.end()
}

const KEYS: &[&str] = &["all", "any", "not", "fact", "op", "value"];

impl<'de> Deserialize<'de> for Condition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ConditionVisitor)
    }
}

struct ConditionVisitor;

impl<'de> Visitor<'de> for ConditionVisitor {
    type Value = Condition;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a condition: {\"all\": [...]}, {\"any\": [...]}, {\"not\": {...}} or {\"fact\", \"op\", \"value\"}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Condition, A::Error> {
        let mut group: Option<Condition> = None;
        let mut fact: Option<Fact> = None;
        let mut op: Option<Op> = None;
        let mut value: Option<serde_json::Value> = None;
        let mut keys = 0;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            keys += 1;
            match key.as_ref() {
                "all" => group = Some(Condition::All(map.next_value()?)),
                "any" => group = Some(Condition::Any(map.next_value()?)),
                "not" => group = Some(Condition::Not(Box::new(map.next_value()?))),
                "fact" => fact = Some(map.next_value()?),
                "op" => op = Some(map.next_value()?),
                "value" => value = Some(map.next_value()?),
                other => return Err(de::Error::unknown_field(other, KEYS)),
            }
        }
        match (group, fact, op, value) {
            (Some(g), None, None, None) if keys == 1 => Ok(g),
            (None, Some(fact), Some(op), Some(value)) if keys == 3 => {
                Ok(Condition::Test(ConditionTest { fact, op, value }))
            }
            _ => Err(de::Error::custom(
                "a condition is exactly one of {\"all\": [...]}, {\"any\": [...]}, \
                 {\"not\": {...}} or a test {\"fact\", \"op\", \"value\"}",
            )),
        }
    }
}

// By hand: the tree refers to itself, and its JSON has a key per kind rather than a tag.
impl utoipa::PartialSchema for Condition {
    fn schema() -> RefOr<Schema> {
        let me = || Ref::from_schema_name("Condition");
        let group = |key: &str, what: &str| {
            ObjectBuilder::new()
                .property(key, ArrayBuilder::new().items(me()).min_items(Some(1)))
                .required(key)
                .description(Some(what))
        };
        OneOfBuilder::new()
            .item(group("all", "Holds when every condition holds."))
            .item(group("any", "Holds when at least one condition holds."))
            .item(
                ObjectBuilder::new()
                    .property("not", me())
                    .required("not")
                    .description(Some("Holds when the condition does not.")),
            )
            .item(Ref::from_schema_name("ConditionTest"))
            .description(Some(format!(
                "A condition tree: at most {MAX_LEAVES} tests, at most {MAX_DEPTH} levels (a \
                 test alone is one)."
            )))
            .examples([serde_json::json!({"all": [
                {"fact": "order.weekday", "op": "in", "value": ["sat", "sun"]},
                {"fact": "order.subtotal", "op": "gte", "value": 100000},
                {"not": {"fact": "customer.tags", "op": "in", "value": ["staff"]}}
            ]})])
            .into()
    }
}

impl ToSchema for Condition {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((
            "ConditionTest".to_owned(),
            <ConditionTest as utoipa::PartialSchema>::schema(),
        ));
        <ConditionTest as ToSchema>::schemas(schemas);
    }
}
