//! The plain claim batch in two round trips: one script that reads and locks, one that writes
//! and commits.
//!
//! A batch without single-use codes (a flash sale's, an order service's with idempotency
//! keys) is sent as:
//!
//! 1. `START TRANSACTION`; the template's terms, its row shared; the batch's idempotency keys
//!    taken (one upsert); the users' counters taken (one upsert each 500 users); the stock
//!    shards as committed;
//! 2. the counters that need it written back; the refused claims' keys dropped; the coupons
//!    (their ids from the store's block, `ids`), their log rows, events and keys' links; the
//!    stock taken from one shard; `COMMIT`.
//!
//! In between the batch decides in memory, as the one-statement-at-a-time batch (`attempt`)
//! does and with the same code: the per-user limits from the counters (read in a round trip
//! of its own only when a counter existed), then the stock. It takes its coupons from the
//! first shard that keeps some after, from its own starting shard on (a shard the batch
//! empties is written as such, and the template's sold-out check runs before a separate
//! `COMMIT`). The shard's `CHECK (claimed <= total)` stops the second script before its
//! `COMMIT` when the shard no longer holds what was read, and the take is written so that the
//! check also stops a take that would empty the shard unforeseen.
//!
//! What this batch does not decide it leaves to `attempt`, after rolling back whatever it
//! did: a template not claimable now (or not found), a tag audience, an idempotency key seen
//! before, no shard holding the batch, a shard that changed under it, a deadlock.
//!
//! Lock order is `attempt`'s: the template's row (shared), the keys (sorted), the counters
//! (sorted by user), then one shard, then the template's `sold_out` lock.

use coupond_domain::{TemplateId, Timestamp};
use coupond_store::{
    failpoints, ClaimOutcome, ClaimRequest, Conflict, IdempotencyKey, StoreError, StoreResult,
};
use coupond_store_sql::claims::single_use;

use super::stock::Take;
use super::{coupons, holdings, keys, stock, terms_from, terms_into};
use crate::exec::ScriptTx;
use crate::rows::{deadlock, stock_check_failed};
use crate::script::Script;
use crate::store::MysqlDb;

/// How a two-round-trip batch ended.
pub(crate) enum Pipelined {
    /// Committed: every claim's outcome, in order.
    Done(Vec<ClaimOutcome>),
    /// Nothing of it stayed: run the batch one statement at a time.
    Declined,
}

