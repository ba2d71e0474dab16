//! The coupon centre's rules: which templates a user is offered now, which templates and
//! activities a user may look at, and what a user is told about each (the stock left, how many
//! it holds, whether it can claim one now).
//!
//! Every reader of the centre (the user's list, the service's list for a user, the public
//! views, the console's preview) decides with these functions, so a new reason to hide a
//! template (a pause, say) is one line in [`on_offer`].

use crate::activity::{Activity, ActivityStatus};
use crate::coupon::Audience;
use crate::ids::UserId;
use crate::tags::Tag;
use crate::template::Template;
use crate::time::Timestamp;
use crate::wallet::not_claimable;

/// Whether `t` is on offer at `now`: published (or approved in its activity) and inside its
/// claim window, and not paused. Whom it is offered to is [`admits`]'s question.
pub fn on_offer(t: &Template, now: Timestamp) -> bool {
    t.is_public() && not_claimable(t, now).is_none() && !t.is_paused()
}

/// Whether `user`, holding `tags`, is in `audience`: everyone; a user list naming it; a tag
/// audience sharing one of its tags. The claim's transaction decides the same from the tags
/// coupond holds.
pub fn admits(audience: &Audience, user: &UserId, tags: &[Tag]) -> bool {
    match audience.admits(user) {
        Some(known) => known,
        None => audience.tags().iter().any(|t| tags.contains(t)),
    }
}

/// Whether `user` (holding `tags`) may look at template `t`, whatever its status: it was
/// published, and its audience takes the user in. Anything else reads as absent.
pub fn shows_template(t: &Template, user: &UserId, tags: &[Tag]) -> bool {
    t.is_public() && admits(&t.spec.audience, user, tags)
}

/// Whether users may look at activity `a` at `now`: while it runs (its templates are
/// claimable then, and only then).
pub fn shows_activity(a: &Activity, now: Timestamp, freeze: time::Duration) -> bool {
    a.status(now, freeze) == ActivityStatus::Running
}

/// What a user is told about its chances with one template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chances {
    /// Coupons left to claim (never below zero).
    pub remaining: i64,
    /// No stock left.
    pub sold_out: bool,
    /// How many the user holds (the per-user limit's count).
    pub held: u32,
    /// Whether a claim now would be taken: on offer, stock left, under the per-user limit.
    pub can_claim: bool,
}

impl Chances {
    /// `t` as read (its claimed count at most a cache's age behind) for a user holding
    /// `held`; `seen_sold_out`: the claim path saw it sell out meanwhile.
    pub fn of(t: &Template, held: u32, seen_sold_out: bool, now: Timestamp) -> Chances {
        let remaining = (t.spec.total_stock - t.claimed).max(0);
        let sold_out = remaining == 0 || seen_sold_out;
        Chances {
            remaining: if sold_out { 0 } else { remaining },
            sold_out,
            held,
            can_claim: on_offer(t, now) && !sold_out && held < t.spec.per_user_limit,
        }
    }
}

#[cfg(test)]
mod tests;
