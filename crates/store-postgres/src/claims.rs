//! Claims on PostgreSQL: a whole batch in one transaction.
//!
//! Several coupond instances, and several batches of one instance, may claim the same
//! template at once, so nothing read early in the transaction is trusted for the stock. The
//! stock is split into shards (`template_stock`, migration 0015): a batch of `k` claims takes
//! `k` from one shard with a conditional update (`claimed + k <= total`), the last thing it
//! does before `COMMIT` on the keyed path and before writing the coupons on the plain one, so
//! batches on different shards never wait on each other and PostgreSQL flushes their commits
//! together. Batches start on different shards ([`PgDb::shard_cursor`]).
//!
//! Plain batches (no idempotency keys, no single-use codes, no user twice) are one call of
//! `coupond_claim_plain`, a server-side function: one round trip, BEGIN and COMMIT included
//! (the statement runs in autocommit), with the coupons' event bodies built here.
//!
//! When no single shard holds the batch, the batch is rolled back and run again in *exact*
//! mode, which locks every shard in shard order after taking the per-user counters, reads the
//! stock left, and issues exactly that many in arrival order (taking from the shards in order);
//! the rest are `sold_out`. That happens while a template sells out. The transaction that takes
//! the last coupon anywhere writes `template.sold_out`, exactly once (`coupond_take_stock`).
//!
//! Lock order, the same in every batch: the template's row FOR SHARE (an abort waits for the
//! batches in flight; batches do not wait on each other), idempotency keys (sorted),
//! single-use codes (sorted), per-user counters (sorted by user), then the stock shards
//! (exact mode: all of them, in shard order; otherwise one).

mod plain;

use std::collections::HashMap;

use coupond_domain::{Coupon, CouponId, TemplateId, Timestamp};
use coupond_store::events;
use coupond_store::{ClaimOutcome, ClaimRequest, IdempotencyKey, StoreError, StoreResult};
use coupond_store_sql::claims::{self as shared, single_use};
use coupond_store_sql::{tags, Exec};
use sqlx::Postgres;

use crate::exec::ConnExec;
use crate::rows::db_err;
use crate::store::{dt, PgDb};

type Tx = sqlx::Transaction<'static, Postgres>;

pub(crate) use coupond_store_sql::claims::Attempt;

impl PgDb {
    /// The shard the next batch starts looking at.
    fn shard_start(&self) -> i32 {
        self.shard_cursor.next(65_536) as i32
    }
}

