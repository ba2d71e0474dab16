//! What a coupon is worth and the rules that travel with it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::checkout::{LineDraft, MAX_PRODUCT_ID_CHARS};
use crate::error::DomainError;
use crate::ids::{CategoryId, ListingId, UserId};
use crate::money::{BasisPoints, Money};
use crate::tags::{tag_set, Tag, MAX_SEGMENT_TAGS};
use crate::text::check_text;
use crate::time::Timestamp;

/// The kinds of coupon.
// (The reference designs' `couponType`: 1 direct, 2 discount, 3 free days, 4 deposit, 5 special;
// the e-commerce design adds free shipping and buy-x-get-y.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CouponKind {
    AmountOff,
    PercentOff,
    FreeDays,
    DepositWaiver,
    SpecialPrice,
    FreeShipping,
    #[serde(rename = "buy_x_get_y")]
    BuyXGetY,
}

impl CouponKind {
    /// Every kind, in declaration order.
    pub const ALL: [CouponKind; 7] = [
        CouponKind::AmountOff,
        CouponKind::PercentOff,
        CouponKind::FreeDays,
        CouponKind::DepositWaiver,
        CouponKind::SpecialPrice,
        CouponKind::FreeShipping,
        CouponKind::BuyXGetY,
    ];

    /// The kind's stable code, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CouponKind::AmountOff => "amount_off",
            CouponKind::PercentOff => "percent_off",
            CouponKind::FreeDays => "free_days",
            CouponKind::DepositWaiver => "deposit_waiver",
            CouponKind::SpecialPrice => "special_price",
            CouponKind::FreeShipping => "free_shipping",
            CouponKind::BuyXGetY => "buy_x_get_y",
        }
    }

    /// The kind of a code ([`CouponKind::as_str`]), `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The unit an activity's value bounds are expressed in for this kind (what
    /// [`CouponValue::magnitude`] returns). For `free_shipping` it is the cap, an uncapped one
    /// being unbounded (as for `deposit_waiver`); for `buy_x_get_y` it is the most units one
    /// order gets free, `get × max_applications`, unbounded without `max_applications`: what
    /// the promotion gives away at most, whatever the prices.
    /// An activity's value bounds as a person reads them: money in major units
    /// (`50.00 to 500.00 off`), percentages in % (`5 % to 20 % off`), counts as they are.
    pub fn bounds_in_words(self, min: i64, max: i64) -> String {
        let money = |m: i64| format!("{}.{:02}", m / 100, (m % 100).abs());
        match self {
            CouponKind::AmountOff => format!("{} to {} off", money(min), money(max)),
            CouponKind::PercentOff => {
                format!("{} % to {} % off", min as f64 / 100.0, max as f64 / 100.0)
            }
            CouponKind::FreeDays => format!("{min} to {max} free days"),
            CouponKind::DepositWaiver | CouponKind::FreeShipping => {
                format!("a cap of {} to {}", money(min), money(max))
            }
            CouponKind::SpecialPrice => format!("a price of {} to {}", money(min), money(max)),
            CouponKind::BuyXGetY => format!("{min} to {max} free units per order"),
        }
    }

    pub fn bound_unit(self) -> &'static str {
        match self {
            CouponKind::AmountOff => "minor units off",
            CouponKind::PercentOff => "basis points off",
            CouponKind::FreeDays => "free days",
            CouponKind::DepositWaiver => "minor units of deposit waived (the cap)",
            CouponKind::SpecialPrice => "minor units of special price",
            CouponKind::FreeShipping => "minor units of shipping waived (the cap)",
            CouponKind::BuyXGetY => {
                "free units per order (get × max_applications; unbounded without it)"
            }
        }
    }
}

/// The value of a coupon, tagged by its kind.
///
/// JSON: `{"kind": "amount_off", "amount": 2000}`, `{"kind": "percent_off", "bps": 1500, "cap": 5000}`,
/// `{"kind": "free_days", "days": 7}`, `{"kind": "deposit_waiver", "cap": 300000}`,
/// `{"kind": "special_price", "price": 199900}`, `{"kind": "free_shipping", "cap": 1500}`,
/// `{"kind": "buy_x_get_y", "buy": 2, "get": 1, "gift": {"type": "cheapest"},
/// "max_applications": 3}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CouponValue {
    /// A fixed amount off; with a threshold it is a full-reduction coupon (spend 100, get 20 off).
    AmountOff { amount: Money },
    /// A percentage off, optionally capped.
    PercentOff {
        bps: BasisPoints,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cap: Option<Money>,
    },
    /// N days of rent free; daily rent is monthly rent / 30, rounded down.
    FreeDays { days: u32 },
    /// The deposit waived, optionally only up to a cap.
    DepositWaiver {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cap: Option<Money>,
    },
    /// The listing's price becomes this fixed price.
    SpecialPrice { price: Money },
    /// The in-scope `shipping` lines waived, optionally only up to a cap.
    FreeShipping {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cap: Option<Money>,
    },
    /// Buy `buy` units, get `get` units free: each application takes `buy + get` in-scope
    /// purchase units and makes `get` of them, chosen by `gift`, free; at most
    /// `max_applications` times per order (no limit but the order's units when absent). See
    /// [`discount`](crate::checkout::discount()) for the exact rule.
    #[serde(rename = "buy_x_get_y")]
    BuyXGetY {
        /// Units paid for per application, 1..=1000.
        buy: u32,
        /// Units free per application, 1..=1000.
        get: u32,
        /// Which units are free; the cheapest when absent.
        #[serde(default)]
        gift: Gift,
        /// 1..=10000 when set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_applications: Option<u32>,
    },
}

