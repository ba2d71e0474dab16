//! A quote: every coupon of a wallet checked against an order, and the best combination.

use std::cell::OnceCell;
use std::cmp::Reverse;

use serde::Serialize;
use utoipa::ToSchema;

use crate::checkout::combine::{best_stack, Applied, Candidate};
use crate::checkout::discount::{nonzero, schedule, terms, LineDiscount, TemplateUse, Terms};
use crate::checkout::eligibility::{reasons, unmet, Reason, Situation};
use crate::checkout::order::Order;
use crate::coupon::Stacking;
use crate::error::DomainError;
use crate::ids::{CouponId, TemplateId};
use crate::money::Money;
use crate::rules::{LocalNow, Unmet};
use crate::time::Timestamp;
use crate::wallet::Coupon;

/// What a quote needs: the order, the clock, the user's coupons (any status: the quote says
/// why each one cannot be used) and the template of each of them, once per template, with the
/// discount it has already given.
#[derive(Clone, Copy, Debug)]
pub struct QuoteInput<'a> {
    pub order: &'a Order,
    pub now: Timestamp,
    pub coupons: &'a [Coupon],
    /// Templates may come in any order; extra ones are ignored.
    pub templates: &'a [TemplateUse<'a>],
    /// What templates' conditions read besides the order.
    pub situation: Situation<'a>,
}

/// One coupon of the wallet, as the quote sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct CouponQuote {
    pub coupon_id: CouponId,
    pub template_id: TemplateId,
    /// Whether the coupon can be used on this order: `reasons` is empty. An applicable coupon
    /// can still be left out of the best combination when another coupon of its template is in
    /// it, or when it would add nothing to it (every line it applies to is already fully
    /// discounted). One whose own discount on this order is zero is not applicable: its
    /// reason is `redundant`, as a lock would say.
    pub applicable: bool,
    /// Every reason it cannot be used, in [`Reason`]'s order.
    pub reasons: Vec<Reason>,
    /// With `conditions_unmet`: each test of its template's conditions that fails, and what
    /// it needs (an `any` group by its branch with the fewest tests missing).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unmet: Vec<Unmet>,
    /// Its discount on its own (0 when it is not usable on its own).
    pub discount: Money,
    /// Whether it is in the best combination.
    pub chosen: bool,
}

/// A coupon of the best combination and what it takes there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct AppliedCoupon {
    pub coupon_id: CouponId,
    pub template_id: TemplateId,
    /// What it takes in the combination, from what the coupons applied before it left. This
    /// is what its template's budget is charged.
    pub discount: Money,
    pub lines: Vec<LineDiscount>,
    /// Per lease month, by its template's deduction mode; empty without a lease.
    pub schedule: Vec<Money>,
}

/// The best combination of coupons for an order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct Combination {
    /// In the order they are applied: highest `priority` first, then lowest template id.
    pub coupons: Vec<AppliedCoupon>,
    /// The total discount; never more than the order's total.
    pub discount: Money,
    /// Per order line, the lines with something off; never more than the line's amount.
    pub lines: Vec<LineDiscount>,
    /// Per lease month, the sum of the coupons' schedules; empty without a lease.
    pub schedule: Vec<Money>,
    /// The order's total after the discount.
    pub total_after: Money,
}

/// The answer to a quote. No side effects: nothing is locked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Quote {
    /// The order's total before any discount.
    pub order_total: Money,
    /// Every coupon given, by coupon id.
    pub coupons: Vec<CouponQuote>,
    pub best: Combination,
}

