//! Claims on MySQL: a whole batch in one transaction.
//!
//! A plain batch (no single-use code) is two round trips, two [`Script`]s (`pipelined`): one
//! reads and locks, the other writes and commits. What that one does not decide (a template
//! not claimable now, a tag audience, an idempotency key seen before, a single-use code, a
//! shard that changed under it) it rolls back and leaves to [`attempt`], which runs the same
//! steps a round trip each, with the same code deciding. What follows holds for both.
//!
//! Several coupond instances, and several batches of one instance, may claim the same
//! template at once, so nothing read early in the transaction is trusted for the stock. The
//! stock is split into shards (`template_stock`, migration 0005, see `stock`): a batch of `k`
//! claims takes `k` from one shard with a conditional update (`claimed + k <= total`), the
//! last thing it does before `COMMIT`, so batches on different shards never wait on each
//! other and InnoDB flushes their commits together. Batches start on different shards
//! ([`MysqlDb::shard_cursor`]). The template's row is only shared (`LOCK IN SHARE MODE`):
//! an abort or an edit waits for the batches in flight, and batches do not wait on each other.
//!
//! When no single shard holds the batch, the batch is rolled back and run again in *exact*
//! mode, which locks every shard in shard order after the per-user counters, reads the stock
//! left, and issues exactly that many in arrival order (taking from the shards in order); the
//! rest are `sold_out`. That happens while a template sells out, and for issuance chunks.
//!
//! Per-user counters are taken first, in user order: one upsert creates the missing ones (at
//! 1, what a granted new user holds, so a flash sale writes each counter once) and locks them
//! all exclusively (an update of each existing one), so two batches with the same user take
//! turns on its counter, and the batch decides the limits in memory from what it then reads;
//! only the counters whose row does not say the outcome are written again. A plain batch then
//! reads the shards as committed: no stock left anywhere is `sold_out` at once (the template's
//! row is shared, so no edit can add any, and a commit only takes more), and no shard that
//! looks like holding the batch sends it to exact mode before it writes anything.
//!
//! Coupon ids come from the store's block of ids (`ids`), drawn from the `id_blocks` counter
//! outside any batch's transaction (a sequence MySQL lacks), so batches never wait on each
//! other's transactions for ids; a rolled-back batch leaves a gap.
//!
//! Lock order, the same in every batch: the template's row (shared), idempotency keys
//! (sorted), single-use codes (sorted), the per-user counters (sorted by user), then the stock
//! shards (exact mode: all of them, in shard order; otherwise one), then the template's
//! `sold_out` lock. A transaction holding a shard waits for nothing but that lock, and its
//! holder waits for nothing: no cycle.

mod coupons;
mod holdings;
mod keys;
mod pipelined;
mod stock;

use coupond_domain::{TemplateId, Timestamp};
use coupond_store::{ClaimOutcome, ClaimRequest, IdempotencyKey, StoreError, StoreResult};
use coupond_store_sql::claims::{
    self as shared, earlier_claim, forget, link_code, not_claimable, take_code,
};
use coupond_store_sql::{sql, tags, Exec, Row, Tx};

use crate::exec::{MysqlTx, Scripted};
use crate::rows::{db_err, deadlock};
use crate::script::Script;
use crate::store::MysqlDb;

pub(crate) use pipelined::Pipelined;
pub(crate) use stock::split as split_stock;

/// Rows per multi-row statement.
pub(super) const CHUNK: usize = 500;
/// Tries of a batch that InnoDB rolled back to break a deadlock (nothing of it stayed). An
/// exact-mode batch (every shard locked) and a one-shard batch of the same template can
/// deadlock on a user's counter and the shards; under a loaded machine a batch met that three
/// times in a row, and all of its claims were answered 503 (`flash_sale_is_exact_on_mysql`,
/// one run in two of the API suite on 2 cores). Each try is rolled back at once, so eight
/// cost little and leave a 503 to a database really in trouble.
const DEADLOCK_TRIES: usize = 8;