/// Which units a `buy_x_get_y` coupon gives away. Gift units are always in-scope purchase
/// units (`item` or `rent` lines the scope covers): a gift outside the coupon's scope is never
/// free, so scope a "buy 2 shirts, get a belt" coupon to both categories (or the merchant).
///
/// JSON: `{"type": "cheapest"}`, `{"type": "product", "product_id": "sku-1"}`,
/// `{"type": "listing", "id": 12}`, `{"type": "category", "id": 3}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Gift {
    /// Any in-scope unit: the cheapest ones are free.
    #[default]
    Cheapest,
    /// Units of lines with this `product_id` (the order service's own id, 1 to 128 characters).
    Product { product_id: String },
    /// Units of lines of this listing.
    Listing { id: ListingId },
    /// Units of lines in this category.
    Category { id: CategoryId },
}

impl Gift {
    /// Whether the units of `line` are gift units (scope and line kind aside).
    pub fn matches(&self, line: &LineDraft) -> bool {
        match self {
            Gift::Cheapest => true,
            Gift::Product { product_id } => line.product_id.as_deref() == Some(product_id),
            Gift::Listing { id } => line.listing_id == Some(*id),
            Gift::Category { id } => line.category_id == *id,
        }
    }
}

/// Most `buy` or `get` units of one `buy_x_get_y` application.
pub const MAX_BXGY_UNITS: u32 = 1000;
/// Most applications of one `buy_x_get_y` coupon on one order.
pub const MAX_BXGY_APPLICATIONS: u32 = 10_000;

impl CouponValue {
    /// The value's kind.
    pub fn kind(&self) -> CouponKind {
        match self {
            CouponValue::AmountOff { .. } => CouponKind::AmountOff,
            CouponValue::PercentOff { .. } => CouponKind::PercentOff,
            CouponValue::FreeDays { .. } => CouponKind::FreeDays,
            CouponValue::DepositWaiver { .. } => CouponKind::DepositWaiver,
            CouponValue::SpecialPrice { .. } => CouponKind::SpecialPrice,
            CouponValue::FreeShipping { .. } => CouponKind::FreeShipping,
            CouponValue::BuyXGetY { .. } => CouponKind::BuyXGetY,
        }
    }

    /// The number an activity's `[value_min, value_max]` bounds apply to, in the kind's unit
    /// ([`CouponKind::bound_unit`]). An uncapped deposit waiver or free shipping, and a
    /// buy-x-get-y without `max_applications`, count as unbounded.
    pub fn magnitude(&self) -> i64 {
        match self {
            CouponValue::AmountOff { amount } => amount.minor(),
            CouponValue::PercentOff { bps, .. } => i64::from(bps.get()),
            CouponValue::FreeDays { days } => i64::from(*days),
            CouponValue::DepositWaiver { cap } | CouponValue::FreeShipping { cap } => {
                cap.map_or(i64::MAX, Money::minor)
            }
            CouponValue::SpecialPrice { price } => price.minor(),
            // Saturating: a stored value may hold any u32 in both.
            CouponValue::BuyXGetY {
                get,
                max_applications,
                ..
            } => {
                max_applications.map_or(i64::MAX, |n| i64::from(*get).saturating_mul(i64::from(n)))
            }
        }
    }

    /// Rules a value must meet on its own, whatever activity it is in.
    pub fn validate(&self) -> Result<(), DomainError> {
        let bad = |f: &str, m: &str| Err(DomainError::invalid(f, "invalid_value", m));
        match self {
            CouponValue::AmountOff { amount } if amount.minor() == 0 => {
                bad("value.amount", "amount must be at least 1")
            }
            CouponValue::PercentOff { bps, .. } if bps.get() == 0 => {
                bad("value.bps", "bps must be from 1 to 10000")
            }
            CouponValue::PercentOff { cap: Some(c), .. } if c.minor() == 0 => {
                bad("value.cap", "cap must be at least 1 when set")
            }
            CouponValue::FreeDays { days } if !(1..=366).contains(days) => {
                bad("value.days", "days must be from 1 to 366")
            }
            CouponValue::DepositWaiver { cap: Some(c) }
            | CouponValue::FreeShipping { cap: Some(c) }
                if c.minor() == 0 =>
            {
                bad("value.cap", "cap must be at least 1 when set")
            }
            CouponValue::BuyXGetY {
                buy,
                get,
                gift,
                max_applications,
            } => validate_bxgy(*buy, *get, gift, *max_applications),
            _ => Ok(()),
        }
    }
}