/// Checks every coupon against the order and finds the best combination.
///
/// **Combining.** At most one coupon per template; either one `exclusive` coupon alone, or a
/// set of `stackable` coupons with at most one of each `stacking_group`. Whether a coupon can
/// be used (threshold, scope, conditions) is judged on the order as sent. In a set, discounts
/// apply one after another: **highest `priority` first, then lowest template id**, and each takes its value from what the ones before it left of each
/// line: a percentage is of what is left, an amount takes as much as is left allows, a line
/// is never taken below zero. A coupon that takes nothing there is left out.
///
/// **Why this is exact.** Adding a coupon to a set never lowers its total: a discount takes
/// at most what is left of each line, and less when less is left. Coupons of one template have
/// the same terms, budget and place in that order, so the same discount: which one to use only matters for
/// the tie-break. Hence the best stackable set holds every template without a group, and one
/// template of each group; the picks are all tried up to [`MAX_GROUP_CHOICES`] ways (beyond
/// that, groups are decided one after another, which is not guaranteed the best). The best
/// overall is the better of that set and the best single exclusive coupon. Rounding aside:
/// each split rounds, so a set without some coupon can come out a minor unit or so ahead. A
/// brute-force property test checks both on small wallets.
///
/// **Ties.** A template's representative is its applicable coupon with the earliest
/// `valid_until`, then the lowest id, among those with a positive discount. Between
/// candidates with equal totals (stackable sets, each exclusive representative) the one
/// whose `(valid_until, id)` list, sorted ascending, is lexicographically smaller wins:
/// earlier-expiring coupons are used first. With no positive discount the best combination
/// is empty.
///
/// The result does not depend on the order of `coupons` or `templates`.
///
/// Errors (the caller's bug, not the user's): a coupon whose template is missing, a template
/// given twice, a coupon id given twice.
///
/// [`MAX_GROUP_CHOICES`]: crate::checkout::MAX_GROUP_CHOICES
pub fn quote(input: &QuoteInput<'_>) -> Result<Quote, DomainError> {
    let order = input.order;
    let templates = input.templates;
    let mut by_id: Vec<(TemplateId, usize)> = templates
        .iter()
        .enumerate()
        .map(|(i, t)| (t.template.id, i))
        .collect();
    by_id.sort_unstable();
    if let Some(w) = by_id.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(DomainError::invalid(
            &format!("templates[{}]", w[0].1.max(w[1].1)),
            "duplicate",
            format!("template {} is given twice", w[0].0),
        ));
    }
    let mut coupon_ids: Vec<(CouponId, usize)> = input
        .coupons
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id, i))
        .collect();
    coupon_ids.sort_unstable();
    if let Some(w) = coupon_ids.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(DomainError::invalid(
            &format!("coupons[{}].id", w[0].1.max(w[1].1)),
            "duplicate",
            format!("coupon {} is given twice", w[0].0),
        ));
    }

    // Per coupon: its template's index in `templates`. Terms are computed once per template.
    let mut tpl_of = Vec::with_capacity(input.coupons.len());
    let mut tpl_terms: Vec<Option<(Terms, Vec<Unmet>)>> =
        (0..templates.len()).map(|_| None).collect();
    // The local clock, read once, and only for templates with conditions.
    let local = OnceCell::new();
    for (i, c) in input.coupons.iter().enumerate() {
        let Ok(k) = by_id.binary_search_by(|(id, _)| id.cmp(&c.template_id)) else {
            return Err(DomainError::invalid(
                &format!("coupons[{i}].template_id"),
                "not_found",
                format!(
                    "the template {} of coupon {} is missing",
                    c.template_id, c.id
                ),
            ));
        };
        let ti = by_id[k].1;
        tpl_terms[ti].get_or_insert_with(|| {
            let t = templates[ti];
            let tm = terms(order, t);
            let missing = match t.template.spec.conditions() {
                None => Vec::new(),
                Some(_) => {
                    let local =
                        local.get_or_init(|| LocalNow::new(input.now, input.situation.zone));
                    unmet(order, local, input.situation, t, &tm)
                }
            };
            (tm, missing)
        });
        tpl_of.push(ti);
    }
    let terms_of = |ci: usize| tpl_terms[tpl_of[ci]].as_ref().map(|(tm, _)| tm);
    let unmet_of = |ci: usize| tpl_terms[tpl_of[ci]].as_ref().map_or(&[][..], |(_, u)| u);

    let mut quotes: Vec<CouponQuote> = input
        .coupons
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let t = templates[tpl_of[ci]];
            let missing = unmet_of(ci);
            let mut r = terms_of(ci).map_or_else(Vec::new, |tm| {
                reasons(order, input.now, c, t, tm, missing.is_empty())
            });
            let discount = match terms_of(ci) {
                Some(tm) if r.is_empty() => tm.discount,
                _ => Money::ZERO,
            };
            // Usable, but it takes nothing off this order: a lock would refuse it as
            // `redundant`, and the quote says so too.
            if r.is_empty() && discount == Money::ZERO {
                r.push(Reason::Redundant);
            }
            CouponQuote {
                coupon_id: c.id,
                template_id: c.template_id,
                applicable: r.is_empty(),
                reasons: r,
                unmet: missing.to_vec(),
                discount,
                chosen: false,
            }
        })
        .collect();

    // Canonical order: earliest expiry, then lowest id (ids are unique, so this is total).
    // Keys as integers: comparing `OffsetDateTime`s was a tenth of a quote's time.
    let keys: Vec<(i64, CouponId)> = input
        .coupons
        .iter()
        .map(|c| (c.valid_until.unix_micros(), c.id))
        .collect();
    let key = |ci: usize| keys[ci];
    let mut canonical: Vec<usize> = (0..input.coupons.len()).collect();
    canonical.sort_unstable_by_key(|&ci| key(ci));

    // One representative per template: the first applicable coupon with a positive discount.
    let mut represented = vec![false; templates.len()];
    let reps: Vec<usize> = canonical
        .iter()
        .copied()
        .filter(|&ci| {
            let ti = tpl_of[ci];
            let take =
                quotes[ci].applicable && quotes[ci].discount > Money::ZERO && !represented[ti];
            if take {
                represented[ti] = true;
            }
            take
        })
        .collect();
    let spec = |ci: usize| &templates[tpl_of[ci]].template.spec;
    let stacking = |ci: usize| spec(ci).stacking;

    // The stackable set: candidates in application order.
    let mut cands: Vec<Candidate<'_>> = reps
        .iter()
        .filter(|&&ci| stacking(ci) == Stacking::Stackable)
        .filter_map(|&ci| {
            Some(Candidate {
                ci,
                place: (
                    Reverse(spec(ci).priority),
                    templates[tpl_of[ci]].template.id,
                ),
                key: key(ci),
                group: spec(ci).stacking_group.as_ref(),
                t: templates[tpl_of[ci]],
                terms: terms_of(ci)?,
            })
        })
        .collect();
    cands.sort_unstable_by_key(|c| c.place);
    let stack = best_stack(order, &cands);

    // The best exclusive coupon alone: reps are in canonical order, so on equal discounts the
    // first one seen (the earliest key) stays.
    let mut exclusive: Option<usize> = None;
    for &ci in reps
        .iter()
        .filter(|&&ci| stacking(ci) == Stacking::Exclusive)
    {
        if exclusive.is_none_or(|e| quotes[ci].discount > quotes[e].discount) {
            exclusive = Some(ci);
        }
    }

    let use_exclusive = exclusive.is_some_and(|e| {
        let alone = Applied {
            members: Vec::new(),
            total: quotes[e].discount,
            keys: vec![key(e)],
        };
        alone.beats(&stack)
    });
    let chosen: Vec<(usize, Vec<(usize, Money)>)> = match exclusive {
        Some(e) if use_exclusive => {
            let parts = terms_of(e).map(|tm| tm.parts()).unwrap_or_default();
            vec![(e, parts)]
        }
        _ => stack.members,
    };

    // Exclusive and group conflicts, and which coupons are chosen.
    if let Some((first, _)) = chosen.first() {
        let chosen_exclusive = stacking(*first) == Stacking::Exclusive;
        let chosen_tpls: Vec<usize> = chosen.iter().map(|(ci, _)| tpl_of[*ci]).collect();
        for (ci, q) in quotes.iter_mut().enumerate() {
            if !q.applicable {
                continue;
            }
            let conflict = if chosen_exclusive {
                (ci != *first).then_some(Reason::ExclusiveConflict)
            } else if stacking(ci) == Stacking::Exclusive {
                Some(Reason::ExclusiveConflict)
            } else {
                let group = spec(ci).stacking_group.as_ref();
                let taken = chosen_tpls.iter().any(|&ti| {
                    ti != tpl_of[ci]
                        && group.is_some()
                        && templates[ti].template.spec.stacking_group.as_ref() == group
                });
                taken.then_some(Reason::GroupConflict)
            };
            if let Some(r) = conflict {
                q.reasons.push(r);
                q.applicable = false;
            }
        }
    }
    for (ci, _) in &chosen {
        quotes[*ci].chosen = true;
    }

    let best = combination(input, &chosen, &tpl_of);
    quotes.sort_unstable_by_key(|q| q.coupon_id);
    Ok(Quote {
        order_total: order.total(),
        coupons: quotes,
        best,
    })
}

