//! The stackable part of the best combination: every stackable template's representative,
//! at most one of each stacking group, applied in priority order, each taking its value from
//! what the ones before it left.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::checkout::discount::{take_from, TemplateUse, Terms};
use crate::checkout::order::Order;
use crate::coupon::{Priority, StackingGroup};
use crate::ids::{CouponId, TemplateId};
use crate::money::Money;

/// Above this many ways to pick one coupon per group, the groups are decided one after
/// another instead of all together (see [`best_stack`]).
pub const MAX_GROUP_CHOICES: usize = 256;

/// A coupon's place in the order discounts are applied: highest priority first, then the
/// lowest template id. Coupons of one template share it, so which of them is used never
/// changes what the others take.
pub(crate) type Place = (Reverse<Priority>, TemplateId);

/// A stackable template's representative coupon.
pub(crate) struct Candidate<'a> {
    /// The coupon's index in the quote's input.
    pub ci: usize,
    pub place: Place,
    /// `(valid_until, id)`: the tie-break.
    pub key: (i64, CouponId),
    pub group: Option<&'a StackingGroup>,
    pub t: TemplateUse<'a>,
    pub terms: &'a Terms,
}

/// A set of coupons applied in order: each one that took something, with what it took per
/// line, and the total.
#[derive(Default)]
pub(crate) struct Applied {
    pub members: Vec<(usize, Vec<(usize, Money)>)>,
    pub total: Money,
    /// The members' `(valid_until, id)`: the tie-break between equal totals.
    pub keys: Vec<(i64, CouponId)>,
}

impl Applied {
    /// More off, or as much with coupons that expire earlier (the sorted key lists compared
    /// lexicographically), so earlier-expiring coupons are used first.
    pub fn beats(&self, other: &Applied) -> bool {
        let sorted = |keys: &[(i64, CouponId)]| {
            let mut k = keys.to_vec();
            k.sort_unstable();
            k
        };
        // Sorted only on a tie: most comparisons are decided by the totals.
        self.total > other.total
            || (self.total == other.total && sorted(&self.keys) < sorted(&other.keys))
    }
}

/// Applies the candidates `set` (indices into `cands`, which are in application order) to
/// `order`, each on what the ones before it left of each line.
fn apply(order: &Order, cands: &[Candidate<'_>], set: &[usize]) -> Applied {
    let mut left = order.amounts().to_vec();
    let mut out = Applied::default();
    for &k in set {
        let c = &cands[k];
        let took = take_from(order, c.t, c.terms, &left);
        let mut sum = Money::ZERO;
        for &(line, part) in &took {
            left[line] = left[line].saturating_sub(part);
            sum = sum.saturating_add(part);
        }
        // A coupon that adds nothing is left out: no coupon is spent for nothing.
        if sum > Money::ZERO {
            out.total = out.total.saturating_add(sum);
            out.keys.push(c.key);
            out.members.push((c.ci, took));
        }
    }
    out
}

/// The best stackable set of `cands` (in application order).
///
/// Adding a stackable coupon never lowers the total: each discount takes from a line at most
/// what is left of it, and takes less when less is left. So every template without a group
/// is in the set, and each group contributes one of its templates: all the ways to pick them
/// are tried when there are at most [`MAX_GROUP_CHOICES`]; beyond that each group in turn
/// (by name) keeps the pick that is best with the others' current picks, starting from each
/// group's largest discount alone.
pub(crate) fn best_stack(order: &Order, cands: &[Candidate<'_>]) -> Applied {
    let mut free = Vec::new();
    let mut groups: BTreeMap<&StackingGroup, Vec<usize>> = BTreeMap::new();
    for (k, c) in cands.iter().enumerate() {
        match c.group {
            None => free.push(k),
            Some(g) => groups.entry(g).or_default().push(k),
        }
    }
    let groups: Vec<Vec<usize>> = groups.into_values().collect();
    let set_of = |picks: &[usize]| {
        let mut set = free.clone();
        set.extend(picks.iter().zip(&groups).map(|(&p, g)| g[p]));
        set.sort_unstable();
        set
    };
    let choices = groups
        .iter()
        .try_fold(1usize, |n, g| n.checked_mul(g.len()))
        .filter(|&n| n <= MAX_GROUP_CHOICES);
    let mut picks = vec![0usize; groups.len()];
    if choices.is_some() {
        // Every pick, as a mixed-radix counter over the groups.
        let mut best = apply(order, cands, &set_of(&picks));
        while next(&mut picks, &groups) {
            let a = apply(order, cands, &set_of(&picks));
            if a.beats(&best) {
                best = a;
            }
        }
        return best;
    }
    for (p, g) in picks.iter_mut().zip(&groups) {
        let alone = |k: usize| cands[k].terms.discount;
        *p = (0..g.len()).fold(0, |b, i| if alone(g[i]) > alone(g[b]) { i } else { b });
    }
    let mut best = apply(order, cands, &set_of(&picks));
    for gi in 0..groups.len() {
        let kept = picks[gi];
        for i in (0..groups[gi].len()).filter(|&i| i != kept) {
            let mut tried = picks.clone();
            tried[gi] = i;
            let a = apply(order, cands, &set_of(&tried));
            if a.beats(&best) {
                best = a;
                picks = tried;
            }
        }
    }
    best
}

/// The next pick after `picks` (each `picks[g] < groups[g].len()`); false after the last.
fn next(picks: &mut [usize], groups: &[Vec<usize>]) -> bool {
    for (p, g) in picks.iter_mut().zip(groups) {
        *p += 1;
        if *p < g.len() {
            return true;
        }
        *p = 0;
    }
    false
}
