//! How a template's coupons combine with others on one order: stackable or exclusive, a
//! stacking group (at most one of a group per order) and a priority (the order discounts
//! are applied in).

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;

/// Whether a coupon combines with others on one order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stacking {
    /// At most one exclusive coupon per order, and nothing else with it.
    #[default]
    Exclusive,
    /// Combines with other stackable coupons.
    Stackable,
}

/// A stacking group's name: at most one coupon of a group applies to an order. 1 to 64
/// characters of ASCII letters, digits, `-`, `_`, `.` and `:`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "String", into = "String")]
#[schema(value_type = String, example = "weekend")]
pub struct StackingGroup(String);

impl StackingGroup {
    pub const MAX_LEN: usize = 64;

    pub fn parse(s: &str) -> Result<Self, DomainError> {
        let ok = (1..=Self::MAX_LEN).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
        if !ok {
            return Err(DomainError::invalid(
                "stacking_group",
                "invalid_value",
                "1 to 64 characters: letters, digits, '-', '_', '.', ':'",
            ));
        }
        Ok(StackingGroup(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for StackingGroup {
    type Error = DomainError;
    fn try_from(s: String) -> Result<Self, DomainError> {
        StackingGroup::parse(&s)
    }
}

impl From<StackingGroup> for String {
    fn from(g: StackingGroup) -> String {
        g.0
    }
}

impl fmt::Display for StackingGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The highest priority.
pub const MAX_PRIORITY: u16 = 1000;

/// Where a coupon's discount comes in the order discounts are applied: higher first, 0 to
/// [`MAX_PRIORITY`] (default 0). A percentage is taken from what the discounts before it
/// left.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    ToSchema,
)]
#[serde(try_from = "u16", into = "u16")]
#[schema(value_type = u16, example = 100)]
pub struct Priority(u16);

impl Priority {
    pub fn new(p: u16) -> Result<Self, DomainError> {
        if p > MAX_PRIORITY {
            return Err(DomainError::invalid(
                "priority",
                "invalid_value",
                format!("priority must be from 0 to {MAX_PRIORITY}"),
            ));
        }
        Ok(Priority(p))
    }

    pub fn get(self) -> u16 {
        self.0
    }

    pub fn is_zero(&self) -> bool {
        self.0 == 0
    }
}

impl TryFrom<u16> for Priority {
    type Error = DomainError;
    fn try_from(p: u16) -> Result<Self, DomainError> {
        Priority::new(p)
    }
}

impl From<Priority> for u16 {
    fn from(p: Priority) -> u16 {
        p.0
    }
}
