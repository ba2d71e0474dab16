//! A template's stock on MySQL: its shards (`template_stock`, migration 0005), as on
//! PostgreSQL.
//!
//! A plain batch takes its `k` coupons from one shard that holds them, trying first the
//! shards no other batch holds (`SKIP LOCKED`) from its own starting shard on, then waiting
//! for one. An exact batch has locked every shard, in shard order, and takes from them in
//! order. The transaction that empties a shard looks, under the template's `sold_out` lock
//! (a row of `locks`, so emptying transactions take turns), whether any stock is left
//! anywhere: the last of them sees every shard empty and writes `template.sold_out`, once.

use coupond_domain::{TemplateId, Timestamp};
use coupond_store::events::{self, kind};
use coupond_store::StoreResult;
use coupond_store_sql::{sql, Query, Tx};

/// Most shards a template's stock is split into.
pub(crate) const SHARDS: i64 = 16;

/// One shard and the coupons it still holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shard {
    pub(crate) shard: i64,
    pub(crate) left: i64,
}

/// Every shard of `template`: `lock`ed in shard order (exact mode), or as committed.
pub(crate) async fn shards<E: Tx + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    lock: bool,
) -> StoreResult<Vec<Shard>> {
    let q = sql(format!(
        "SELECT shard, total - claimed AS \"left\" FROM template_stock
         WHERE template_id = $1 ORDER BY shard{}",
        if lock { " FOR UPDATE" } else { "" }
    ));
    tx.fetch_all(q.bind(template.get()))
        .await?
        .iter()
        .map(|r| {
            Ok(Shard {
                shard: r.i64("shard")?,
                left: r.i64("left")?,
            })
        })
        .collect()
}

/// Takes `k` coupons from one shard, starting at shard `start`; `false` when no shard held
/// `k` (nothing taken: the caller runs the batch again in exact mode).
pub(crate) async fn take_one<E: Tx + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    total_stock: i64,
    k: i64,
    start: i64,
    now: Timestamp,
) -> StoreResult<bool> {
    let Some(shard) = pick(tx, template, k, start).await? else {
        return Ok(false);
    };
    let raised = tx
        .execute(
            sql("UPDATE template_stock SET claimed = claimed + $1
                 WHERE template_id = $2 AND shard = $3 AND claimed + $1 <= total")
            .bind(k)
            .bind(template.get())
            .bind(shard.shard),
        )
        .await?;
    if raised != 1 {
        return Ok(false);
    }
    if shard.left == k {
        sold_out(tx, template, total_stock, now).await?;
    }
    Ok(true)
}

/// A shard holding `k`, locked: one no other batch holds, from `start` on and then before it;
/// failing that, the first one holding `k`, waited for.
async fn pick<E: Tx + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    k: i64,
    start: i64,
) -> StoreResult<Option<Shard>> {
    // In shard order along the primary key, so only the row returned stays locked (READ
    // COMMITTED releases the rows that do not match).
    let free = |from: &str| -> Query {
        sql(format!(
            "SELECT shard, total - claimed AS \"left\" FROM template_stock
             WHERE template_id = $1 AND {from} AND claimed + $3 <= total
             ORDER BY shard LIMIT 1 FOR UPDATE SKIP LOCKED"
        ))
        .bind(template.get())
        .bind(start)
        .bind(k)
    };
    for q in [
        free("shard >= $2"),
        free("shard < $2"),
        sql(
            "SELECT shard, total - claimed AS \"left\" FROM template_stock
             WHERE template_id = $1 AND claimed + $2 <= total
             ORDER BY shard LIMIT 1 FOR UPDATE",
        )
        .bind(template.get())
        .bind(k),
    ] {
        if let Some(r) = tx.fetch_optional(q).await? {
            return Ok(Some(Shard {
                shard: r.i64("shard")?,
                left: r.i64("left")?,
            }));
        }
    }
    Ok(None)
}

/// Takes `k` coupons from `shards` (all of the template's, locked, holding `k` between them)
/// in shard order, in one statement.
pub(crate) async fn take_exact<E: Tx + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    total_stock: i64,
    shards: &[Shard],
    k: i64,
    now: Timestamp,
) -> StoreResult<bool> {
    let mut need = k;
    let mut q = sql("UPDATE template_stock SET claimed = claimed + CASE shard");
    let mut taken = Vec::new();
    let mut emptied = false;
    for s in shards {
        let take = need.min(s.left);
        if take <= 0 {
            continue;
        }
        need -= take;
        emptied |= take == s.left;
        q.push(" WHEN ")
            .push_bind(s.shard)
            .push(" THEN ")
            .push_bind(take);
        taken.push(s.shard);
    }
    if need > 0 {
        return Ok(false);
    }
    q.push(" ELSE 0 END WHERE template_id = ")
        .push_bind(template.get())
        .push(" AND shard IN (")
        .push_binds(taken.iter().copied())
        .push(")");
    if tx.execute(q).await? != taken.len() as u64 {
        return Ok(false);
    }
    if emptied {
        sold_out(tx, template, total_stock, now).await?;
    }
    Ok(true)
}

/// Writes `template.sold_out` if no stock is left in any shard. Transactions that emptied a
/// shard take turns here; each looks at what the others committed (READ COMMITTED: every
/// statement reads afresh), so the last one sees every shard empty.
async fn sold_out<E: Tx + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    total_stock: i64,
    now: Timestamp,
) -> StoreResult<()> {
    tx.lock(&format!("sold_out:{}", template.get())).await?;
    let left = tx
        .fetch_optional(
            sql(
                "SELECT shard FROM template_stock WHERE template_id = $1 AND claimed < total
                 LIMIT 1",
            )
            .bind(template.get()),
        )
        .await?;
    if left.is_none() {
        tx.execute(
            sql("INSERT INTO outbox (kind, at, body) VALUES ($1, $2, $3)")
                .bind(kind::TEMPLATE_SOLD_OUT)
                .bind(now)
                .bind(events::template_sold_out(template, total_stock)),
        )
        .await?;
    }
    Ok(())
}

/// Lays the template's stock of `total` out in min(16, total) shards, keeping the coupons
/// already claimed (filled into the shards in order). Called in the transaction that writes
/// the template's row, which it holds locked, so no claim batch is in flight on it.
pub(crate) async fn split<E: Tx + ?Sized>(tx: &mut E, id: i64, total: i64) -> StoreResult<()> {
    let done = tx
        .fetch_one(
            sql(
                "SELECT CAST(COALESCE(SUM(claimed), 0) AS SIGNED) AS n FROM template_stock
                 WHERE template_id = $1",
            )
            .bind(id),
        )
        .await?
        .i64("n")?;
    tx.execute(sql("DELETE FROM template_stock WHERE template_id = $1").bind(id))
        .await?;
    let n = total.clamp(1, SHARDS);
    let mut q = sql("INSERT INTO template_stock (template_id, shard, total, claimed) VALUES ");
    let mut before = 0;
    for i in 0..n {
        let size = total / n + i64::from(i < total % n);
        let claimed = size.min((done - before).max(0));
        before += size;
        q.push(if i == 0 { "(" } else { ", (" })
            .push_bind(id)
            .push(", ")
            .push_bind(i)
            .push(", ")
            .push_bind(size)
            .push(", ")
            .push_bind(claimed)
            .push(")");
    }
    tx.execute(q).await?;
    Ok(())
}
