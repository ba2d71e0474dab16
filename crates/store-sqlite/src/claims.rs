//! Claims on SQLite: a whole batch in one `BEGIN IMMEDIATE` transaction, run start to finish
//! on the claim writer's thread (`writer`): one hop per batch, each statement prepared once
//! and cached, the batch's rows written by multi-row statements in a few sizes (`batch`).
//!
//! Inside `BEGIN IMMEDIATE` this transaction is the only writer until it commits, so what it
//! reads (remaining stock, the next coupon id) stays true for the whole batch. The stock
//! update is still conditional, so the database, not this arithmetic, has the last word on I1.
//!
//! The wallet's reads are written once in `coupond_store_sql::wallet`; a page of a user's
//! coupons is read on a wallet reader's thread (`threads`) and decoded there.

use std::collections::{HashMap, HashSet};

use rusqlite::types::Value as Sql;
use rusqlite::{params, Connection, OptionalExtension};

use coupond_domain::{Coupon, CouponId, TemplateId, Timestamp};
use coupond_store::events::{self, kind};
use coupond_store::{ClaimOutcome, ClaimRequest, IdempotencyKey, StoreError, StoreResult};
use coupond_store_sql::claims::{self as shared, single_use};
use coupond_store_sql::{tags, Exec};

use crate::batch;
use crate::rows;
use crate::store::us;
use crate::writer::{arg, now_or_never, sql_err, RawExec};

/// What the batch reads of its template first.
struct Head {
    total_stock: i64,
    remaining: i64,
    limit: i64,
    tagged: bool,
    claimable: bool,
}

fn head(c: &Connection, template: TemplateId, now: Timestamp) -> StoreResult<Head> {
    let q = format!(
        "SELECT total_stock, total_stock - claimed, per_user_limit, {},
                ({} AND claim_start <= ?1 AND ?1 < claim_end)
         FROM templates WHERE id = ?2",
        tags::TAGGED_COLUMN,
        coupond_store_sql::catalog::CLAIMING
    );
    let mut st = c.prepare_cached(&q).map_err(sql_err)?;
    st.query_row(params![us(now), template.get()], |r| {
        Ok(Head {
            total_stock: r.get(0)?,
            remaining: r.get(1)?,
            limit: r.get(2)?,
            tagged: r.get::<_, i64>(3)? > 0,
            claimable: r.get::<_, i64>(4)? != 0,
        })
    })
    .map_err(sql_err)
}

/// The claim batch inside the caller's write transaction (which commits it). A template that
/// is not claimable at `now` gets no writes.
pub(crate) fn claim_in(
    c: &mut Connection,
    template: TemplateId,
    claims: &[ClaimRequest],
    now: Timestamp,
) -> StoreResult<Vec<ClaimOutcome>> {
    let head = head(c, template, now)?;
    if !head.claimable {
        return now_or_never(shared::not_claimable(&mut RawExec(c), template, claims));
    }
    let mut out: Vec<Option<ClaimOutcome>> = vec![None; claims.len()];

    // 1. Idempotency keys: retries get their earlier answer; new keys are taken.
    for (i, cl) in claims.iter().enumerate() {
        if let Some(k) = &cl.idempotency {
            out[i] = claim_key(c, k, now)?;
        }
    }
    // 2. Single-use codes: taken now, given back below if the claim is refused.
    for (i, cl) in claims.iter().enumerate() {
        if let (None, Some(code)) = (&out[i], single_use(cl)) {
            out[i] = now_or_never(shared::take_code(&mut RawExec(c), template, code, cl, now))?;
        }
    }
    // 2b. A tag audience: claimants holding none of its tags are not eligible.
    if head.tagged {
        refuse_untagged(c, template, claims, &mut out)?;
    }

    // 3. Per-user counters.
    let candidates: Vec<usize> = (0..claims.len()).filter(|i| out[*i].is_none()).collect();
    let holds = take_slots(c, template, claims, &candidates, head.limit)?;

    // 4. Stock, first come first served; refused claims give back what they took.
    let (mut granted, mut refused) = (Vec::new(), Vec::new());
    for i in candidates {
        let cl = &claims[i];
        let outcome = if !holds[i] {
            ClaimOutcome::LimitReached
        } else if (granted.len() as i64) < head.remaining {
            granted.push(i);
            continue;
        } else {
            c.prepare_cached("UPDATE holdings SET n = n - 1 WHERE template_id = ? AND user_id = ?")
                .and_then(|mut st| st.execute(params![template.get(), cl.user.as_str()]))
                .map_err(sql_err)?;
            ClaimOutcome::SoldOut
        };
        refused.push(i);
        out[i] = Some(outcome);
    }
    now_or_never(shared::forget(&mut RawExec(c), claims, &refused))?;

    // 5. Coupons, their log rows and events, then the stock.
    if !granted.is_empty() {
        for (coupon, i) in insert_coupons(c, template, claims, &granted, now)? {
            out[i] = Some(ClaimOutcome::Issued(coupon));
        }
        take_stock(c, template, &head, granted.len() as i64, now)?;
    }
    out.into_iter()
        .map(|o| o.ok_or_else(|| StoreError::other("claim without an outcome")))
        .collect()
}

