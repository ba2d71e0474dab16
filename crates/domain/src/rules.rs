//! Promotion rules: what a template's coupons need of the order, the customer and the clock
//! besides their scope and threshold, checked by every quote and lock, and what is missing
//! when they do not hold.
//!
//! - `condition`: the tree as written ([`Condition`]: `all`, `any`, `not`, and tests of a
//!   [`Fact`] with an [`Op`] and a value), its JSON shape and OpenAPI schema.
//! - `compile`: its checks ([`Conditions::compile`]: at most [`MAX_LEAVES`] tests, at most
//!   [`MAX_DEPTH`] levels, each value fit for its fact and operator), into the form checkout
//!   runs, built once per template.
//! - `facts`: what the tests read ([`Facts`]: the order's in-scope subtotal and units, its
//!   city and channel, the local weekday and time, the [`Customer`]).
//! - `limits`: [`UseLimit`], how often one user may use a template's coupons per local
//!   [`Period`] (checked by the lock, where uses are counted).
//! - `named`: [`Rule`], a tree (and a scope) with a name that many templates share; a
//!   template carries a copy of its version ([`RuleTerms`]).
//! - `eval`: whether a tree holds ([`Conditions::unmet`]), and when it does not, what is
//!   missing ([`Unmet`]): the tests that fail, an `any` group by its cheapest branch.

mod compile;
mod condition;
mod eval;
mod facts;
mod limits;
mod named;

#[cfg(test)]
mod tests;

pub use compile::{check_channel, Conditions, MAX_CHANNEL_CHARS, MAX_DEPTH, MAX_LEAVES, MAX_LIST};
pub use condition::{Condition, ConditionTest, Fact, Op};
pub use eval::Unmet;
pub use facts::{Customer, Facts, LocalNow};
pub use limits::{Period, UseLimit, MAX_USES};
pub use named::{Rule, RuleDraft, RuleTerms, RuleUse, MAX_RULE_NAME};
