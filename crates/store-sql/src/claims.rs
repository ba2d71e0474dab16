//! Steps of a claim batch written once in the shared statements: giving back what a refused
//! claim took, the answers of claims made before (by idempotency key or single-use code),
//! taking a single-use code, and multi-row inserts. MySQL's claim path is built on them, and
//! SQLite and PostgreSQL call them for keys, codes and non-claimable templates (through a
//! connection `Exec`); their hot paths read their driver's rows directly.

use coupond_domain::{CouponId, TemplateId, Timestamp};
use coupond_store::{ClaimOutcome, ClaimRequest, IdempotencyKey, StoreError, StoreResult};

use crate::{rows, sql, Exec, Query};

/// A refused claim records no key and leaves its code free.
pub async fn forget<E: Exec + ?Sized>(
    tx: &mut E,
    claims: &[ClaimRequest],
    refused: &[usize],
) -> StoreResult<()> {
    for &i in refused {
        if let Some(k) = &claims[i].idempotency {
            tx.execute(sql("DELETE FROM claim_keys WHERE \"key\" = $1").bind(k.key.as_str()))
                .await?;
        }
        if let Some(code) = single_use(&claims[i]) {
            tx.execute(
                sql("UPDATE codes SET redeemed_by = NULL, redeemed_at = NULL WHERE code = $1")
                    .bind(code),
            )
            .await?;
        }
    }
    Ok(())
}

/// Points a granted claim's idempotency key and single-use code at its coupon.
pub async fn link<E: Exec + ?Sized>(
    tx: &mut E,
    r: &ClaimRequest,
    coupon: CouponId,
) -> StoreResult<()> {
    if let Some(k) = &r.idempotency {
        let q = sql("UPDATE claim_keys SET coupon_id = $1 WHERE \"key\" = $2");
        tx.execute(q.bind(coupon.get()).bind(k.key.as_str()))
            .await?;
    }
    link_code(tx, r, coupon).await
}

/// Points a granted claim's single-use code, if it redeems one, at its coupon.
pub async fn link_code<E: Exec + ?Sized>(
    tx: &mut E,
    r: &ClaimRequest,
    coupon: CouponId,
) -> StoreResult<()> {
    if let Some(code) = single_use(r) {
        let q = sql("UPDATE codes SET coupon_id = $1 WHERE code = $2");
        tx.execute(q.bind(coupon.get()).bind(code)).await?;
    }
    Ok(())
}

/// `head` followed by one parenthesised row per item, written by `row`.
pub fn multi_row<T>(head: &str, items: &[T], row: impl Fn(&mut Query, &T)) -> Query {
    let mut q = sql(head.to_owned());
    for (k, item) in items.iter().enumerate() {
        q.push(if k == 0 { "(" } else { ", (" });
        row(&mut q, item);
        q.push(")");
    }
    q
}

/// Every claim of a batch on a template that is not claimable: retries of claims that
/// succeeded earlier still get their coupon.
pub async fn not_claimable<E: Exec + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    claims: &[ClaimRequest],
) -> StoreResult<Vec<ClaimOutcome>> {
    let mut out = Vec::with_capacity(claims.len());
    for c in claims {
        let mut earlier = match &c.idempotency {
            Some(k) => earlier_claim(tx, k).await?,
            None => None,
        };
        if let (None, Some(code)) = (&earlier, single_use(c)) {
            earlier = earlier_code(tx, template, code, c).await?;
        }
        out.push(earlier.unwrap_or(ClaimOutcome::NotClaimable));
    }
    Ok(out)
}

/// What an idempotency key did before: the coupon it issued, `KeyReused` if it was for
/// another request, `None` if it is unknown.
pub async fn earlier_claim<E: Exec + ?Sized>(
    tx: &mut E,
    k: &IdempotencyKey,
) -> StoreResult<Option<ClaimOutcome>> {
    let row = tx
        .fetch_optional(
            sql(
                "SELECT k.fingerprint, c.* FROM claim_keys k JOIN coupons c ON c.id = k.coupon_id
                 WHERE k.\"key\" = $1",
            )
            .bind(k.key.as_str()),
        )
        .await?;
    let Some(row) = row else { return Ok(None) };
    if row.bytes("fingerprint")? != k.fingerprint {
        return Ok(Some(ClaimOutcome::KeyReused));
    }
    Ok(Some(ClaimOutcome::Replayed(rows::coupon(&row)?)))
}

