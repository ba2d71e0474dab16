//! What the claim engine takes and answers: how claims reach the database ([`ClaimMode`]),
//! one claim as asked ([`ClaimAsk`]: for whom, who asks, its key, code, channel and source)
//! and a successful claim ([`Claimed`]).

use coupond_domain::{Actor, Channel, Coupon, Source, UserId};
use coupond_store::{CodeClaim, IdempotencyKey};

/// How claims reach the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimMode {
    /// Group commit: up to `max_batch` claims per transaction.
    Batched { max_batch: usize },
    /// One transaction per claim (for comparison in benchmarks).
    Single,
}

impl Default for ClaimMode {
    fn default() -> Self {
        ClaimMode::Batched { max_batch: 512 }
    }
}

/// One claim as the engine takes it: for whom, who asks, and the caller's idempotency key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimAsk {
    pub user: UserId,
    /// Written to the coupon's operation log: the user, or the service claiming for it.
    pub actor: Actor,
    pub idempotency: Option<IdempotencyKey>,
    /// The promotion code redeemed, if the claim comes from one.
    pub code: Option<CodeClaim>,
    /// How the coupon reaches its holder (a redeemed code's is set by redemption).
    pub channel: Channel,
    /// The caller's label for where the claim came from.
    pub source: Option<Source>,
}

impl ClaimAsk {
    /// A claim a user makes for itself, without a key.
    pub fn by_user(user: UserId) -> Self {
        ClaimAsk {
            actor: Actor::User(user.clone()),
            user,
            idempotency: None,
            code: None,
            channel: Channel::Direct,
            source: None,
        }
    }

    pub fn with_key(self, key: IdempotencyKey) -> Self {
        ClaimAsk {
            idempotency: Some(key),
            ..self
        }
    }
}

/// A successful claim: the coupon, and whether it was issued by an earlier request with the
/// same idempotency key (a retry) rather than now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimed {
    pub coupon: Coupon,
    pub replayed: bool,
}
