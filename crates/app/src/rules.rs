//! Promotion rules tried before they are published: a condition tree (and a scope) on an
//! order the caller makes up, with a customer it makes up, at an instant it picks. Nothing is
//! read from the store: a merchant learns nothing about real users this way.

use coupond_domain::checkout::{check_rule, RuleCheck, Situation};
use coupond_domain::{Condition, Conditions, Customer, DomainError, Order, Scope, Tag, Timestamp};

use crate::caller::{Access, Principal};
use crate::context::App;
use crate::error::AppResult;

/// Who may try rules: whoever writes templates.
pub const TRY: Access = crate::templates::EDIT;

/// A rule to try, on an order.
#[derive(Clone, Debug)]
pub struct RulePreviewRequest {
    pub conditions: Condition,
    /// Which lines `order.subtotal` and `order.quantity` count (default: every line).
    pub scope: Scope,
    pub order: Order,
    /// The customer its `customer.*` tests read; `None`: not known (they fail).
    pub customer: Option<Customer>,
    /// When it is tried (`order.weekday`, `order.local_time`); `None`: now.
    pub at: Option<Timestamp>,
}

impl App {
    /// Tries `req`'s conditions on its order, for `p` (a merchant's `merchant` scope is its
    /// own lines), in the platform's time zone.
    pub fn preview_rule(&self, p: &Principal, req: &RulePreviewRequest) -> AppResult<RuleCheck> {
        let merchant = p.merchant();
        let conditions =
            Conditions::compile(&req.conditions).map_err(|e| e.within("conditions"))?;
        req.scope.validate(merchant.is_some())?;
        let situation = Situation {
            zone: self.zone(),
            customer: req.customer.as_ref(),
        };
        let at = req.at.unwrap_or_else(|| self.now());
        Ok(check_rule(
            &req.order,
            at,
            situation,
            &req.scope,
            merchant,
            &conditions,
        ))
    }
}

/// A made-up customer: these tags (each checked) and this many confirmed orders.
pub fn customer(tags: &[String], confirmed_orders: u64) -> Result<Customer, DomainError> {
    let tags = tags
        .iter()
        .enumerate()
        .map(|(i, t)| {
            Tag::parse(t).map_err(|m| {
                DomainError::invalid(&format!("customer.tags[{i}]"), "invalid_value", m)
            })
        })
        .collect::<Result<Vec<Tag>, DomainError>>()?;
    Ok(Customer::new(tags, confirmed_orders))
}
