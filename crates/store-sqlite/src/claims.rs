//! Claims on SQLite: a whole batch in one `BEGIN IMMEDIATE` transaction.
//!
//! Inside `BEGIN IMMEDIATE` this transaction is the only writer until it commits, so what it
//! reads (remaining stock, the next coupon id) stays true for the whole batch, and the batch
//! can be written in a few multi-row statements: per-user counters, coupons, their operation
//! log rows and their `coupon.claimed` events. The stock update is still conditional, so the
//! database, not this arithmetic, has the last word on I1.
//!
//! The wallet's reads are written once in `coupond_store_sql::wallet`; a page of a user's
//! coupons runs that statement inside one `json_group_array`, read as a single row.

use coupond_store::CouponQuery;
use std::collections::{HashMap, HashSet};

use coupond_domain::{Coupon, CouponId, CouponStatus, TemplateId, Timestamp};
use coupond_store::events::{self, kind};
use coupond_store::{ClaimOutcome, ClaimRequest, IdempotencyKey, StoreError, StoreResult};
use coupond_store_sql::claims::{self as shared, single_use};
use coupond_store_sql::{sql, tags, wallet, Db, Dialect, Exec};
use sqlx::{QueryBuilder, Sqlite};

use crate::exec::ConnExec;
use crate::rows::{self, db_err};
use crate::store::{us, SqliteStore};

type Tx = sqlx::Transaction<'static, Sqlite>;

/// Rows per multi-row statement: well under SQLite's bound-parameter limit at 9 per row.
const CHUNK: usize = 400;