/// One try at a claim batch inside the caller's transaction, which commits it on `Done` and
/// drops it otherwise. `exact` locks the template row before issuing (see the module's notes).
pub(crate) async fn attempt(
    tx: &mut Tx,
    template: TemplateId,
    claims: &[ClaimRequest],
    now: Timestamp,
    exact: bool,
    start: i32,
) -> StoreResult<Attempt> {
    // FOR SHARE: the template cannot be aborted (or changed) under the batch; other batches
    // share the lock. The stock is decided at the end.
    let row = sqlx::query(&format!(
        "SELECT per_user_limit, ({} AND claim_start <= $2 AND $2 < claim_end) AS claimable, {} \
         FROM templates WHERE id = $1 FOR SHARE",
        coupond_store_sql::catalog::CLAIMING,
        tags::TAGGED_COLUMN
    ))
    .bind(template.get())
    .bind(dt(now))
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?
    .ok_or(StoreError::NotFound)?;
    let claimable: bool = sqlx::Row::try_get(&row, "claimable").map_err(db_err)?;
    if !claimable {
        return shared::not_claimable(&mut ConnExec(tx), template, claims)
            .await
            .map(Attempt::Done);
    }
    let limit: i64 = sqlx::Row::try_get(&row, "per_user_limit").map_err(db_err)?;
    let limit = i32::try_from(limit).map_err(StoreError::other)?;
    let mut out: Vec<Option<ClaimOutcome>> = vec![None; claims.len()];

    // 1. Idempotency keys, sorted: retries get their earlier answer; new keys are taken.
    for (i, k) in shared::keyed(claims) {
        out[i] = claim_key(tx, k, now).await?;
    }
    // 2. Single-use codes, sorted: taken now, given back below if the claim is refused.
    for (i, code) in shared::coded(claims, &out) {
        out[i] = shared::take_code(&mut ConnExec(tx), template, code, &claims[i], now).await?;
    }
    // 2b. A tag audience: claimants holding none of its tags are not eligible.
    let tagged: i64 = sqlx::Row::try_get(&row, "tagged").map_err(db_err)?;
    let mut refused = if tagged > 0 {
        refuse_untagged(tx, template, claims, &mut out).await?
    } else {
        Vec::new()
    };
    let candidates: Vec<usize> = (0..claims.len()).filter(|i| out[*i].is_none()).collect();

    // 3. Per-user counters.
    let holds = take_slots(tx, template, claims, &candidates, limit).await?;
    let mut accepted: Vec<usize> = Vec::with_capacity(candidates.len());
    for &i in &candidates {
        if holds[i] {
            accepted.push(i);
        } else {
            out[i] = Some(ClaimOutcome::LimitReached);
            refused.push(i);
        }
    }

    // 4. In exact mode, the stock left, with every shard locked in shard order.
    if exact && !accepted.is_empty() {
        let remaining: i64 = sqlx::query_scalar(
            "SELECT COALESCE(SUM(total - claimed), 0)::bigint FROM (
                 SELECT total, claimed FROM template_stock WHERE template_id = $1
                 ORDER BY shard FOR NO KEY UPDATE) s",
        )
        .bind(template.get())
        .fetch_one(&mut **tx)
        .await
        .map_err(db_err)?;
        let cut = usize::try_from(remaining.max(0))
            .unwrap_or(0)
            .min(accepted.len());
        let surplus = accepted.split_off(cut);
        give_back(tx, template, claims, &surplus).await?;
        for i in surplus {
            out[i] = Some(ClaimOutcome::SoldOut);
            refused.push(i);
        }
    }
    // A refused claim records no key and leaves its code free.
    let keys: Vec<&str> = refused
        .iter()
        .filter_map(|&i| claims[i].idempotency.as_ref().map(|k| k.key.as_str()))
        .collect();
    if !keys.is_empty() {
        sqlx::query("DELETE FROM claim_keys WHERE key = ANY($1)")
            .bind(&keys)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    let codes: Vec<&str> = refused
        .iter()
        .filter_map(|&i| single_use(&claims[i]))
        .collect();
    if !codes.is_empty() {
        sqlx::query("UPDATE codes SET redeemed_by = NULL, redeemed_at = NULL WHERE code = ANY($1)")
            .bind(&codes)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }

    // 5. Coupons, their log rows, events, keys and codes; then the stock, last.
    if !accepted.is_empty() {
        let coupons = insert_coupons(tx, template, claims, &accepted, now).await?;
        // Coupons written, stock not yet raised: a fault here must leave neither.
        coupond_store::failpoints::hit("claim.mid_batch")?;
        if !take_stock(tx, template, accepted.len(), start, exact, now).await? {
            return Ok(Attempt::Retry);
        }
        coupond_store::failpoints::hit("claim.stock_taken")?;
        for (c, &i) in coupons.into_iter().zip(&accepted) {
            out[i] = Some(ClaimOutcome::Issued(c));
        }
    }
    Attempt::done(out)
}

/// Answers `not_eligible` to the claims still open whose user holds none of the template's
/// audience tags (read in this transaction); their indexes, to give back keys and codes.
async fn refuse_untagged(
    tx: &mut Tx,
    template: TemplateId,
    claims: &[ClaimRequest],
    out: &mut [Option<ClaimOutcome>],
) -> StoreResult<Vec<usize>> {
    let (open, users) = tags::open_claimants(claims, out);
    let rows = ConnExec(tx)
        .fetch_all(tags::tagged_claimants(template, &users))
        .await?;
    tags::refuse_untagged(claims, out, open, &rows)
}

/// Takes `k` of the template's stock from one shard (or, `exact`, from the shards in order,
/// which the caller holds locked and knows hold `k`); `false` when no single shard held `k`.
/// Writes `template.sold_out` when it took the last coupon anywhere.
pub(crate) async fn take_stock(
    tx: &mut Tx,
    template: TemplateId,
    k: usize,
    start: i32,
    exact: bool,
    now: Timestamp,
) -> StoreResult<bool> {
    sqlx::query_scalar("SELECT coupond_take_stock($1, $2, $3, $4, $5, $6::jsonb)")
        .bind(template.get())
        .bind(k as i64)
        .bind(start)
        .bind(exact)
        .bind(dt(now))
        .bind(sold_out_body(template))
        .fetch_one(&mut **tx)
        .await
        .map_err(db_err)
}

/// The `template.sold_out` body; the database fills in `total_stock` when it writes it.
pub(crate) fn sold_out_body(template: TemplateId) -> String {
    events::template_sold_out(template, 0)
}

