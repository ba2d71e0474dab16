//! Checkout rules: what coupons can do for an order. Pure functions of the order, the held
//! coupons, their templates and the clock; the engine loads those and the API exposes a quote.
//!
//! - `order`: the order snapshot ([`OrderDraft`] as sent, [`Order`] once validated).
//! - `eligibility`: whether one coupon can be used ([`eligibility()`]; on any order, for a
//!   wallet: [`standing()`]), with every [`Reason`] why not and what its template's conditions
//!   miss; a rule's conditions tried on their own ([`check_rule()`]).
//! - `discount`: what one coupon takes off ([`discount()`]), split over lines and lease months.
//! - `bxgy`: which units a `buy_x_get_y` coupon makes free.
//! - `quote`: every coupon of a wallet at once, and the best combination ([`quote()`]).
//! - `combine`: the stackable part of it: groups, priorities, each discount on what the ones
//!   before it left.
//!
//! Money rules (DESIGN §2, I8): discounts round down to the minor unit, never exceed what they
//! apply to (per line, and in total for a combination), and every split over lines or months
//! sums exactly to the whole.

pub(crate) mod bxgy;
mod combine;
mod discount;
mod eligibility;
mod order;
mod quote;

#[cfg(test)]
mod tests;

pub use combine::MAX_GROUP_CHOICES;
pub use discount::{discount, schedule, Discount, LineDiscount, TemplateUse};
pub use eligibility::{check_rule, eligibility, standing, Reason, RuleCheck, Situation};
pub use order::{
    Lease, LeaseDraft, LineDraft, LineKind, Order, OrderDraft, MAX_LEASE_MONTHS, MAX_LINES,
    MAX_PRODUCT_ID_CHARS, MAX_QUANTITY,
};
pub use quote::{quote, AppliedCoupon, Combination, CouponQuote, Quote, QuoteInput};