/// What the template's row says, read under its shared lock.
pub(super) struct Terms {
    total_stock: i64,
    pub(super) limit: i64,
    /// The audience is a set of tags (`template_tags` has rows).
    tagged: bool,
}

pub(crate) use coupond_store_sql::claims::Attempt;

impl MysqlDb {
    /// The shard the next batch starts looking at.
    fn shard_start(&self) -> i64 {
        i64::from(self.shard_cursor.next(stock::SHARDS as u32))
    }

    /// A claim batch in its own transaction: from one shard, else exactly. A batch InnoDB
    /// rolled back to break a deadlock is run again, up to [`DEADLOCK_TRIES`] times.
    pub(crate) async fn claim_batch_tx(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>> {
        let start = self.shard_start();
        let mut tries = 0;
        let mut exact = false;
        loop {
            let mut tx = MysqlTx(self.pool.begin().await.map_err(db_err)?);
            match attempt(&mut tx, self, template, claims, now, exact, start).await {
                Ok(Attempt::Done(out)) => {
                    coupond_store::failpoints::hit("claim.before_commit")?;
                    Box::new(tx).commit().await?;
                    return Ok(out);
                }
                Ok(Attempt::Retry) if !exact => exact = true,
                Ok(Attempt::Retry) => {
                    return Err(StoreError::other("stock changed under the shards' locks"))
                }
                Err(e) if deadlock(&e) && tries + 1 < DEADLOCK_TRIES => tries += 1,
                Err(e) => return Err(e),
            }
            // Now, not when the pool next sees the connection: the next try would wait on
            // this one's locks until then.
            tx.0.rollback().await.map_err(db_err)?;
        }
    }
}

/// One try at a claim batch inside the caller's transaction, which commits it on `Done` and
/// drops it otherwise. A template that is not claimable at `now` gets no writes.
pub(crate) async fn attempt<E: Scripted + ?Sized>(
    tx: &mut E,
    store: &MysqlDb,
    template: TemplateId,
    claims: &[ClaimRequest],
    now: Timestamp,
    exact: bool,
    start: i64,
) -> StoreResult<Attempt> {
    let Some(terms) = share_template(tx, template, now).await? else {
        return not_claimable(tx, template, claims).await.map(Attempt::Done);
    };
    let mut out: Vec<Option<ClaimOutcome>> = vec![None; claims.len()];
    // 1. Idempotency keys, sorted: retries get their earlier answer; new keys are taken.
    for (i, k) in shared::keyed(claims) {
        out[i] = claim_key(tx, k, now).await?;
    }
    // 2. Single-use codes, sorted: taken now, given back below if the claim is refused.
    for (i, code) in shared::coded(claims, &out) {
        out[i] = take_code(tx, template, code, &claims[i], now).await?;
    }
    // 2b. A tag audience: claimants holding none of its tags are not eligible.
    if terms.tagged {
        let (open, users) = tags::open_claimants(claims, &out);
        let rows = tx
            .fetch_all(tags::tagged_claimants(template, &users))
            .await?;
        let untagged = tags::refuse_untagged(claims, &mut out, open, &rows)?;
        forget(tx, claims, &untagged).await?;
    }
    let candidates: Vec<usize> = (0..claims.len()).filter(|i| out[*i].is_none()).collect();
    // 3. Per-user counters, then the shards: in exact mode every one locked; otherwise as
    // committed, the one to take from being locked last. First come first served.
    let users = holdings::users(claims, &candidates);
    let mut s = Script::default();
    let locks = holdings::lock_into(&mut s, template, &users);
    let at = stock::shards_into(&mut s, template, exact);
    let done = s.run(tx.connection()).await?;
    let changed: Vec<u64> = locks.iter().map(|&i| done[i].changed).collect();
    let mut held = holdings::held(tx, template, &users, &changed).await?;
    let shards = stock::from_rows(&done[at].rows)?;
    let left: i64 = shards.iter().map(|s| s.left).sum();
    // No committed stock anywhere is sold out for good, in either mode: the template's row is
    // shared, so no edit adds stock, and what commits only takes more.
    let remaining = if exact || left == 0 { left } else { i64::MAX };
    let granted = holdings::grant(claims, &candidates, &terms, remaining, &mut held, &mut out);
    let k = granted.len() as i64;
    if !exact && k > shards.iter().map(|s| s.left).max().unwrap_or(0) {
        // No shard looks like holding the batch: run it exactly, before writing anything.
        return Ok(Attempt::Retry);
    }
    let refused: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|i| !granted.contains(i))
        .collect();
    // 4. Counters, coupons, their log rows and events in one script; then the stock, last.
    let first = match granted.is_empty() {
        true => 0,
        false => store.ids.take(granted.len()).await?,
    };
    let mut s = Script::default();
    holdings::write_into(&mut s, template, &held);
    let coupons = coupons::insert_into(&mut s, template, claims, &granted, first, now)?;
    s.run(tx.connection()).await?;
    forget(tx, claims, &refused).await?;
    for (c, &i) in coupons.iter().zip(&granted) {
        link_code(tx, &claims[i], c.id).await?;
    }
    if !granted.is_empty() {
        // Coupons written, stock not yet taken: a fault here must leave neither.
        coupond_store::failpoints::hit("claim.mid_batch")?;
        let taken = if exact {
            stock::take_exact(tx, template, terms.total_stock, &shards, k, now).await?
        } else {
            stock::take_one(tx, template, terms.total_stock, k, start, now).await?
        };
        if !taken {
            return Ok(Attempt::Retry);
        }
        coupond_store::failpoints::hit("claim.stock_taken")?;
        for (c, &i) in coupons.into_iter().zip(&granted) {
            out[i] = Some(ClaimOutcome::Issued(c));
        }
    }
    Attempt::done(out)
}