fn validate_bxgy(
    buy: u32,
    get: u32,
    gift: &Gift,
    max_applications: Option<u32>,
) -> Result<(), DomainError> {
    let bad = |f: &str, m: String| Err(DomainError::invalid(f, "invalid_value", m));
    if !(1..=MAX_BXGY_UNITS).contains(&buy) {
        return bad(
            "value.buy",
            format!("buy must be from 1 to {MAX_BXGY_UNITS}"),
        );
    }
    if !(1..=MAX_BXGY_UNITS).contains(&get) {
        return bad(
            "value.get",
            format!("get must be from 1 to {MAX_BXGY_UNITS}"),
        );
    }
    if max_applications.is_some_and(|n| !(1..=MAX_BXGY_APPLICATIONS).contains(&n)) {
        return bad(
            "value.max_applications",
            format!("max_applications must be from 1 to {MAX_BXGY_APPLICATIONS} when set"),
        );
    }
    match gift {
        Gift::Product { product_id } => {
            check_text("value.gift.product_id", product_id, 1, MAX_PRODUCT_ID_CHARS)
        }
        _ => Ok(()),
    }
}

/// How a lease discount is taken.
// (The rental design's `deduction`: 1 first month, 2 spread.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeductionMode {
    /// All of it from the first month.
    #[default]
    Upfront,
    /// Spread evenly over the lease months.
    Spread,
}

/// Who may hold the coupon.
// (The rental design's `tenantRange` / `customScope`.)
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Audience {
    #[default]
    Everyone,
    /// Only these users (at most 10,000; larger audiences use bulk issuance).
    Users { ids: Vec<UserId> },
    /// Users holding any of these tags (1 to 20) when they claim: the claim's transaction
    /// reads the tags coupond holds for them (`PUT /v1/users/{id}/tags`).
    Tags {
        #[schema(value_type = Vec<String>)]
        any: Vec<Tag>,
    },
}

impl Audience {
    pub const MAX_USERS: usize = 10_000;

    /// The audience as stored: a tag audience's tags as a set.
    pub fn validate(self) -> Result<Audience, DomainError> {
        match self {
            Audience::Users { ids } if ids.is_empty() || ids.len() > Self::MAX_USERS => {
                Err(DomainError::invalid(
                    "audience.ids",
                    "invalid_audience",
                    format!("between 1 and {} user ids", Self::MAX_USERS),
                ))
            }
            Audience::Tags { any } => Ok(Audience::Tags {
                any: tag_set("audience.any", &any, 1, MAX_SEGMENT_TAGS)?,
            }),
            a => Ok(a),
        }
    }

    /// Whether `user` is in the audience, when that can be told without the user's tags;
    /// `None` for a tag audience, which the store decides in the claim's transaction.
    pub fn admits(&self, user: &UserId) -> Option<bool> {
        match self {
            Audience::Everyone => Some(true),
            Audience::Users { ids } => Some(ids.contains(user)),
            Audience::Tags { .. } => None,
        }
    }

    /// The tags a claimant must hold one of, for a tag audience; empty otherwise.
    pub fn tags(&self) -> &[Tag] {
        match self {
            Audience::Tags { any } => any,
            _ => &[],
        }
    }
}

/// How long a claimed coupon can be used.
// (The rental design's `expireType`: 1 fixed, 2 floating.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Validity {
    /// Usable within `[from, until)` whenever claimed.
    Fixed { from: Timestamp, until: Timestamp },
    /// Usable for `days` days from the moment of claim.
    Relative { days: u32 },
}

impl Validity {
    pub fn validate(&self) -> Result<(), DomainError> {
        match self {
            Validity::Fixed { from, until } if from >= until => Err(DomainError::invalid(
                "validity.until",
                "invalid_window",
                "until must be after from",
            )),
            Validity::Relative { days } if !(1..=3650).contains(days) => Err(DomainError::invalid(
                "validity.days",
                "invalid_value",
                "days must be from 1 to 3650",
            )),
            _ => Ok(()),
        }
    }

    /// The validity window of a coupon claimed at `claimed_at`.
    pub fn for_claim(&self, claimed_at: Timestamp) -> (Timestamp, Timestamp) {
        match self {
            Validity::Fixed { from, until } => (*from, *until),
            Validity::Relative { days } => (
                claimed_at,
                claimed_at.plus(time::Duration::days(i64::from(*days))),
            ),
        }
    }
}

mod scope;
mod stacking;

pub use scope::{Coverage, Exclusions, Scope};
pub use stacking::{Priority, Stacking, StackingGroup, MAX_PRIORITY};

#[cfg(test)]
mod tests;
