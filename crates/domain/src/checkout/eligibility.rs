//! Whether a held coupon can be used on an order, and every reason why not.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::checkout::discount::{lines_in, purchase, terms, TemplateUse, Terms};
use crate::checkout::order::Order;
use crate::coupon::Scope;
use crate::ids::MerchantId;
use crate::money::Money;
use crate::rules::{Conditions, Customer, Facts, LocalNow, Unmet};
use crate::time::Timestamp;
use crate::wallet::{Coupon, CouponStatus};
use crate::zone::Zone;

/// Why a coupon cannot be used on an order. Stable codes, documented in the API; a quote lists
/// every one that holds, in this declaration order.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Its validity ended (`now >= valid_until`), or it was marked expired.
    Expired,
    /// Its validity has not started (`now < valid_from`).
    NotYetValid,
    /// The in-scope purchase subtotal is below the template's threshold.
    BelowThreshold,
    /// Nothing in the order is in the template's scope for this kind of coupon (see
    /// [`discount`](crate::checkout::discount())).
    OutOfScope,
    /// The template's conditions do not hold on this order; a quote says which tests fail
    /// and what each needs (`unmet`).
    ConditionsUnmet,
    /// The order's city is not one of the template's cities.
    WrongCity,
    /// The coupon belongs to another user.
    NotOwner,
    /// Held by an order (locked until its deadline).
    Locked,
    Used,
    Revoked,
    /// The template was aborted: its coupons can no longer be used.
    TemplateAborted,
    /// The template's budget is spent (`given >= budget`).
    BudgetExhausted,
    /// One user's uses of the template in a local day, week or month would pass one of its
    /// `use_limits`. Only a lock says it: it counts the uses, in its transaction.
    UseLimitReached,
    /// Usable on its own, but not together with the best combination, and not part of it.
    /// Only a quote produces it: for an applicable `exclusive` coupon when the best
    /// combination is not empty and is not this coupon (a stackable set, or another exclusive
    /// coupon, including one of the same template); and for an applicable `stackable` coupon
    /// when the best combination is an exclusive coupon.
    ExclusiveConflict,
    /// Usable on its own, but another template of its `stacking_group` is in the best
    /// combination (at most one coupon of a group applies to an order). Only a quote produces
    /// it; a lock asked for two coupons of one group refuses one of them with it.
    GroupConflict,
    /// Usable, but it takes nothing off: a quote says it of a coupon whose own discount on
    /// the order is zero; a lock also of one asked for together with coupons that leave it
    /// nothing to take off (another coupon of its template, or lines already fully
    /// discounted). A coupon is never spent for nothing.
    Redundant,
}

impl Reason {
    pub const ALL: [Reason; 16] = [
        Reason::Expired,
        Reason::NotYetValid,
        Reason::BelowThreshold,
        Reason::OutOfScope,
        Reason::ConditionsUnmet,
        Reason::WrongCity,
        Reason::NotOwner,
        Reason::Locked,
        Reason::Used,
        Reason::Revoked,
        Reason::TemplateAborted,
        Reason::BudgetExhausted,
        Reason::UseLimitReached,
        Reason::ExclusiveConflict,
        Reason::GroupConflict,
        Reason::Redundant,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Expired => "expired",
            Reason::NotYetValid => "not_yet_valid",
            Reason::BelowThreshold => "below_threshold",
            Reason::OutOfScope => "out_of_scope",
            Reason::ConditionsUnmet => "conditions_unmet",
            Reason::WrongCity => "wrong_city",
            Reason::NotOwner => "not_owner",
            Reason::Locked => "locked",
            Reason::Used => "used",
            Reason::Revoked => "revoked",
            Reason::TemplateAborted => "template_aborted",
            Reason::BudgetExhausted => "budget_exhausted",
            Reason::UseLimitReached => "use_limit_reached",
            Reason::ExclusiveConflict => "exclusive_conflict",
            Reason::GroupConflict => "group_conflict",
            Reason::Redundant => "redundant",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// What a template's conditions read besides the order and the coupon: the platform's time
/// zone (`order.weekday`, `order.local_time`) and the customer (`customer.*`; `None` when not
/// read, and then no `customer.*` test holds).
#[derive(Clone, Copy, Debug, Default)]
pub struct Situation<'a> {
    pub zone: Zone,
    pub customer: Option<&'a Customer>,
}

/// Every reason `coupon` (of template `t`) cannot be used on `order` at `now`; empty when it
/// can. All checks are independent, so a coupon that is both expired and out of scope says
/// both. `exclusive_conflict` is never produced here: it depends on the other coupons (see
/// [`quote`](crate::checkout::quote())). With `conditions_unmet`, the second list says what
/// is missing.
///
/// The threshold is compared with the subtotal of the in-scope `item` and `rent` lines (what
/// the user buys), whatever the coupon's kind: a deposit is refundable and shipping is not a
/// purchase, so neither helps reach a threshold, also for a deposit waiver or free days.
///
/// A coupon locked by any order, this one included, is `locked`: the redemption flow decides
/// what to do with its own lock before asking.
///
/// `coupon.template_id` should be `t.template.id`; [`quote`](crate::checkout::quote())
/// checks it, this function trusts the caller.
pub fn eligibility(
    order: &Order,
    now: Timestamp,
    situation: Situation<'_>,
    coupon: &Coupon,
    t: TemplateUse<'_>,
) -> (Vec<Reason>, Vec<Unmet>) {
    let terms = terms(order, t);
    let local = LocalNow::new(now, situation.zone);
    let unmet = unmet(order, &local, situation, t, &terms);
    (
        reasons(order, now, coupon, t, &terms, unmet.is_empty()),
        unmet,
    )
}

/// What keeps `t`'s conditions from holding on `order` (empty when they hold, or when it has
/// none).
pub(crate) fn unmet(
    order: &Order,
    local: &LocalNow,
    situation: Situation<'_>,
    t: TemplateUse<'_>,
    terms: &Terms,
) -> Vec<Unmet> {
    let Some(c) = t.template.spec.conditions() else {
        return Vec::new();
    };
    let facts = Facts {
        subtotal: terms.subtotal,
        quantity: terms.quantity,
        city_id: order.city_id,
        channel: order.channel.as_deref(),
        local,
        customer: situation.customer,
    };
    if c.holds(&facts) {
        Vec::new()
    } else {
        c.unmet(&facts)
    }
}

/// What conditions come to on an order before a template uses them (a rule tried before it is
/// published): whether they hold, and if not what is missing, with the in-scope subtotal and
/// units they read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct RuleCheck {
    pub holds: bool,
    /// Each failing test and what it needs; empty when they hold.
    pub unmet: Vec<Unmet>,
    /// The in-scope purchase subtotal (`order.subtotal`).
    pub subtotal: Money,
    /// The in-scope purchase units (`order.quantity`).
    pub quantity: i64,
}