/// The claim batch inside the caller's write transaction (which commits it). A template that
/// is not claimable at `now` gets no writes.
pub(crate) async fn claim_in(
    tx: &mut Tx,
    template: TemplateId,
    claims: &[ClaimRequest],
    now: Timestamp,
) -> StoreResult<Vec<ClaimOutcome>> {
    let row = sqlx::query(&format!(
        "SELECT total_stock, total_stock - claimed AS remaining, per_user_limit, {},
                (aborted_at IS NULL AND (activity_id IS NOT NULL OR published_at IS NOT NULL)
                 AND claim_start <= ?1 AND ?1 < claim_end) AS claimable
         FROM templates WHERE id = ?2",
        tags::TAGGED_COLUMN
    ))
    .bind(us(now))
    .bind(template.get())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?
    .ok_or(StoreError::NotFound)?;
    let get = |col: &str| -> StoreResult<i64> { sqlx::Row::try_get(&row, col).map_err(db_err) };
    if get("claimable")? == 0 {
        return shared::not_claimable(&mut ConnExec(tx), template, claims).await;
    }
    let (total_stock, remaining, limit) = (
        get("total_stock")?,
        get("remaining")?,
        get("per_user_limit")?,
    );
    let mut out: Vec<Option<ClaimOutcome>> = vec![None; claims.len()];

    // 1. Idempotency keys: retries get their earlier answer; new keys are taken.
    for (i, c) in claims.iter().enumerate() {
        if let Some(k) = &c.idempotency {
            out[i] = claim_key(tx, k, now).await?;
        }
    }
    // 2. Single-use codes: taken now, given back below if the claim is refused.
    for (i, c) in claims.iter().enumerate() {
        if let (None, Some(code)) = (&out[i], single_use(c)) {
            out[i] = shared::take_code(&mut ConnExec(tx), template, code, c, now).await?;
        }
    }
    // 2b. A tag audience: claimants holding none of its tags are not eligible.
    if get("tagged")? > 0 {
        refuse_untagged(tx, template, claims, &mut out).await?;
    }
    let candidates: Vec<usize> = (0..claims.len()).filter(|i| out[*i].is_none()).collect();

    // 3. Per-user counters.
    let holds = take_slots(tx, template, claims, &candidates, limit).await?;

    // 4. Stock, first come first served; refused claims give back what they took.
    let mut granted: Vec<usize> = Vec::new();
    for &i in &candidates {
        let c = &claims[i];
        let outcome = if !holds[i] {
            ClaimOutcome::LimitReached
        } else if (granted.len() as i64) < remaining {
            granted.push(i);
            continue;
        } else {
            sqlx::query("UPDATE holdings SET n = n - 1 WHERE template_id = ? AND user_id = ?")
                .bind(template.get())
                .bind(c.user.as_str())
                .execute(&mut **tx)
                .await
                .map_err(db_err)?;
            ClaimOutcome::SoldOut
        };
        // A refused claim records no key and leaves its code free.
        forget_key(tx, c.idempotency.as_ref()).await?;
        release_code(tx, single_use(c)).await?;
        out[i] = Some(outcome);
    }

    // 5. Coupons, their log rows and events.
    if !granted.is_empty() {
        let coupons = insert_coupons(tx, template, claims, &granted, now).await?;
        for (c, &i) in coupons.into_iter().zip(&granted) {
            if let Some(key) = &claims[i].idempotency {
                sqlx::query("UPDATE claim_keys SET coupon_id = ? WHERE key = ?")
                    .bind(c.id.get())
                    .bind(&key.key)
                    .execute(&mut **tx)
                    .await
                    .map_err(db_err)?;
            }
            if let Some(code) = single_use(&claims[i]) {
                sqlx::query("UPDATE codes SET coupon_id = ? WHERE code = ?")
                    .bind(c.id.get())
                    .bind(code)
                    .execute(&mut **tx)
                    .await
                    .map_err(db_err)?;
            }
            out[i] = Some(ClaimOutcome::Issued(c));
        }
        // Coupons written, stock not yet raised: a fault here must leave neither.
        coupond_store::failpoints::hit("claim.mid_batch")?;
        let n = granted.len() as i64;
        let raised = sqlx::query(
            "UPDATE templates SET claimed = claimed + ?1
             WHERE id = ?2 AND claimed + ?1 <= total_stock",
        )
        .bind(n)
        .bind(template.get())
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
        if raised.rows_affected() != 1 {
            return Err(StoreError::other(
                "stock changed inside a write transaction",
            ));
        }
        coupond_store::failpoints::hit("claim.stock_taken")?;
        if n == remaining {
            sqlx::query("INSERT INTO outbox (kind, at, body) VALUES (?, ?, ?)")
                .bind(kind::TEMPLATE_SOLD_OUT)
                .bind(us(now))
                .bind(events::template_sold_out(template, total_stock))
                .execute(&mut **tx)
                .await
                .map_err(db_err)?;
        }
    }
    out.into_iter()
        .map(|o| o.ok_or_else(|| StoreError::other("claim without an outcome")))
        .collect()
}

/// Answers `not_eligible` to the claims still open whose user holds none of the template's
/// audience tags (read in this transaction); they record no key and leave their code free.
async fn refuse_untagged(
    tx: &mut Tx,
    template: TemplateId,
    claims: &[ClaimRequest],
    out: &mut [Option<ClaimOutcome>],
) -> StoreResult<()> {
    let (open, users) = tags::open_claimants(claims, out);
    let rows = ConnExec(tx)
        .fetch_all(tags::tagged_claimants(template, &users))
        .await?;
    for i in tags::refuse_untagged(claims, out, open, &rows)? {
        forget_key(tx, claims[i].idempotency.as_ref()).await?;
        release_code(tx, single_use(&claims[i])).await?;
    }
    Ok(())
}