/// Takes a per-user slot for each candidate claim; `true` where one was free.
///
/// One upsert takes the first slot of every user of the batch, in user order (so two batches
/// never wait on each other's counters in opposite orders) and returns the count each user
/// reached. A user with several claims in the batch then takes as many more as its limit
/// leaves, in one update of rows this transaction already holds locked.
async fn take_slots(
    tx: &mut Tx,
    template: TemplateId,
    claims: &[ClaimRequest],
    candidates: &[usize],
    limit: i32,
) -> StoreResult<Vec<bool>> {
    let mut by_user: HashMap<&str, Vec<usize>> = HashMap::new();
    for &i in candidates {
        by_user.entry(claims[i].user.as_str()).or_default().push(i);
    }
    let mut users: Vec<&str> = by_user.keys().copied().collect();
    users.sort_unstable();
    let mut holds = vec![false; claims.len()];
    if users.is_empty() {
        return Ok(holds);
    }
    let reached: Vec<(String, i32)> = sqlx::query_as(
        "INSERT INTO holdings AS h (template_id, user_id, n)
         SELECT $1, u, 1 FROM unnest($2::text[]) AS u
         ON CONFLICT (template_id, user_id) DO UPDATE SET n = h.n + 1 WHERE h.n < $3
         RETURNING user_id, n",
    )
    .bind(template.get())
    .bind(&users)
    .bind(limit)
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?;
    let mut more_users: Vec<String> = Vec::new();
    let mut more_n: Vec<i32> = Vec::new();
    for (user, n) in reached {
        let Some(mine) = by_user.get(user.as_str()) else {
            continue;
        };
        // `n` counts this batch's first claim of the user; the others fit while below the limit.
        let extra = (mine.len() - 1).min(usize::try_from(limit - n).unwrap_or(0));
        for &i in &mine[..=extra] {
            holds[i] = true;
        }
        if extra > 0 {
            more_users.push(user);
            more_n.push(extra as i32);
        }
    }
    if !more_users.is_empty() {
        sqlx::query(
            "UPDATE holdings h SET n = h.n + v.extra
             FROM unnest($2::text[], $3::int[]) AS v(u, extra)
             WHERE h.template_id = $1 AND h.user_id = v.u",
        )
        .bind(template.get())
        .bind(&more_users)
        .bind(&more_n)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    }
    Ok(holds)
}