/// Tries `conditions` on `order` at `now`, with `scope` (of a template of `merchant`) deciding
/// which lines count.
pub fn check_rule(
    order: &Order,
    now: Timestamp,
    situation: Situation<'_>,
    scope: &Scope,
    merchant: Option<MerchantId>,
    conditions: &Conditions,
) -> RuleCheck {
    let (subtotal, quantity) = purchase(order, &lines_in(order, scope, merchant));
    let local = LocalNow::new(now, situation.zone);
    let facts = Facts {
        subtotal,
        quantity,
        city_id: order.city_id,
        channel: order.channel.as_deref(),
        local: &local,
        customer: situation.customer,
    };
    let unmet = conditions.unmet(&facts);
    RuleCheck {
        holds: unmet.is_empty(),
        unmet,
        subtotal,
        quantity,
    }
}

pub(crate) fn reasons(
    order: &Order,
    now: Timestamp,
    coupon: &Coupon,
    t: TemplateUse<'_>,
    terms: &Terms,
    conditions_hold: bool,
) -> Vec<Reason> {
    let spec = &t.template.spec;
    let mut r = standing(now, coupon, t);
    if terms.subtotal < spec.threshold {
        r.push(Reason::BelowThreshold);
    }
    if !terms.in_scope {
        r.push(Reason::OutOfScope);
    }
    if !conditions_hold {
        r.push(Reason::ConditionsUnmet);
    }
    if !spec.cities.contains(order.city_id) {
        r.push(Reason::WrongCity);
    }
    if coupon.user_id != order.user_id {
        r.push(Reason::NotOwner);
    }
    // Declaration order, as documented on [`Reason`].
    r.sort_unstable();
    r
}

/// Why `coupon` (of template `t`) cannot be used on any order at `now`, whoever holds it: the
/// reasons that do not depend on an order (`expired`, `not_yet_valid`, `locked`, `used`,
/// `revoked`, `template_aborted`, `budget_exhausted`), in declaration order; empty when it is
/// usable. A wallet shows them, so a coupon of an aborted template does not look usable.
pub fn standing(now: Timestamp, coupon: &Coupon, t: TemplateUse<'_>) -> Vec<Reason> {
    let mut r = Vec::new();
    if now >= coupon.valid_until || coupon.status(now) == CouponStatus::Expired {
        r.push(Reason::Expired);
    }
    if now < coupon.valid_from {
        r.push(Reason::NotYetValid);
    }
    match coupon.stored_status {
        CouponStatus::Locked => r.push(Reason::Locked),
        CouponStatus::Used => r.push(Reason::Used),
        CouponStatus::Revoked => r.push(Reason::Revoked),
        CouponStatus::Unused | CouponStatus::Expired => {}
    }
    // What `status(now) == Aborted` means, without computing the rest of the status.
    if t.template.aborted_at.is_some() {
        r.push(Reason::TemplateAborted);
    }
    if t.budget_exhausted() {
        r.push(Reason::BudgetExhausted);
    }
    r
}