fn combination(
    input: &QuoteInput<'_>,
    chosen: &[(usize, Vec<(usize, Money)>)],
    tpl_of: &[usize],
) -> Combination {
    let order = input.order;
    let lease = order.lease();
    let mut per_line = vec![Money::ZERO; order.lines.len()];
    let mut per_month = vec![Money::ZERO; lease.map_or(0, |l| l.months as usize)];
    let mut total = Money::ZERO;
    let mut coupons = Vec::with_capacity(chosen.len());
    for (ci, parts) in chosen {
        let c = &input.coupons[*ci];
        let t = input.templates[tpl_of[*ci]];
        let discount = parts
            .iter()
            .fold(Money::ZERO, |s, &(_, a)| s.saturating_add(a));
        for &(line, a) in parts {
            per_line[line] = per_line[line].saturating_add(a);
        }
        let sched = schedule(discount, t.template.spec.deduction, lease);
        for (m, a) in per_month.iter_mut().zip(&sched) {
            *m = m.saturating_add(*a);
        }
        total = total.saturating_add(discount);
        coupons.push(AppliedCoupon {
            coupon_id: c.id,
            template_id: c.template_id,
            discount,
            lines: nonzero(parts),
            schedule: sched,
        });
    }
    let lines: Vec<(usize, Money)> = per_line.into_iter().enumerate().collect();
    Combination {
        coupons,
        discount: total,
        lines: nonzero(&lines),
        schedule: per_month,
        total_after: order.total().saturating_sub(total),
    }
}