/// The single-use code a claim redeems, if it redeems one.
pub fn single_use(c: &ClaimRequest) -> Option<&str> {
    c.code
        .as_ref()
        .filter(|k| k.single_use)
        .map(|k| k.code.as_str())
}

/// Takes a single-use code of `template` for the claim's user. `None`: taken now. `Some`: the
/// user redeemed it before (its coupon), or someone else did or it is not this template's.
pub async fn take_code<E: Exec + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    code: &str,
    c: &ClaimRequest,
    now: Timestamp,
) -> StoreResult<Option<ClaimOutcome>> {
    let taken = tx
        .execute(
            sql("UPDATE codes SET redeemed_by = $1, redeemed_at = $2
                 WHERE code = $3 AND template_id = $4 AND batch_id IS NOT NULL
                   AND redeemed_by IS NULL")
            .bind(c.user.as_str())
            .bind(now)
            .bind(code)
            .bind(template.get()),
        )
        .await?;
    if taken == 1 {
        return Ok(None);
    }
    Ok(Some(
        earlier_code(tx, template, code, c)
            .await?
            .unwrap_or(ClaimOutcome::CodeTaken),
    ))
}

/// The coupon a single-use code gave this claim's user before, as `Replayed`.
pub async fn earlier_code<E: Exec + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    code: &str,
    c: &ClaimRequest,
) -> StoreResult<Option<ClaimOutcome>> {
    let row = tx
        .fetch_optional(
            sql(
                "SELECT c.* FROM codes k JOIN coupons c ON c.id = k.coupon_id
                 WHERE k.code = $1 AND k.template_id = $2 AND k.redeemed_by = $3",
            )
            .bind(code)
            .bind(template.get())
            .bind(c.user.as_str()),
        )
        .await?;
    row.map(|r| rows::coupon(&r).map(ClaimOutcome::Replayed))
        .transpose()
}

/// How one try at a claim batch ended where stock is kept in shards (PostgreSQL, MySQL). Only
/// `Done` may be committed.
#[derive(Debug)]
pub enum Attempt {
    Done(Vec<ClaimOutcome>),
    /// No single shard held the batch (or the stock ran out under it): run it again exactly.
    Retry,
}

impl Attempt {
    /// The batch done: `out`, once every claim has its outcome.
    pub fn done(out: Vec<Option<ClaimOutcome>>) -> StoreResult<Attempt> {
        out.into_iter()
            .map(|o| o.ok_or_else(|| StoreError::other("claim without an outcome")))
            .collect::<StoreResult<Vec<_>>>()
            .map(Attempt::Done)
    }
}

/// The claims with an idempotency key, sorted by key (so that batches take keys in one order).
pub fn keyed(claims: &[ClaimRequest]) -> Vec<(usize, &IdempotencyKey)> {
    let mut keyed: Vec<(usize, &IdempotencyKey)> = claims
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.idempotency.as_ref().map(|k| (i, k)))
        .collect();
    keyed.sort_by(|a, b| a.1.key.cmp(&b.1.key));
    keyed
}

/// The claims still open in `out` that give a single-use code, sorted by code.
pub fn coded<'a>(
    claims: &'a [ClaimRequest],
    out: &[Option<ClaimOutcome>],
) -> Vec<(usize, &'a str)> {
    let mut coded: Vec<(usize, &str)> = (0..claims.len())
        .filter(|i| out[*i].is_none())
        .filter_map(|i| single_use(&claims[i]).map(|k| (i, k)))
        .collect();
    coded.sort_by(|a, b| a.1.cmp(b.1));
    coded
}

/// Where the next claim batch starts looking for a stock shard: batches in flight at once start
/// on different shards, so they do not wait on each other's. Shared by a store's clones.
#[derive(Clone, Debug)]
pub struct ShardCursor(std::sync::Arc<std::sync::atomic::AtomicU32>);

impl ShardCursor {
    /// A cursor starting at `seed` (processes start at different shards too).
    pub fn new(seed: u32) -> Self {
        ShardCursor(std::sync::Arc::new(seed.into()))
    }

    /// The shard, of `shards`, the next batch starts at.
    pub fn next(&self, shards: u32) -> u32 {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        n % shards
    }
}
