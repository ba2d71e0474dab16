//! What one coupon takes off an order, where it takes it from, and when (for a lease).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::checkout::bxgy::Bxgy;
use crate::checkout::order::{Lease, LineKind, Order};
use crate::coupon::{CouponValue, Coverage, DeductionMode, Scope};
use crate::ids::MerchantId;
use crate::money::Money;
use crate::template::Template;

/// A template as checkout sees it: its terms, and the discount it has already given (for its
/// budget). Coupons of one template share it, so a quote asks for it once per template.
#[derive(Clone, Copy, Debug)]
pub struct TemplateUse<'a> {
    pub template: &'a Template,
    /// Total discount already given through the template (used or locked coupons), minor units.
    pub given: Money,
}

impl<'a> TemplateUse<'a> {
    /// The template as recorded: what its used coupons gave and its locks hold count against
    /// its budget.
    pub fn of(template: &'a Template) -> Self {
        TemplateUse {
            template,
            given: template.given.saturating_add(template.reserved),
        }
    }

    /// What is left of the budget, `None` when the template has no budget.
    pub fn remaining_budget(&self) -> Option<Money> {
        self.template
            .spec
            .budget
            .map(|b| b.saturating_sub(self.given))
    }

    /// `given >= budget`: nothing is left to give.
    pub fn budget_exhausted(&self) -> bool {
        self.remaining_budget() == Some(Money::ZERO)
    }
}

/// The part of a discount taken from one order line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LineDiscount {
    /// Index of the line in the order's `lines`.
    pub line: usize,
    pub amount: Money,
}

/// A discount with its split over lines and, for a lease, over months.
///
/// `lines` lists the lines it takes something from (amount > 0), by index; the amounts sum to
/// `discount` and none exceeds its line's amount. `schedule` has one entry per lease month
/// (empty without a lease) and sums to `discount`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Discount {
    pub discount: Money,
    pub lines: Vec<LineDiscount>,
    pub schedule: Vec<Money>,
}

/// What a template's terms come to on one order, before anything about the held coupon
/// (owner, status, validity) is looked at. Computed once per template in a quote.
#[derive(Clone, Debug)]
pub(crate) struct Terms {
    /// Subtotal of the in-scope purchase (`item` and `rent`) lines: what the threshold is
    /// compared with.
    pub subtotal: Money,
    /// Units of the in-scope purchase lines (`order.quantity` of a condition).
    pub quantity: i64,
    /// Whether the coupon has something in the order to apply to (see [`discount`]).
    pub in_scope: bool,
    /// The discount alone, on the order as sent, capped to the remaining budget.
    pub discount: Money,
    /// `(line index, most)` for every line the discount applies to: the most it could take
    /// from each.
    pub weights: Vec<(usize, Money)>,
}

impl Terms {
    /// `(line index, part)` for every line the discount applies to, zero parts included.
    /// Split when asked: a quote needs the parts of the coupons it applies, not of the rest.
    pub fn parts(&self) -> Vec<(usize, Money)> {
        split_over(self.discount, self.weights.clone())
    }
}

/// Which lines of `order` the template's scope covers, less the lines it excludes.
pub(crate) fn scope_mask(order: &Order, template: &Template) -> Vec<bool> {
    lines_in(order, template.spec.scope(), template.merchant_id)
}

/// Which lines of `order` `scope` covers, less the lines it excludes, for a template of
/// `merchant` (`None`: the platform's).
pub(crate) fn lines_in(order: &Order, scope: &Scope, merchant: Option<MerchantId>) -> Vec<bool> {
    let mut mask = coverage_mask(order, &scope.coverage, merchant);
    let exclude = &scope.exclude;
    if !exclude.is_empty() {
        for (m, line) in mask.iter_mut().zip(&order.lines) {
            *m = *m && !exclude.excludes(line);
        }
    }
    mask
}

fn coverage_mask(order: &Order, coverage: &Coverage, merchant: Option<MerchantId>) -> Vec<bool> {
    let n = order.lines.len();
    match coverage {
        Coverage::All => vec![true; n],
        Coverage::Merchant => order
            .lines
            .iter()
            .map(|l| Some(l.merchant_id) == merchant)
            .collect(),
        Coverage::Categories { ids } => {
            let mut mask = vec![false; n];
            for &id in ids {
                for i in order.lines_of_category(id) {
                    mask[i] = true;
                }
            }
            mask
        }
        Coverage::Listings { ids } => {
            let mut mask = vec![false; n];
            for &id in ids {
                for i in order.lines_of_listing(id) {
                    mask[i] = true;
                }
            }
            mask
        }
    }
}

/// Whether a coupon of this value applies to a line of this kind.
fn applies_to(value: &CouponValue, kind: LineKind) -> bool {
    match value {
        CouponValue::AmountOff { .. }
        | CouponValue::PercentOff { .. }
        | CouponValue::SpecialPrice { .. }
        | CouponValue::BuyXGetY { .. } => kind.is_purchase(),
        CouponValue::FreeDays { .. } => kind == LineKind::Rent,
        CouponValue::DepositWaiver { .. } => kind == LineKind::Deposit,
        CouponValue::FreeShipping { .. } => kind == LineKind::Shipping,
    }
}