/// Takes a per-user slot for each candidate claim; `true` where one was free. Users appearing
/// once in the batch take theirs in one multi-row upsert; a user appearing several times goes
/// one claim at a time, in arrival order, so the limit counts earlier claims of the batch.
async fn take_slots(
    tx: &mut Tx,
    template: TemplateId,
    claims: &[ClaimRequest],
    candidates: &[usize],
    limit: i64,
) -> StoreResult<Vec<bool>> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for &i in candidates {
        *seen.entry(claims[i].user.as_str()).or_insert(0) += 1;
    }
    let mut holds = vec![false; claims.len()];
    let (single, repeated): (Vec<usize>, Vec<usize>) = candidates
        .iter()
        .partition(|i| seen[claims[**i].user.as_str()] == 1);
    for chunk in single.chunks(CHUNK) {
        let full = users_at_limit(tx, template, claims, chunk, limit).await?;
        let open: Vec<usize> = chunk
            .iter()
            .copied()
            .filter(|&i| !full.contains(claims[i].user.as_str()))
            .collect();
        if !open.is_empty() {
            let mut b =
                QueryBuilder::<Sqlite>::new("INSERT INTO holdings (template_id, user_id, n) ");
            b.push_values(&open, |mut row, &i| {
                row.push_bind(template.get())
                    .push_bind(claims[i].user.as_str().to_owned())
                    .push("1");
            });
            b.push(" ON CONFLICT (template_id, user_id) DO UPDATE SET n = n + 1 WHERE n < ")
                .push_bind(limit);
            let done = b.build().execute(&mut **tx).await.map_err(db_err)?;
            if done.rows_affected() != open.len() as u64 {
                return Err(StoreError::other(
                    "per-user counters moved inside the batch",
                ));
            }
        }
        for &i in chunk {
            holds[i] = !full.contains(claims[i].user.as_str());
        }
    }
    for i in repeated {
        let held: Option<i64> = sqlx::query_scalar(
            "INSERT INTO holdings (template_id, user_id, n) VALUES (?1, ?2, 1)
             ON CONFLICT (template_id, user_id) DO UPDATE SET n = n + 1 WHERE n < ?3
             RETURNING n",
        )
        .bind(template.get())
        .bind(claims[i].user.as_str())
        .bind(limit)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?;
        holds[i] = held.is_some();
    }
    Ok(holds)
}

/// The users of `chunk` whose counter has reached `limit`, read as one aggregated row (sqlx
/// hands each row of a `RETURNING` across its thread on its own). Inside `BEGIN IMMEDIATE`
/// nothing else writes, so the upsert that follows meets these same counters.
async fn users_at_limit(
    tx: &mut Tx,
    template: TemplateId,
    claims: &[ClaimRequest],
    chunk: &[usize],
    limit: i64,
) -> StoreResult<HashSet<String>> {
    let users: Vec<&str> = chunk.iter().map(|&i| claims[i].user.as_str()).collect();
    let full: String = sqlx::query_scalar(
        "SELECT json_group_array(user_id) FROM holdings
         WHERE template_id = ? AND n >= ? AND user_id IN (SELECT value FROM json_each(?))",
    )
    .bind(template.get())
    .bind(limit)
    .bind(serde_json::to_string(&users).map_err(StoreError::other)?)
    .fetch_one(&mut **tx)
    .await
    .map_err(db_err)?;
    serde_json::from_str(&full).map_err(StoreError::other)
}