/// Returns the per-user slots of claims that took one but get no coupon.
async fn give_back(
    tx: &mut Tx,
    template: TemplateId,
    claims: &[ClaimRequest],
    refused: &[usize],
) -> StoreResult<()> {
    if refused.is_empty() {
        return Ok(());
    }
    let users: Vec<&str> = refused.iter().map(|&i| claims[i].user.as_str()).collect();
    sqlx::query(
        "UPDATE holdings h SET n = h.n - v.k
         FROM (SELECT u, COUNT(*)::int AS k FROM unnest($2::text[]) AS u GROUP BY u) AS v
         WHERE h.template_id = $1 AND h.user_id = v.u",
    )
    .bind(template.get())
    .bind(&users)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Inserts the coupons of `accepted` claims in arrival order, with one operation-log row and
/// one `coupon.claimed` event each, and points their idempotency keys at them: one statement
/// after the ids are drawn.
async fn insert_coupons(
    tx: &mut Tx,
    template: TemplateId,
    claims: &[ClaimRequest],
    accepted: &[usize],
    now: Timestamp,
) -> StoreResult<Vec<Coupon>> {
    let ids: Vec<i64> = sqlx::query_scalar(
        "SELECT nextval(pg_get_serial_sequence('coupons', 'id')) FROM generate_series(1, $1)",
    )
    .bind(accepted.len() as i64)
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?;
    if ids.len() != accepted.len() {
        return Err(StoreError::other("the sequence gave too few ids"));
    }
    let mut coupons = Vec::with_capacity(accepted.len());
    let (mut users, mut froms, mut untils, mut actors, mut kinds, mut bodies) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut jobs: Vec<Option<i64>> = vec![];
    let (mut channels, mut sources) = (vec![], vec![]);
    let (mut key_names, mut key_ids) = (vec![], vec![]);
    let (mut coupon_codes, mut taken_codes, mut taken_ids) = (vec![], vec![], vec![]);
    for (&id, &i) in ids.iter().zip(accepted) {
        let r = &claims[i];
        let c = r.coupon(CouponId::new(id).map_err(StoreError::other)?, template, now);
        users.push(r.user.as_str().to_owned());
        froms.push(dt(r.valid_from));
        untils.push(dt(r.valid_until));
        actors.push(r.actor.to_text());
        let (kind, body) = events::coupon_claimed(&c, &r.actor, r.issuance);
        kinds.push(kind);
        bodies.push(body);
        jobs.push(r.issuance);
        channels.push(r.channel.to_text());
        sources.push(r.source.as_ref().map(|s| s.as_str().to_owned()));
        if let Some(k) = &r.idempotency {
            key_names.push(k.key.clone());
            key_ids.push(id);
        }
        coupon_codes.push(r.code.as_ref().map(|k| k.code.clone()));
        if let Some(code) = single_use(r) {
            taken_codes.push(code.to_owned());
            taken_ids.push(id);
        }
        coupons.push(c);
    }
    // Foreign keys are checked at the end of the statement, when the coupons exist.
    sqlx::query(
        "WITH c AS (
             INSERT INTO coupons (id, template_id, user_id, claimed_at, valid_from, valid_until,
                                  updated_at, code, issuance_id, channel, source)
             OVERRIDING SYSTEM VALUE
             SELECT id, $1, u, $2, f, t, $2, code, job, ch, so
             FROM unnest($3::bigint[], $4::text[], $5::timestamptz[], $6::timestamptz[],
                         $12::text[], $15::bigint[], $16::text[], $17::text[])
                  AS v(id, u, f, t, code, job, ch, so)
         ), e AS (
             INSERT INTO coupon_events (coupon_id, to_status, actor, at)
             SELECT id, 'unused', a, $2 FROM unnest($3::bigint[], $7::text[]) AS v(id, a)
         ), o AS (
             INSERT INTO outbox (kind, at, body)
             SELECT k, $2, b::jsonb FROM unnest($8::text[], $9::text[]) AS v(k, b)
         ), k AS (
             UPDATE codes SET coupon_id = v.id
             FROM unnest($13::text[], $14::bigint[]) AS v(code, id) WHERE codes.code = v.code
         )
         UPDATE claim_keys k SET coupon_id = v.id
         FROM unnest($10::text[], $11::bigint[]) AS v(key, id) WHERE k.key = v.key",
    )
    .bind(template.get())
    .bind(dt(now))
    .bind(&ids)
    .bind(&users)
    .bind(&froms)
    .bind(&untils)
    .bind(&actors)
    .bind(&kinds)
    .bind(&bodies)
    .bind(&key_names)
    .bind(&key_ids)
    .bind(&coupon_codes)
    .bind(&taken_codes)
    .bind(&taken_ids)
    .bind(&jobs)
    .bind(&channels)
    .bind(&sources)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(coupons)
}

/// Takes an idempotency key for a claim about to be made. `None`: the key is new (and now
/// held by this transaction; a concurrent transaction with the same key waits for it).
/// `Some(outcome)`: the key was used before.
async fn claim_key(
    tx: &mut Tx,
    k: &IdempotencyKey,
    now: Timestamp,
) -> StoreResult<Option<ClaimOutcome>> {
    let inserted = sqlx::query(
        "INSERT INTO claim_keys (key, fingerprint, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO NOTHING",
    )
    .bind(&k.key)
    .bind(&k.fingerprint[..])
    .bind(dt(now))
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    if inserted.rows_affected() == 1 {
        return Ok(None);
    }
    shared::earlier_claim(&mut ConnExec(tx), k).await
}

impl PgDb {
    /// The claim batch ([`ClaimStore::claim_batch`]).
    pub(crate) async fn claim_batch_tx(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>> {
        let start = self.shard_start();
        let modes: &[bool] = if plain::fits(claims) {
            match self.claim_plain(template, claims, now, start).await? {
                Some(out) => return Ok(out),
                None => &[true],
            }
        } else {
            &[false, true]
        };
        for &exact in modes {
            let mut tx = self.pool.begin().await.map_err(db_err)?;
            if let Attempt::Done(out) =
                attempt(&mut tx, template, claims, now, exact, start).await?
            {
                coupond_store::failpoints::hit("claim.before_commit")?;
                tx.commit().await.map_err(db_err)?;
                return Ok(out);
            }
            // Now, not when the pool next sees the connection: the exact try would wait on
            // this one's locks (its per-user counters) until then.
            tx.rollback().await.map_err(db_err)?;
        }
        Err(StoreError::other("stock changed under the shards' locks"))
    }
}