/// Per in-scope line of a kind `value` applies to, in line order: the most the discount could
/// take from that line (zero included).
fn weights(order: &Order, mask: &[bool], value: &CouponValue) -> Vec<(usize, Money)> {
    if let CouponValue::BuyXGetY {
        buy,
        get,
        gift,
        max_applications,
    } = value
    {
        let offer = Bxgy {
            buy: *buy,
            get: *get,
            gift,
            max_applications: *max_applications,
        };
        return offer.free_amounts(order, mask);
    }
    let amounts = order.amounts();
    let mut weights = Vec::with_capacity(order.lines.len());
    for (i, line) in order.lines.iter().enumerate() {
        if !mask[i] || !applies_to(value, line.kind) {
            continue;
        }
        let most = match value {
            // The line's price becomes the special price: the saving per unit, never
            // negative, times the quantity. At most the line's amount.
            CouponValue::SpecialPrice { price } => line
                .unit_price
                .saturating_sub(*price)
                .checked_mul(line.quantity)
                .map_or(amounts[i], |s| s.min(amounts[i])),
            _ => amounts[i],
        };
        weights.push((i, most));
    }
    weights
}

/// The subtotal and the units of the purchase (`item`, `rent`) lines in `mask`, in one pass
/// (a quote runs it once per template).
pub(crate) fn purchase(order: &Order, mask: &[bool]) -> (Money, i64) {
    let amounts = order.amounts();
    let mut subtotal = Money::ZERO;
    let mut units = 0i64;
    for (i, line) in order.lines.iter().enumerate() {
        if mask[i] && line.kind.is_purchase() {
            subtotal = subtotal.saturating_add(amounts[i]);
            units = units.saturating_add(line.quantity);
        }
    }
    (subtotal, units)
}

pub(crate) fn terms(order: &Order, t: TemplateUse<'_>) -> Terms {
    let spec = &t.template.spec;
    let mask = scope_mask(order, t.template);
    let (subtotal, quantity) = purchase(order, &mask);
    // Per line the discount applies to: how much it could take from that line at most.
    let weights = weights(order, &mask, &spec.value);
    let needs_lease = matches!(spec.value, CouponValue::FreeDays { .. });
    let in_scope = !weights.is_empty() && (order.lease().is_some() || !needs_lease);
    if !in_scope {
        return Terms {
            subtotal,
            quantity,
            in_scope,
            discount: Money::ZERO,
            weights: Vec::new(),
        };
    }
    let discount = value_on(order, t, &weights);
    Terms {
        subtotal,
        quantity,
        in_scope,
        discount,
        weights,
    }
}

/// What a discount of `t` with terms `tm` takes when the discounts applied before it left
/// `left` of each line: each line's weight shrinks in proportion to what is left of the line,
/// and the value is taken on that base (a percentage of what is left; an amount as far as
/// what is left allows; free units and special prices at what is left of their price),
/// capped to the budget. Its own parts when nothing was taken from its lines.
pub(crate) fn take_from(
    order: &Order,
    t: TemplateUse<'_>,
    tm: &Terms,
    left: &[Money],
) -> Vec<(usize, Money)> {
    let amounts = order.amounts();
    if tm.weights.iter().all(|&(i, _)| left[i] == amounts[i]) {
        return tm.parts();
    }
    // Each line's weight shrinks with the line: what is left of it over what it was (a free
    // unit after 50 % off is worth half its price). Only lines with something left take part.
    let lines: Vec<(usize, Money)> = tm
        .weights
        .iter()
        .filter_map(|&(i, w)| {
            let w = scaled(w, left[i], amounts[i]);
            (w > Money::ZERO).then_some((i, w))
        })
        .collect();
    split_value(order, t, lines).1
}

/// `w × left / amount` rounded down (`w` when nothing was taken, `left` when `w` is the whole
/// line); never more than `left`.
fn scaled(w: Money, left: Money, amount: Money) -> Money {
    if left >= amount {
        return w;
    }
    if w >= amount {
        return left;
    }
    let v = i128::from(w.minor()) * i128::from(left.minor()) / i128::from(amount.minor().max(1));
    Money::new(i64::try_from(v).unwrap_or(0))
        .unwrap_or(Money::ZERO)
        .min(left)
}

/// The value of `t` on the base `lines` (per line, the most it may take there), capped to
/// the budget, and its split over those lines (the same vector, each weight replaced by its
/// part).
fn split_value(
    order: &Order,
    t: TemplateUse<'_>,
    lines: Vec<(usize, Money)>,
) -> (Money, Vec<(usize, Money)>) {
    let discount = value_on(order, t, &lines);
    (discount, split_over(discount, lines))
}

/// `discount` split over `lines` (each weight replaced by its part). All of every weight (free
/// units, a waiver, an amount above the base) needs no split; otherwise discount <= sum(w), so
/// largest remainder gives no line more than its weight.
fn split_over(discount: Money, mut lines: Vec<(usize, Money)>) -> Vec<(usize, Money)> {
    let base = lines
        .iter()
        .fold(Money::ZERO, |s, &(_, w)| s.saturating_add(w));
    if discount != base {
        discount.split_pairs(&mut lines);
    }
    lines
}