/// Raises the template's claimed count by `n` (the coupons just written), with the
/// `template.sold_out` event if that was the last of the stock.
fn take_stock(
    c: &Connection,
    template: TemplateId,
    head: &Head,
    n: i64,
    now: Timestamp,
) -> StoreResult<()> {
    // Coupons written, stock not yet raised: a fault here must leave neither.
    coupond_store::failpoints::hit("claim.mid_batch")?;
    let raised = c
        .prepare_cached(
            "UPDATE templates SET claimed = claimed + ?1
             WHERE id = ?2 AND claimed + ?1 <= total_stock",
        )
        .and_then(|mut st| st.execute(params![n, template.get()]))
        .map_err(sql_err)?;
    if raised != 1 {
        return Err(StoreError::other(
            "stock changed inside a write transaction",
        ));
    }
    coupond_store::failpoints::hit("claim.stock_taken")?;
    if n == head.remaining {
        c.prepare_cached("INSERT INTO outbox (kind, at, body) VALUES (?, ?, ?)")
            .and_then(|mut st| {
                st.execute(params![
                    kind::TEMPLATE_SOLD_OUT,
                    us(now),
                    events::template_sold_out(template, head.total_stock)
                ])
            })
            .map_err(sql_err)?;
    }
    Ok(())
}

/// Answers `not_eligible` to the claims still open whose user holds none of the template's
/// audience tags (read in this transaction); they record no key and leave their code free.
fn refuse_untagged(
    c: &mut Connection,
    template: TemplateId,
    claims: &[ClaimRequest],
    out: &mut [Option<ClaimOutcome>],
) -> StoreResult<()> {
    let (open, users) = tags::open_claimants(claims, out);
    let rows = now_or_never(RawExec(c).fetch_all(tags::tagged_claimants(template, &users)))?;
    let refused = tags::refuse_untagged(claims, out, open, &rows)?;
    now_or_never(shared::forget(&mut RawExec(c), claims, &refused))
}

/// Takes a per-user slot for each candidate claim; `true` where one was free. Users appearing
/// once take theirs in multi-row upserts that return the users they counted; a user appearing
/// several times goes one claim at a time, in arrival order, so the limit counts earlier
/// claims of the batch.
fn take_slots(
    c: &Connection,
    template: TemplateId,
    claims: &[ClaimRequest],
    candidates: &[usize],
    limit: i64,
) -> StoreResult<Vec<bool>> {
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(candidates.len());
    for &i in candidates {
        *seen.entry(claims[i].user.as_str()).or_insert(0) += 1;
    }
    let (single, repeated): (Vec<usize>, Vec<usize>) = candidates
        .iter()
        .partition(|i| seen[claims[**i].user.as_str()] == 1);
    let values: Vec<Sql> = single
        .iter()
        .flat_map(|&i| {
            [
                Sql::Integer(template.get()),
                Sql::Text(claims[i].user.as_str().to_owned()),
            ]
        })
        .collect();
    let shape = (
        "INSERT INTO holdings (template_id, user_id, n)",
        "(?, ?, 1)",
        "ON CONFLICT (template_id, user_id) DO UPDATE SET n = n + 1 WHERE n < ? \
         RETURNING user_id",
    );
    let mut counted: HashSet<String> = HashSet::with_capacity(single.len());
    batch::insert_returning(c, shape, 2, &values, &[Sql::Integer(limit)], |r| {
        counted.insert(r.get(0)?);
        Ok(())
    })?;
    let mut holds = vec![false; claims.len()];
    for i in single {
        holds[i] = counted.contains(claims[i].user.as_str());
    }
    for i in repeated {
        holds[i] = take_slot(c, template, &claims[i], limit)?;
    }
    Ok(holds)
}

/// Takes a per-user slot for a claim; `false` if the user is at `limit`.
fn take_slot(
    c: &Connection,
    template: TemplateId,
    cl: &ClaimRequest,
    limit: i64,
) -> StoreResult<bool> {
    let mut st = c
        .prepare_cached(
            "INSERT INTO holdings (template_id, user_id, n) VALUES (?1, ?2, 1)
             ON CONFLICT (template_id, user_id) DO UPDATE SET n = n + 1 WHERE n < ?3
             RETURNING n",
        )
        .map_err(sql_err)?;
    let held = st
        .query_row(params![template.get(), cl.user.as_str(), limit], |r| {
            r.get::<_, i64>(0)
        })
        .optional()
        .map_err(sql_err)?;
    Ok(held.is_some())
}