/// Inserts the coupons of `granted` claims, with one operation-log row and one
/// `coupon.claimed` event each. Ids are handed out here: inside `BEGIN IMMEDIATE` this
/// transaction is the only writer, so `max(id) + 1..` is free.
async fn insert_coupons(
    tx: &mut Tx,
    template: TemplateId,
    claims: &[ClaimRequest],
    granted: &[usize],
    now: Timestamp,
) -> StoreResult<Vec<Coupon>> {
    let first_id: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM coupons")
        .fetch_one(&mut **tx)
        .await
        .map_err(db_err)?;
    let coupons = granted
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let c = &claims[i];
            Ok(Coupon {
                id: CouponId::new(first_id + k as i64).map_err(StoreError::other)?,
                template_id: template,
                user_id: c.user.clone(),
                stored_status: CouponStatus::Unused,
                claimed_at: now,
                valid_from: c.valid_from,
                valid_until: c.valid_until,
                code: c.code.as_ref().map(|k| k.code.clone()),
                order_id: None,
                locked_until: None,
                discount: None,
                used_at: None,
            })
        })
        .collect::<StoreResult<Vec<Coupon>>>()?;
    let with_actor: Vec<(&Coupon, &ClaimRequest)> = coupons
        .iter()
        .zip(granted.iter().map(|&i| &claims[i]))
        .collect();
    for chunk in with_actor.chunks(CHUNK) {
        let mut b = QueryBuilder::<Sqlite>::new(
            "INSERT INTO coupons (id, template_id, user_id, claimed_at, valid_from, valid_until, \
             updated_at, code, issuance_id) ",
        );
        b.push_values(chunk, |mut row, (c, r)| {
            row.push_bind(c.id.get())
                .push_bind(template.get())
                .push_bind(c.user_id.as_str().to_owned())
                .push_bind(us(now))
                .push_bind(us(c.valid_from))
                .push_bind(us(c.valid_until))
                .push_bind(us(now))
                .push_bind(c.code.clone())
                .push_bind(r.issuance);
        });
        b.build().execute(&mut **tx).await.map_err(db_err)?;

        let mut b = QueryBuilder::<Sqlite>::new(
            "INSERT INTO coupon_events (coupon_id, to_status, actor, at) ",
        );
        b.push_values(chunk, |mut row, (c, r)| {
            row.push_bind(c.id.get())
                .push("'unused'")
                .push_bind(r.actor.to_text())
                .push_bind(us(now));
        });
        b.build().execute(&mut **tx).await.map_err(db_err)?;

        let mut b = QueryBuilder::<Sqlite>::new("INSERT INTO outbox (kind, at, body) ");
        b.push_values(chunk, |mut row, (c, r)| {
            let (kind, body) = events::coupon_claimed(c, &r.actor, r.issuance);
            row.push_bind(kind).push_bind(us(now)).push_bind(body);
        });
        b.build().execute(&mut **tx).await.map_err(db_err)?;
    }
    Ok(coupons)
}

/// Takes an idempotency key for a claim about to be made. `None`: the key is new (and now
/// held by this transaction). `Some(outcome)`: the key was used before.
async fn claim_key(
    tx: &mut Tx,
    k: &IdempotencyKey,
    now: Timestamp,
) -> StoreResult<Option<ClaimOutcome>> {
    let inserted = sqlx::query(
        "INSERT INTO claim_keys (key, fingerprint, created_at) VALUES (?, ?, ?)
         ON CONFLICT (key) DO NOTHING",
    )
    .bind(&k.key)
    .bind(&k.fingerprint[..])
    .bind(us(now))
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    if inserted.rows_affected() == 1 {
        return Ok(None);
    }
    shared::earlier_claim(&mut ConnExec(tx), k).await
}

async fn forget_key(tx: &mut Tx, k: Option<&IdempotencyKey>) -> StoreResult<()> {
    if let Some(k) = k {
        sqlx::query("DELETE FROM claim_keys WHERE key = ?")
            .bind(&k.key)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

async fn release_code(tx: &mut Tx, code: Option<&str>) -> StoreResult<()> {
    if let Some(code) = code {
        sqlx::query("UPDATE codes SET redeemed_by = NULL, redeemed_at = NULL WHERE code = ?")
            .bind(code)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

coupond_store_sql::impl_claim_store!(SqliteStore, {
    async fn claim_batch(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>> {
        let mut tx = self.begin().await?;
        let out = claim_in(&mut tx, template, claims, now).await?;
        coupond_store::failpoints::hit("claim.before_commit")?;
        tx.commit().await.map_err(db_err)?;
        Ok(out)
    }

    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        // One row for the whole page (see `rows::COUPON_JSON`); sorted again here rather than
        // in the aggregate, which would build a temporary b-tree for what the index gave sorted.
        let page = wallet::coupon_page(Dialect::Sqlite, q);
        let mut all = sql(format!(
            "SELECT json_group_array({}) AS page FROM ({})",
            rows::COUPON_JSON,
            page.text()
        ));
        for a in page.args() {
            all = all.bind(a.clone());
        }
        let row = self.read_one(all).await?;
        let mut page = rows::coupons_json(row.str("page")?)?;
        page.sort_by_key(|c| (c.valid_until, c.id));
        Ok(page)
    }
});
