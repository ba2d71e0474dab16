//! Enrollment approval: where an activity requires it ([`Approval::Required`]), a merchant's
//! template waits until a platform operator approves it or rejects it with a reason. Until
//! approved it is not public (users and the order service cannot see or claim it); a rejected
//! one stays rejected until its merchant edits it, which asks again.
//!
//! [`Approval::Required`]: crate::activity::Approval::Required

use crate::error::DomainError;
use crate::note::Note;
use crate::time::Timestamp;

/// Where a template stands with the platform's review.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Review {
    /// Its activity requires no approval (or it is standalone).
    #[default]
    NotNeeded,
    /// Waits for a platform operator's decision.
    Pending,
    /// Approved at `at`: from then on it is in its activity like any other.
    Approved { at: Timestamp },
    /// Rejected at `at`, with the reason its merchant sees.
    Rejected { at: Timestamp, reason: String },
}

/// A platform operator's decision on a pending template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Approve,
    /// With the reason the merchant sees.
    Reject(Note),
}

impl Decision {
    /// A rejection whose reason (trimmed) is a [`Note`] (field `reason`).
    pub fn reject(reason: &str) -> Result<Self, DomainError> {
        Ok(Decision::Reject(Note::parse("reason", reason.trim())?))
    }
}

impl Review {
    /// Its stored name: `none`, `pending`, `approved`, `rejected`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Review::NotNeeded => "none",
            Review::Pending => "pending",
            Review::Approved { .. } => "approved",
            Review::Rejected { .. } => "rejected",
        }
    }

    /// Rebuilds a stored review from its columns.
    pub fn from_stored(
        name: &str,
        at: Option<Timestamp>,
        reason: Option<String>,
    ) -> Result<Self, String> {
        match (name, at) {
            ("none", _) => Ok(Review::NotNeeded),
            ("pending", _) => Ok(Review::Pending),
            ("approved", Some(at)) => Ok(Review::Approved { at }),
            ("rejected", Some(at)) => Ok(Review::Rejected {
                at,
                reason: reason.unwrap_or_default(),
            }),
            (other, _) => Err(format!(
                "unknown review {other:?} (or one without its time)"
            )),
        }
    }

    /// When it was decided, if it was.
    pub fn decided_at(&self) -> Option<Timestamp> {
        match self {
            Review::Approved { at } | Review::Rejected { at, .. } => Some(*at),
            _ => None,
        }
    }

    /// The rejection's reason, if rejected.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Review::Rejected { reason, .. } => Some(reason),
            _ => None,
        }
    }

    /// Whether the template counts as in its activity at `t` (not waiting, not rejected).
    pub fn admits_at(&self, t: Timestamp) -> bool {
        match self {
            Review::NotNeeded => true,
            Review::Approved { at } => *at <= t,
            Review::Pending | Review::Rejected { .. } => false,
        }
    }

    /// What an edit of the template's terms makes of it: anything the platform reviewed (or
    /// is reviewing, or turned down) waits for its review again.
    pub fn after_edit(&self) -> Review {
        match self {
            Review::NotNeeded => Review::NotNeeded,
            _ => Review::Pending,
        }
    }

    /// What `decision` at `now` makes of it; only a pending template is decided on
    /// (`not_pending`).
    pub fn decide(&self, decision: Decision, now: Timestamp) -> Result<Review, DomainError> {
        if *self != Review::Pending {
            return Err(DomainError::state(
                "not_pending",
                format!(
                    "only a template waiting for approval is approved or rejected; this one is {}",
                    match self {
                        Review::NotNeeded => "not subject to approval",
                        Review::Approved { .. } => "already approved",
                        _ => "already rejected",
                    }
                ),
            ));
        }
        Ok(match decision {
            Decision::Approve => Review::Approved { at: now },
            Decision::Reject(reason) => Review::Rejected {
                at: now,
                reason: reason.as_str().to_owned(),
            },
        })
    }
}
