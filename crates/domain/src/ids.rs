//! Identifiers. Numeric ids are assigned by the database; user ids come from the platform's
//! identity system (the JWT `sub`) and are opaque strings.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

macro_rules! numeric_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "i64", into = "i64")]
        pub struct $name(i64);

        // By hand: the derive cannot say what `new` enforces (ids are positive).
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::Integer)
                    .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                        utoipa::openapi::KnownFormat::Int64,
                    )))
                    .minimum(Some(1))
                    .into()
            }
        }
        impl ToSchema for $name {}

        impl $name {
            pub fn new(v: i64) -> Result<Self, String> {
                if v > 0 { Ok(Self(v)) } else { Err(format!("id must be a positive integer, got {v}")) }
            }
            pub fn get(self) -> i64 { self.0 }
        }
        impl TryFrom<i64> for $name {
            type Error = String;
            fn try_from(v: i64) -> Result<Self, String> { Self::new(v) }
        }
        impl From<$name> for i64 {
            fn from(v: $name) -> i64 { v.0 }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { self.0.fmt(f) }
        }
        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                let v: i64 = s.parse().map_err(|_| format!("expected a positive integer id, got {s:?}"))?;
                Self::new(v)
            }
        }
    };
}

numeric_id!(
    /// A merchant.
    MerchantId
);
numeric_id!(
    /// A platform activity.
    ActivityId
);
numeric_id!(
    /// A coupon template.
    TemplateId
);
numeric_id!(
    /// A coupon held by a user.
    CouponId
);
numeric_id!(
    /// A named promotion rule that templates share.
    RuleId
);
numeric_id!(
    /// A city, as numbered by the platform.
    CityId
);
numeric_id!(
    /// A listing category, as numbered by the platform.
    CategoryId
);
numeric_id!(
    /// A listing: a house, room or product.
    ListingId
);
numeric_id!(
    /// An operator account: a person of the platform or of a merchant who signs in.
    OperatorId
);

/// A user of the platform, as named by the JWT `sub`: 1 to 64 characters of
/// `[A-Za-z0-9_.:@-]`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "String", into = "String")]
#[schema(value_type = String, example = "u-1001")]
pub struct UserId(String);

impl UserId {
    pub fn parse(s: &str) -> Result<Self, String> {
        let ok_char = |c: char| c.is_ascii_alphanumeric() || "_.:@-".contains(c);
        if s.is_empty() || s.len() > 64 || !s.chars().all(ok_char) {
            return Err(
                "user id must be 1 to 64 characters of letters, digits and _.:@-".to_owned(),
            );
        }
        Ok(UserId(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for UserId {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        UserId::parse(&s)
    }
}
impl From<UserId> for String {
    fn from(u: UserId) -> String {
        u.0
    }
}
impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An order (or lease) as the order service names it: 1 to 128 characters of
/// `[A-Za-z0-9_.:-]`. Redemption is keyed by it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "String", into = "String")]
#[schema(value_type = String, example = "lease-2026-000123")]
pub struct OrderId(String);

impl OrderId {
    pub fn parse(s: &str) -> Result<Self, String> {
        let ok_char = |c: char| c.is_ascii_alphanumeric() || "_.:-".contains(c);
        if s.is_empty() || s.len() > 128 || !s.chars().all(ok_char) {
            return Err(
                "order id must be 1 to 128 characters of letters, digits and _.:-".to_owned(),
            );
        }
        Ok(OrderId(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for OrderId {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        OrderId::parse(&s)
    }
}
impl From<OrderId> for String {
    fn from(o: OrderId) -> String {
        o.0
    }
}
impl fmt::Display for OrderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A non-empty set of cities (at most 500), kept sorted so equal sets compare and store equal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "Vec<CityId>", into = "Vec<CityId>")]
#[schema(value_type = Vec<i64>, example = json!([1, 2]))]
pub struct CitySet(Vec<CityId>);

impl CitySet {
    pub const MAX: usize = 500;

    pub fn new(cities: Vec<CityId>) -> Result<Self, String> {
        let set: BTreeSet<CityId> = cities.iter().copied().collect();
        if set.is_empty() {
            return Err("at least one city is required".into());
        }
        if set.len() != cities.len() {
            return Err("cities must not repeat".into());
        }
        if set.len() > Self::MAX {
            return Err(format!("at most {} cities", Self::MAX));
        }
        Ok(CitySet(set.into_iter().collect()))
    }

    pub fn iter(&self) -> impl Iterator<Item = CityId> + '_ {
        self.0.iter().copied()
    }

    pub fn contains(&self, c: CityId) -> bool {
        self.0.binary_search(&c).is_ok()
    }

    pub fn is_subset(&self, other: &CitySet) -> bool {
        self.0.iter().all(|c| other.contains(*c))
    }

    pub fn intersects(&self, other: &CitySet) -> bool {
        self.0.iter().any(|c| other.contains(*c))
    }

    pub fn as_slice(&self) -> &[CityId] {
        &self.0
    }
}

impl TryFrom<Vec<CityId>> for CitySet {
    type Error = String;
    fn try_from(v: Vec<CityId>) -> Result<Self, String> {
        CitySet::new(v)
    }
}
impl From<CitySet> for Vec<CityId> {
    fn from(c: CitySet) -> Self {
        c.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_positive() {
        assert!(MerchantId::new(0).is_err());
        assert!(serde_json::from_str::<TemplateId>("-3").is_err());
        assert_eq!("42".parse::<ActivityId>().unwrap().get(), 42);
    }

    #[test]
    fn user_ids_are_bounded() {
        assert!(UserId::parse("u-1001").is_ok());
        assert!(UserId::parse("").is_err());
        assert!(UserId::parse(&"a".repeat(65)).is_err());
        assert!(UserId::parse("a b").is_err());
    }

    #[test]
    fn city_sets_are_sorted_and_unique() {
        let c = |v| CityId::new(v).unwrap();
        let s = CitySet::new(vec![c(3), c(1)]).unwrap();
        assert_eq!(s.as_slice(), &[c(1), c(3)]);
        assert!(CitySet::new(vec![c(1), c(1)]).is_err());
        assert!(CitySet::new(vec![]).is_err());
        assert!(CitySet::new(vec![c(1)]).unwrap().is_subset(&s));
    }
}