/// The value of `t` on the base `lines` (per line, the most it may take there), capped to
/// the budget.
fn value_on(order: &Order, t: TemplateUse<'_>, lines: &[(usize, Money)]) -> Money {
    let base = lines
        .iter()
        .fold(Money::ZERO, |s, &(_, w)| s.saturating_add(w));
    let raw = match t.template.spec.value {
        CouponValue::AmountOff { amount } => amount.min(base),
        CouponValue::PercentOff { bps, cap } => {
            let d = base.percent(bps);
            cap.map_or(d, |c| d.min(c))
        }
        CouponValue::FreeDays { days } => order
            .lease()
            .map(Lease::daily_rent)
            .and_then(|daily| daily.checked_mul(i64::from(days)))
            // Above MONEY_MAX is above any base, so the base is the answer.
            .map_or(base, |d| d.min(base)),
        CouponValue::DepositWaiver { cap } | CouponValue::FreeShipping { cap } => {
            cap.map_or(base, |c| base.min(c))
        }
        // `base` is already the sum of the per-line savings (free units).
        CouponValue::SpecialPrice { .. } | CouponValue::BuyXGetY { .. } => base,
    };
    t.remaining_budget().map_or(raw, |r| raw.min(r))
}

/// The discount a coupon of `t` would give on `order` on its own, or `None` when it has
/// nothing to apply to there (`out_of_scope`). This is only the arithmetic: whether the coupon
/// may be used at all is [`eligibility`](crate::checkout::eligibility()).
///
/// Each kind applies to the in-scope lines of certain kinds, its *base*:
/// - `amount_off`: `min(amount, base)`, base = in-scope `item` and `rent` lines;
/// - `percent_off`: `base × bps / 10000` rounded down, then at most `cap`; same base;
/// - `free_days`: `daily rent × days`, daily rent = the lease's monthly rent / 30 rounded
///   down, at most the base = in-scope `rent` lines. Needs a lease (its monthly rent prices
///   the days) and at least one in-scope rent line (the discount comes off rent the order
///   bills, so I8 holds line by line); otherwise out of scope. The lease total
///   (`monthly_rent × months`) is never used as a base: it may not be what the order bills;
/// - `deposit_waiver`: the in-scope `deposit` lines, at most `cap`;
/// - `special_price`: for each in-scope `item`/`rent` line, `max(0, unit_price − price) ×
///   quantity` (the line is billed at the special price);
/// - `free_shipping`: the in-scope `shipping` lines, at most `cap`. Out of scope without an
///   in-scope shipping line;
/// - `buy_x_get_y`: the free units' prices, on the in-scope `item`/`rent` lines (in scope with
///   any such line, even when too few units make it zero): `applications = min(units / (buy +
///   get), gift units / get, max_applications)` and `applications × get` gift units, the
///   cheapest first, are free. Units count across lines; `cheapest` makes every unit a gift
///   unit. The dearest gift units are the ones paid for as `buy` units.
///
/// Whatever the kind, the threshold is compared with the in-scope `item` and `rent` subtotal.
///
/// Then the discount is capped to what is left of the template's budget. It is split over
/// the base lines by largest remainder, weighted by each line's amount (by each line's saving
/// for `special_price`, by each line's free units for `buy_x_get_y`), so parts sum exactly and
/// no part exceeds its line. With a lease, the schedule follows the template's deduction mode
/// (see [`schedule`]).
pub fn discount(order: &Order, t: TemplateUse<'_>) -> Option<Discount> {
    let terms = terms(order, t);
    terms.in_scope.then(|| Discount {
        discount: terms.discount,
        lines: nonzero(&terms.parts()),
        schedule: schedule(terms.discount, t.template.spec.deduction, order.lease()),
    })
}

pub(crate) fn nonzero(parts: &[(usize, Money)]) -> Vec<LineDiscount> {
    parts
        .iter()
        .filter(|(_, a)| *a > Money::ZERO)
        .map(|&(line, amount)| LineDiscount { line, amount })
        .collect()
}

/// When a lease discount is taken: one entry per lease month, summing exactly to `amount`;
/// empty without a lease.
///
/// - `upfront`: all of it in month 1. Month 1 is the payment the order describes (its lines
///   are billed at signing), and the discount is already bounded by the lines it applies to,
///   so month 1 never gets more off than it bills; no carrying over to later months is needed.
/// - `spread`: [`Money::split_even`] over the months: parts differ by at most one minor unit,
///   the larger ones first (700.00 over 12 months: 58.34 × 4, then 58.33 × 8).
pub fn schedule(amount: Money, mode: DeductionMode, lease: Option<Lease>) -> Vec<Money> {
    let Some(lease) = lease else {
        return Vec::new();
    };
    let months = lease.months as usize;
    match mode {
        DeductionMode::Upfront => {
            let mut s = vec![Money::ZERO; months];
            if let Some(first) = s.first_mut() {
                *first = amount;
            }
            s
        }
        DeductionMode::Spread => amount.split_even(months),
    }
}