/// Inserts the coupons of `granted` claims, with one operation-log row and one
/// `coupon.claimed` event each; each coupon with its claim's index. Ids are handed out here:
/// inside `BEGIN IMMEDIATE` this transaction is the only writer, so `max(id) + 1..` is free.
fn insert_coupons(
    c: &mut Connection,
    template: TemplateId,
    claims: &[ClaimRequest],
    granted: &[usize],
    now: Timestamp,
) -> StoreResult<Vec<(Coupon, usize)>> {
    let first_id: i64 = c
        .prepare_cached("SELECT COALESCE(MAX(id), 0) + 1 FROM coupons")
        .and_then(|mut st| st.query_row([], |r| r.get(0)))
        .map_err(sql_err)?;
    let n = granted.len();
    let (mut coupons, mut log, mut events) = (
        Vec::with_capacity(n * 11),
        Vec::with_capacity(n * 3),
        Vec::with_capacity(n * 3),
    );
    let mut out = Vec::with_capacity(n);
    for (k, &i) in granted.iter().enumerate() {
        let r = &claims[i];
        let id = CouponId::new(first_id + k as i64).map_err(StoreError::other)?;
        let coupon = r.coupon(id, template, now);
        let id = Sql::Integer(coupon.id.get());
        coupons.extend([
            id.clone(),
            Sql::Integer(template.get()),
            Sql::Text(coupon.user_id.as_str().to_owned()),
            Sql::Integer(us(now)),
            Sql::Integer(us(coupon.valid_from)),
            Sql::Integer(us(coupon.valid_until)),
            Sql::Integer(us(now)),
            coupon.code.clone().map_or(Sql::Null, Sql::Text),
            r.issuance.map_or(Sql::Null, Sql::Integer),
            Sql::Text(r.channel.to_text()),
            r.source
                .as_ref()
                .map_or(Sql::Null, |s| Sql::Text(s.as_str().to_owned())),
        ]);
        log.extend([id, Sql::Text(r.actor.to_text()), Sql::Integer(us(now))]);
        let (kind, body) = events::coupon_claimed(&coupon, &r.actor, r.issuance);
        events.extend([
            Sql::Text(kind.to_owned()),
            Sql::Integer(us(now)),
            Sql::Text(body),
        ]);
        out.push((coupon, i));
    }
    let shape = (
        "INSERT INTO coupons (id, template_id, user_id, claimed_at, valid_from, valid_until, \
         updated_at, code, issuance_id, channel, source)",
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "",
    );
    batch::insert(c, shape, 11, &coupons)?;
    let shape = (
        "INSERT INTO coupon_events (coupon_id, to_status, actor, at)",
        "(?, 'unused', ?, ?)",
        "",
    );
    batch::insert(c, shape, 3, &log)?;
    batch::insert(
        c,
        ("INSERT INTO outbox (kind, at, body)", "(?, ?, ?)", ""),
        3,
        &events,
    )?;
    for (coupon, i) in &out {
        now_or_never(shared::link(&mut RawExec(c), &claims[*i], coupon.id))?;
    }
    Ok(out)
}

/// Takes an idempotency key for a claim about to be made. `None`: the key is new (and now
/// held by this transaction). `Some(outcome)`: the key was used before.
fn claim_key(
    c: &mut Connection,
    k: &IdempotencyKey,
    now: Timestamp,
) -> StoreResult<Option<ClaimOutcome>> {
    let inserted = c
        .prepare_cached(
            "INSERT INTO claim_keys (key, fingerprint, created_at) VALUES (?, ?, ?)
             ON CONFLICT (key) DO NOTHING",
        )
        .and_then(|mut st| st.execute(params![k.key, &k.fingerprint[..], us(now)]))
        .map_err(sql_err)?;
    if inserted == 1 {
        return Ok(None);
    }
    now_or_never(shared::earlier_claim(&mut RawExec(c), k))
}

/// The coupons of the wallet page `page`, read and decoded on `c`, in the page's order.
pub(crate) fn coupons_of(
    c: &mut Connection,
    page: coupond_store_sql::Query,
) -> StoreResult<Vec<Coupon>> {
    let (text, args) = page.into_positional();
    let mut st = c.prepare_cached(&text).map_err(sql_err)?;
    let mut at = [0; 12];
    for (i, name) in rows::COUPON_COLUMNS.iter().enumerate() {
        at[i] = st.column_index(name).map_err(sql_err)?;
    }
    let mut found = st
        .query(rusqlite::params_from_iter(args.into_iter().map(arg)))
        .map_err(sql_err)?;
    let mut coupons = Vec::new();
    while let Some(r) = found.next().map_err(sql_err)? {
        coupons.push(rows::coupon_at(r, &at)?);
    }
    Ok(coupons)
}