impl MysqlDb {
    /// The claim batch in two round trips, if it is a plain one (see the module's comment).
    pub(crate) async fn claim_pipelined(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Pipelined> {
        if claims.iter().any(|c| single_use(c).is_some()) {
            return Ok(Pipelined::Declined);
        }
        let mut tx = ScriptTx::acquire(&self.pool).await?;
        match run(&mut tx, self, template, claims, now).await {
            Ok(Some(out)) => Ok(Pipelined::Done(out)),
            Ok(None) => {
                tx.rollback().await?;
                Ok(Pipelined::Declined)
            }
            Err(e) if declined(&e) => {
                tx.rollback().await?;
                Ok(Pipelined::Declined)
            }
            Err(e) => {
                // A connection the error left unusable is closed instead (`ScriptTx`'s drop).
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }
}

/// Errors after which `attempt` decides the batch: the stock shard changed under it (its
/// check failed), InnoDB rolled it back to break a deadlock, or the template is not there (the
/// counters' reference to it failed; `attempt` answers `NotFound`).
fn declined(e: &StoreError) -> bool {
    stock_check_failed(e) || deadlock(e) || matches!(e, StoreError::Conflict(Conflict::Reference))
}

/// The batch's two scripts; `None` where it declines, with the transaction still open.
async fn run(
    tx: &mut ScriptTx,
    store: &MysqlDb,
    template: TemplateId,
    claims: &[ClaimRequest],
    now: Timestamp,
) -> StoreResult<Option<Vec<ClaimOutcome>>> {
    let all: Vec<usize> = (0..claims.len()).collect();
    let users = holdings::users(claims, &all);
    let mut keyed: Vec<&IdempotencyKey> = claims
        .iter()
        .filter_map(|c| c.idempotency.as_ref())
        .collect();
    keyed.sort_by(|a, b| a.key.cmp(&b.key));
    // 1. Terms, keys, counters, shards.
    let mut s = Script::default();
    s.sql("START TRANSACTION");
    s.end();
    let terms_at = terms_into(&mut s, template, now);
    let keys_at = keys::take_into(&mut s, &keyed, now);
    let locks = holdings::lock_into(&mut s, template, &users);
    let shards_at = stock::shards_into(&mut s, template, false);
    let done = tx.run(&s, false).await?;
    let Some(terms) = terms_from(&done[terms_at].rows)?.filter(|t| !t.tagged) else {
        return Ok(None);
    };
    if keys_at.is_some_and(|at| done[at].changed != keyed.len() as u64) {
        return Ok(None);
    }
    let changed: Vec<u64> = locks.iter().map(|&i| done[i].changed).collect();
    let mut held = holdings::held(tx, template, &users, &changed).await?;
    let shards = stock::from_rows(&done[shards_at].rows)?;
    // Decide: the limits, then the stock (none left anywhere is sold out for good: the
    // template's row is shared, so no edit adds any, and what commits only takes more).
    let remaining = match shards.iter().any(|s| s.left > 0) {
        true => i64::MAX,
        false => 0,
    };
    let mut out: Vec<Option<ClaimOutcome>> = vec![None; claims.len()];
    let granted = holdings::grant(claims, &all, &terms, remaining, &mut held, &mut out);
    let take = match granted.len() as i64 {
        0 => None,
        k => match stock::choose(&shards, k, store.shard_start()) {
            Some(take) => Some(take),
            None => return Ok(None),
        },
    };
    let first = match granted.is_empty() {
        true => 0,
        false => store.ids.take(granted.len()).await?,
    };
    // 2. Counters, refused keys, coupons, stock, commit.
    let mut s = Script::default();
    holdings::write_into(&mut s, template, &held);
    let refused: Vec<&str> = (0..claims.len())
        .filter(|i| out[*i].is_some())
        .filter_map(|i| claims[i].idempotency.as_ref().map(|k| k.key.as_str()))
        .collect();
    keys::forget_into(&mut s, &refused);
    let coupons = coupons::insert_into(&mut s, template, claims, &granted, first, now)?;
    if let Some(take) = take {
        stock::take_into(&mut s, template, take);
    }
    // A build that evaluates failpoints commits separately, so that they fire in between.
    let commit = !take.is_some_and(|t| t.empties) && !failpoints::ENABLED;
    if commit {
        s.sql("COMMIT");
        s.end();
    }
    tx.run(&s, commit).await?;
    if !commit {
        finish(tx, template, terms.total_stock, take, now).await?;
    }
    for (c, &i) in coupons.into_iter().zip(&granted) {
        out[i] = Some(ClaimOutcome::Issued(c));
    }
    out.into_iter()
        .map(|o| o.ok_or_else(|| StoreError::other("claim without an outcome")))
        .collect::<StoreResult<Vec<_>>>()
        .map(Some)
}

/// The end of a batch not committed by its second script: the sold-out check where it emptied
/// a shard, the failpoints of a build that has them, then `COMMIT`.
async fn finish(
    tx: &mut ScriptTx,
    template: TemplateId,
    total_stock: i64,
    take: Option<Take>,
    now: Timestamp,
) -> StoreResult<()> {
    if let Some(take) = take {
        // Coupons and stock written together: a fault here must leave neither.
        failpoints::hit("claim.mid_batch")?;
        if take.empties {
            stock::sold_out(tx, template, total_stock, now).await?;
        }
        failpoints::hit("claim.stock_taken")?;
    }
    failpoints::hit("claim.before_commit")?;
    tx.run(&Script::one("COMMIT"), true).await.map(drop)
}