/// Writes the read of the template's terms at `now`, sharing its row (an abort or edit waits
/// for the batch; other batches do not); [`terms_from`] reads what it returned.
fn terms_into(s: &mut Script, template: TemplateId, now: Timestamp) -> usize {
    s.sql(&format!(
        "SELECT total_stock, per_user_limit, {}, ({}",
        tags::TAGGED_COLUMN,
        coupond_store_sql::catalog::CLAIMING
    ))
    .sql(" AND claim_start <= ")
    .time(now)
    .sql(" AND ")
    .time(now)
    .sql(" < claim_end) AS claimable FROM templates WHERE id = ")
    .int(template.get())
    .sql(" LOCK IN SHARE MODE");
    s.end()
}

/// The terms [`terms_into`]'s read returned, if the template is claimable.
fn terms_from(rows: &[Row]) -> StoreResult<Option<Terms>> {
    let row = rows.first().ok_or(StoreError::NotFound)?;
    if row.i64("claimable")? == 0 {
        return Ok(None);
    }
    Ok(Some(Terms {
        total_stock: row.i64("total_stock")?,
        limit: row.i64("per_user_limit")?,
        tagged: row.i64("tagged")? > 0,
    }))
}

/// Shares the template's row; its terms if it is claimable at `now`.
async fn share_template<E: Scripted + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    now: Timestamp,
) -> StoreResult<Option<Terms>> {
    let mut s = Script::default();
    let at = terms_into(&mut s, template, now);
    terms_from(&s.run(tx.connection()).await?[at].rows)
}

/// Takes an idempotency key for a claim about to be made. `None`: the key is new (and held by
/// this transaction; a concurrent one with the same key waits). `Some(outcome)`: used before.
async fn claim_key<E: Exec + ?Sized>(
    tx: &mut E,
    k: &IdempotencyKey,
    now: Timestamp,
) -> StoreResult<Option<ClaimOutcome>> {
    let inserted = tx
        .execute(
            sql(
                "INSERT INTO claim_keys (\"key\", fingerprint, created_at) VALUES ($1, $2, $3)
                 ON DUPLICATE KEY UPDATE \"key\" = \"key\"",
            )
            .bind(k.key.as_str())
            .bind(&k.fingerprint[..])
            .bind(now),
        )
        .await?;
    if inserted == 1 {
        return Ok(None);
    }
    earlier_claim(tx, k).await
}
