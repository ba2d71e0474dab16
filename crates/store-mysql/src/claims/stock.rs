//! A template's stock on MySQL: its shards (`template_stock`, migration 0005), as on
//! PostgreSQL.
//!
//! A two-round-trip batch (`pipelined`) takes its `k` coupons from a shard it chose on the
//! shards as committed ([`choose`]), in one update the shard's check stops if the shard no
//! longer holds them ([`take_into`]). A batch run one statement at a time takes its `k` from
//! one shard that holds them, trying first the shards no other batch holds (`SKIP LOCKED`)
//! from its own starting shard on, then waiting for one. An exact batch has locked every shard, in shard order, and takes from them in
//! order. The transaction that empties a shard looks, under the template's `sold_out` lock
//! (a row of `locks`, so emptying transactions take turns), whether any stock is left
//! anywhere: the last of them sees every shard empty and writes `template.sold_out`, once.

use coupond_domain::{TemplateId, Timestamp};
use coupond_store::events::{self, kind};
use coupond_store::StoreResult;
use coupond_store_sql::{sql, Query, Row, Tx};

use crate::script::Script;

/// Most shards a template's stock is split into.
pub(crate) const SHARDS: i64 = 16;

/// One shard and the coupons it still holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shard {
    pub(crate) shard: i64,
    pub(crate) left: i64,
}

/// Writes the read of every shard of `template`: `lock`ed in shard order (exact mode), or as
/// committed; [`from_rows`] reads what it returned.
pub(crate) fn shards_into(s: &mut Script, template: TemplateId, lock: bool) -> usize {
    s.sql("SELECT shard, total - claimed AS \"left\" FROM template_stock WHERE template_id = ")
        .int(template.get())
        .sql(" ORDER BY shard")
        .sql(if lock { " FOR UPDATE" } else { "" });
    s.end()
}

/// The shards [`shards_into`]'s read returned.
pub(crate) fn from_rows(rows: &[Row]) -> StoreResult<Vec<Shard>> {
    rows.iter()
        .map(|r| {
            Ok(Shard {
                shard: r.i64("shard")?,
                left: r.i64("left")?,
            })
        })
        .collect()
}

/// The shard a plain batch of `k` takes from, chosen on the shards as committed, and whether
/// it takes that shard's last coupons.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Take {
    shard: i64,
    k: i64,
    pub(crate) empties: bool,
}

/// A shard to take `k` from, looking from shard `start` on and then before it: one that
/// keeps some stock after, else one that `k` empties; `None` when no shard holds `k`.
pub(crate) fn choose(shards: &[Shard], k: i64, start: i64) -> Option<Take> {
    let from = shards.iter().position(|s| s.shard >= start).unwrap_or(0);
    let order = || shards[from..].iter().chain(&shards[..from]);
    let take = |s: &Shard, empties| Take {
        shard: s.shard,
        k,
        empties,
    };
    order()
        .find(|s| s.left > k)
        .map(|s| take(s, false))
        .or_else(|| order().find(|s| s.left == k).map(|s| take(s, true)))
}

/// Writes the update that takes `t.k` coupons from its shard, which must then still hold what
/// the batch read: when less than `k` is left, the shard's `CHECK (claimed <= total)` fails the
/// statement, and so the script before its `COMMIT`. A take not meant to empty the shard that
/// would (other batches took from it since) is made to fail the same way, since the batch that
/// empties a shard must look whether the template sold out (`sold_out`).
pub(crate) fn take_into(s: &mut Script, template: TemplateId, t: Take) -> usize {
    s.sql("UPDATE template_stock SET claimed = ");
    if t.empties {
        s.sql("claimed + ").int(t.k);
    } else {
        s.sql("IF(claimed + ")
            .int(t.k)
            .sql(" < total, claimed + ")
            .int(t.k)
            .sql(", total + 1)");
    }
    s.sql(" WHERE template_id = ")
        .int(template.get())
        .sql(" AND shard = ")
        .int(t.shard);
    s.end()
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
pub(crate) async fn sold_out<E: Tx + ?Sized>(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn shards(left: &[i64]) -> Vec<Shard> {
        (0..)
            .zip(left)
            .map(|(shard, &left)| Shard { shard, left })
            .collect()
    }

    fn chosen(left: &[i64], k: i64, start: i64) -> Option<(i64, bool)> {
        choose(&shards(left), k, start).map(|t| (t.shard, t.empties))
    }

    #[test]
    fn a_batch_takes_from_its_own_shard_on_and_keeps_shards_from_emptying_when_it_can() {
        // From the starting shard on, then the ones before it.
        assert_eq!(chosen(&[5, 5, 5, 5], 3, 2), Some((2, false)));
        assert_eq!(chosen(&[5, 5, 1, 1], 3, 2), Some((0, false)));
        // A shard the batch would empty only when none keeps stock after it.
        assert_eq!(chosen(&[3, 1, 9, 3], 3, 0), Some((2, false)));
        assert_eq!(chosen(&[1, 3, 2, 3], 3, 2), Some((3, true)));
        // No shard holds the batch: it runs in exact mode instead.
        assert_eq!(chosen(&[2, 2, 2, 2], 3, 0), None);
        assert_eq!(chosen(&[], 1, 0), None);
    }

    #[test]
    fn the_take_fails_the_shards_check_unless_the_shard_holds_what_was_read() {
        let mut s = Script::default();
        let t = TemplateId::new(7).unwrap();
        let keep = choose(&shards(&[5]), 2, 0).unwrap();
        let empty = choose(&shards(&[2]), 2, 0).unwrap();
        assert_eq!(take_into(&mut s, t, keep), 0);
        assert_eq!(take_into(&mut s, t, empty), 1);
        let text = format!("{s:?}");
        assert!(
            text.contains("claimed = IF(claimed + 2 < total, claimed + 2, total + 1) WHERE template_id = 7 AND shard = 0"),
            "{text}"
        );
        assert!(
            text.contains("claimed = claimed + 2 WHERE template_id = 7 AND shard = 0"),
            "{text}"
        );
    }
}
