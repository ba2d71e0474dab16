//! Checkout ([`CheckoutStore`](coupond_store::CheckoutStore)) on every backend: the order
//! reads, confirm (with its amount verification), cancel and the lock sweeper, and the lock
//! step's reads and writes once the order is claimed; log rows and outbox events with each.
//!
//! How a lock claims its order id is [`Backend::lock_order`](crate::Backend::lock_order):
//! where writers run at once, [`lock_order_first`] inserts it first, so a concurrent lock of the
//! same order waits on the row; SQLite, the one writer, reads it and inserts the order last,
//! calling [`order_row`], [`replayed`] and [`lock_coupons`] for the rest. Confirming, with its
//! amount verification, is `confirm`.
//!
//! Where writers run at once (PostgreSQL) every step first locks what it depends on, through
//! [`Dialect::lock_rows`](crate::Dialect::lock_rows) (nothing on SQLite, whose one writer
//! excludes the others):
//!
//! - the order row (`FOR UPDATE`): a lock's insert, a confirm, a cancel and the sweeper take
//!   turns on it, and each re-reads the state after the wait, so a lock ends exactly once; the
//!   sweeper passes over orders another transaction holds (`SKIP LOCKED`);
//! - the coupons (`FOR UPDATE`, by id): two orders locking one coupon take turns, and the
//!   second sees it locked;
//! - the templates (`FOR NO KEY UPDATE`, by id, last): budget reservations are exact. Claims
//!   lock the template row last too, and no step here touches per-user counters, so the two
//!   never wait on each other in opposite orders.

use std::collections::BTreeMap;

use coupond_domain::checkout::Reason;
use coupond_domain::{
    Actor, Coupon, CouponId, CouponStatus, Money, OrderId, Template, TemplateId, Timestamp, UserId,
};
use coupond_store::checkout::{
    LockOutcome, LockRefusal, LockRequest, LockRules, OrderRecord, OrderState, OrderStep,
};
use coupond_store::events::{self, kind};
use coupond_store::{StoreError, StoreResult};

use crate::rows::{coupon as coupon_row, order as order_record, template as template_row};
use crate::scheduling::emit;
use crate::{sql, Db, Dialect, Exec, Json, Query, Work};

mod confirm;
pub use confirm::confirm_order;

/// An order's columns but its request fingerprint (read only by [`order_row`]).
pub const ORDER_COLS: &str = "order_id, user_id, state, deadline, answer, created_at, ended_at";

/// The coupons with these ids that exist, by id.
pub async fn coupons_by_ids(db: &dyn Db, ids: &[CouponId]) -> StoreResult<Vec<Coupon>> {
    let ids: Vec<i64> = ids.iter().map(|c| c.get()).collect();
    let q = sql(format!(
        "SELECT * FROM coupons WHERE {} ORDER BY id",
        db.dialect().in_list("id", 1)
    ))
    .bind(ids);
    db.read_all(q).await?.iter().map(coupon_row).collect()
}

/// The templates with these ids that exist, by id.
pub async fn templates_by_ids(db: &dyn Db, ids: &[TemplateId]) -> StoreResult<Vec<Template>> {
    let ids: Vec<i64> = ids.iter().map(|t| t.get()).collect();
    let q = sql(format!(
        "SELECT {} FROM templates WHERE {} ORDER BY id",
        db.dialect().template_columns(),
        db.dialect().in_list("id", 1)
    ))
    .bind(ids);
    db.read_all(q).await?.iter().map(template_row).collect()
}

pub async fn order(db: &dyn Db, order: &OrderId) -> StoreResult<OrderRecord> {
    let q = sql(format!(
        "SELECT {ORDER_COLS} FROM orders WHERE order_id = $1"
    ))
    .bind(order.as_str());
    order_record(&db.read_one(q).await?)
}

/// How many orders of `user` were confirmed (a refund keeps an order confirmed), with or
/// without a coupon, or hold a lock: an order already placed is not a first order.
pub async fn confirmed_orders(db: &dyn Db, user: &UserId) -> StoreResult<u64> {
    let q = sql(
        "SELECT COUNT(*) AS n FROM orders WHERE user_id = $1 AND state IN ('locked', 'confirmed')",
    )
    .bind(user.as_str());
    let n = db.read_one(q).await?.i64("n")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The coupons an order holds or used, by id.
pub async fn order_coupons(db: &dyn Db, order: &OrderId) -> StoreResult<Vec<Coupon>> {
    let q = sql("SELECT * FROM coupons WHERE order_id = $1 ORDER BY id").bind(order.as_str());
    db.read_all(q).await?.iter().map(coupon_row).collect()
}

/// The order and its request fingerprint, in the caller's transaction; `lock` takes the row
/// lock where writers run at once.
pub async fn order_row<E: Exec + ?Sized>(
    ex: &mut E,
    d: Dialect,
    order: &OrderId,
    lock: bool,
) -> StoreResult<Option<(OrderRecord, Vec<u8>)>> {
    let lock = if lock { d.lock_rows(false) } else { "" };
    let q = sql(format!(
        "SELECT {ORDER_COLS}, fingerprint FROM orders WHERE order_id = $1{lock}"
    ))
    .bind(order.as_str());
    let Some(r) = ex.fetch_optional(q).await? else {
        return Ok(None);
    };
    Ok(Some((order_record(&r)?, r.bytes("fingerprint")?.to_vec())))
}

/// What a lock of an order id seen before answers: the order as it is for the same request,
/// a conflict for another.
pub fn replayed(
    (record, fingerprint): (OrderRecord, Vec<u8>),
    req: &LockRequest<'_>,
) -> LockOutcome {
    if fingerprint == req.fingerprint {
        LockOutcome::Replayed(record)
    } else {
        LockOutcome::OrderConflict
    }
}

/// The lock step once its order id is claimed, in the caller's transaction: reads the
/// requested coupons and their templates (locked), asks `rules`, and if they agree locks the
/// coupons for the order with their planned discounts (log rows, `coupon.locked` events) and
/// reserves those against the templates. The answer to record with the order, or the refusal
/// (nothing written: the caller drops the transaction).
pub async fn lock_coupons<E: Exec + ?Sized>(
    ex: &mut E,
    db: &dyn Db,
    req: &LockRequest<'_>,
    rules: &LockRules<'_>,
) -> StoreResult<Result<Locked, LockRefusal>> {
    let d = db.dialect();
    let ids: Vec<i64> = req.coupons.iter().map(|c| c.get()).collect();
    let q = sql(format!(
        "SELECT * FROM coupons WHERE {} ORDER BY id{}",
        d.in_list("id", 1),
        d.lock_rows(false)
    ))
    .bind(ids);
    let coupons = ex
        .fetch_all(q)
        .await?
        .iter()
        .map(coupon_row)
        .collect::<StoreResult<Vec<_>>>()?;
    let mut template_ids: Vec<i64> = coupons.iter().map(|c| c.template_id.get()).collect();
    template_ids.sort_unstable();
    template_ids.dedup();
    let templates = templates_locked(ex, db, template_ids).await?;
    let plan = match rules(&coupons, &templates) {
        Ok(plan) => plan,
        Err(refusal) => return Ok(Err(refusal)),
    };
    if let Some(refusal) = past_use_limits(ex, req, &coupons, &templates).await? {
        return Ok(Err(refusal));
    }
    let deadline = plan.deadline.map_or(req.deadline, |d| d.min(req.deadline));
    let discount = plan.discounts.iter().map(|(_, d)| d.minor()).sum();
    let mut reserve: BTreeMap<TemplateId, i64> = BTreeMap::new();
    for (id, discount) in &plan.discounts {
        let c = coupons
            .iter()
            .find(|c| c.id == *id)
            .ok_or_else(|| StoreError::other("the plan names a coupon not asked for"))?;
        lock_coupon(ex, req, c, *discount, deadline).await?;
        *reserve.entry(c.template_id).or_default() += discount.minor();
    }
    for (t, d) in reserve {
        ex.execute(
            sql("UPDATE templates SET reserved = reserved + $1 WHERE id = $2")
                .bind(d)
                .bind(t.get()),
        )
        .await?;
    }
    Ok(Ok(Locked {
        answer: plan.answer,
        discount,
        deadline,
    }))
}

/// The coupons of each template whose use limits this lock would pass, refused with
/// `use_limit_reached`: the user's uses of the template in each local period are the coupons
/// locked or used by its orders taken since the period began. Counted after the templates'
/// row locks, so two locks of one user's coupons of a template wait on each other and the
/// second counts the first (READ COMMITTED where writers run at once: each count sees what
/// committed before it).
async fn past_use_limits<E: Exec + ?Sized>(
    ex: &mut E,
    req: &LockRequest<'_>,
    coupons: &[Coupon],
    templates: &[Template],
) -> StoreResult<Option<LockRefusal>> {
    let mut refused = Vec::new();
    for t in templates.iter().filter(|t| !t.spec.use_limits.is_empty()) {
        let asked: Vec<CouponId> = coupons
            .iter()
            .filter(|c| c.template_id == t.id)
            .map(|c| c.id)
            .collect();
        for limit in &t.spec.use_limits {
            let since = limit.period.start(req.now, req.zone).ok_or_else(|| {
                StoreError::other("the use limit's period has no start in the platform's zone")
            })?;
            // A lock past its deadline that the sweeper has not ended yet is no use.
            let q = sql(
                "SELECT COUNT(*) AS n FROM coupons c JOIN orders o ON o.order_id = c.order_id
                 WHERE c.template_id = $1 AND c.user_id = $2 AND o.created_at >= $3
                   AND (c.status = 'used' OR (c.status = 'locked' AND c.locked_until > $4))",
            )
            .bind(t.id.get())
            .bind(req.user.as_str())
            .bind(since)
            .bind(req.now);
            let used = u64::try_from(ex.fetch_one(q).await?.i64("n")?).unwrap_or(0);
            if !limit.allows(used, asked.len() as u64) {
                refused.extend(asked.iter().map(|id| (*id, vec![Reason::UseLimitReached])));
                break;
            }
        }
    }
    Ok((!refused.is_empty()).then_some(LockRefusal { coupons: refused }))
}

/// What a lock decided: the answer to keep for retries, the discount its coupons take, and
/// its deadline (the one asked for, or the rules' earlier one).
#[derive(Debug)]
pub struct Locked {
    pub answer: serde_json::Value,
    pub discount: i64,
    pub deadline: Timestamp,
}

/// The order's value, set with the lock's answer: `$1` the answer, `$2` the order id, then
/// subtotal, discount, currency and deadline (see [`bind_value`]).
pub const SET_ANSWER_AND_VALUE: &str =
    "UPDATE orders SET answer = $1, subtotal = $3, discount = $4, currency = $5, deadline = $6
     WHERE order_id = $2";

/// A checkout lock where writers run at once (PostgreSQL, MySQL): the order id is claimed
/// first, so a concurrent lock of the same order waits on that row and then finds it; then the
/// coupons are locked, and the rules' answer and the order's value recorded on the order last.
pub async fn lock_order_first(
    db: &dyn Db,
    req: &LockRequest<'_>,
    rules: &LockRules<'_>,
) -> StoreResult<LockOutcome> {
    let d = db.dialect();
    let mut tx = db.begin(Work::Request).await?;
    let claim = sql(format!(
        "INSERT INTO orders (order_id, user_id, state, fingerprint, deadline, answer, created_at)
         VALUES ($1, $2, 'locked', $3, $4, '{{}}', $5){}",
        d.on_conflict_nothing("order_id")
    ))
    .bind(req.order_id.as_str())
    .bind(req.user.as_str())
    .bind(&req.fingerprint[..])
    .bind(req.deadline)
    .bind(req.now);
    if tx.execute(claim).await? == 0 {
        let seen = order_row(&mut *tx, d, req.order_id, false)
            .await?
            .ok_or_else(|| StoreError::other("an order vanished"))?;
        return Ok(replayed(seen, req));
    }
    let locked = match lock_coupons(&mut *tx, db, req, rules).await? {
        Ok(locked) => locked,
        Err(refusal) => return Ok(LockOutcome::Refused(refusal)),
    };
    // PostgreSQL reads the order back with the update; MySQL has no `RETURNING` on an update
    // of `orders` (no integer id for the shared layer's stand-in), so it reads it after.
    let returning = match d {
        Dialect::Mysql => String::new(),
        _ => format!(" RETURNING {ORDER_COLS}"),
    };
    let answer = sql(format!("{SET_ANSWER_AND_VALUE}{returning}"))
        .bind(Json(locked.answer.to_string()))
        .bind(req.order_id.as_str());
    let answer = bind_value(answer, req, &locked);
    let row = if returning.is_empty() {
        tx.execute(answer).await?;
        let q = sql(format!(
            "SELECT {ORDER_COLS} FROM orders WHERE order_id = $1"
        ));
        tx.fetch_one(q.bind(req.order_id.as_str())).await?
    } else {
        tx.fetch_one(answer).await?
    };
    let record = order_record(&row)?;
    tx.commit().await?;
    Ok(LockOutcome::Locked(record))
}

/// Binds the order's value as `SET_ANSWER_AND_VALUE`'s `$3` to `$6`.
pub fn bind_value(q: Query, req: &LockRequest<'_>, locked: &Locked) -> Query {
    q.bind(req.subtotal.minor())
        .bind(locked.discount)
        .bind(req.currency)
        .bind(locked.deadline)
}

/// Locks coupon `c` for the lock `req` until `deadline` with its `discount`, its log row and
/// event.
async fn lock_coupon<E: Exec + ?Sized>(
    ex: &mut E,
    req: &LockRequest<'_>,
    c: &Coupon,
    discount: Money,
    deadline: Timestamp,
) -> StoreResult<()> {
    let locked = ex
        .execute(
            sql(
                "UPDATE coupons SET status = 'locked', order_id = $1, locked_until = $2,
                     discount = $3, updated_at = $4
                 WHERE id = $5 AND status = 'unused' AND user_id = $6",
            )
            .bind(req.order_id.as_str())
            .bind(deadline)
            .bind(discount.minor())
            .bind(req.now)
            .bind(c.id.get())
            .bind(req.user.as_str()),
        )
        .await?;
    if locked != 1 {
        return Err(StoreError::other(
            "a coupon the rules accepted is not an unused coupon of the user",
        ));
    }
    let (from, to) = (CouponStatus::Unused, CouponStatus::Locked);
    log_change(ex, c.id, from, to, req.order_id, req.actor, req.now).await?;
    let body = events::coupon_order(c, req.order_id, discount, None);
    emit(ex, kind::COUPON_LOCKED, req.now, body).await
}

/// Templates `ids` (sorted), locked `FOR NO KEY UPDATE` where writers run at once, by id.
pub(crate) async fn templates_locked<E: Exec + ?Sized>(
    ex: &mut E,
    db: &dyn Db,
    ids: Vec<i64>,
) -> StoreResult<Vec<Template>> {
    let d = db.dialect();
    let q = sql(format!(
        "SELECT {} FROM templates WHERE {} ORDER BY id{}",
        db.dialect().template_columns(),
        d.in_list("id", 1),
        d.lock_rows(true)
    ))
    .bind(ids);
    ex.fetch_all(q).await?.iter().map(template_row).collect()
}

/// The coupons order `order` holds, locked, by id.
async fn held_by<E: Exec + ?Sized>(
    ex: &mut E,
    d: Dialect,
    order: &OrderId,
) -> StoreResult<Vec<Coupon>> {
    let q = sql(format!(
        "SELECT * FROM {} WHERE order_id = $1 AND status = 'locked' ORDER BY id{}",
        d.coupons_of_order(),
        d.lock_rows(false)
    ))
    .bind(order.as_str());
    ex.fetch_all(q).await?.iter().map(coupon_row).collect()
}

/// Cancels a locked order (past its deadline, finds it expired and ends it so).
pub async fn cancel_order(
    db: &dyn Db,
    order: &OrderId,
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<OrderStep> {
    let d = db.dialect();
    let mut tx = db.begin(Work::Request).await?;
    let (record, _) = order_row(&mut *tx, d, order, true)
        .await?
        .ok_or(StoreError::NotFound)?;
    let step = match record.state {
        OrderState::Confirmed => OrderStep::WrongState(record),
        OrderState::Cancelled | OrderState::Expired => OrderStep::Already(record),
        // Past the deadline the lock has ended by itself; the cancel finds it so.
        OrderState::Locked if now >= record.deadline => {
            OrderStep::Already(expire(&mut *tx, d, &record, now).await?)
        }
        OrderState::Locked => {
            OrderStep::Done(release(&mut *tx, d, &record, OrderState::Cancelled, actor, now).await?)
        }
    };
    tx.commit().await?;
    Ok(step)
}

/// Ends as expired up to `limit` locks due at `now`; their order ids.
pub async fn expire_locks(db: &dyn Db, now: Timestamp, limit: u32) -> StoreResult<Vec<OrderId>> {
    let d = db.dialect();
    let mut tx = db.begin(Work::Request).await?;
    // Orders another instance (or a confirm) is working on are skipped, not waited for:
    // whoever holds one ends it, and the next sweep finds it ended. MySQL would keep the
    // locks a skipping scan of the deadline index took on the skipped orders' index entries
    // (which a confirm then needs): there each due order is locked by its key instead.
    let each = d == Dialect::Mysql;
    let q = sql(format!(
        "SELECT order_id FROM orders WHERE state = 'locked' AND deadline <= $1
         ORDER BY deadline LIMIT $2{}",
        if each { "" } else { d.lock_rows_skip_locked() }
    ))
    .bind(now)
    .bind(i64::from(limit));
    let due = tx.fetch_all(q).await?;
    let mut ended = Vec::with_capacity(due.len());
    for r in due {
        let id = OrderId::parse(r.str("order_id")?).map_err(StoreError::other)?;
        if each {
            let q = sql(format!(
                "SELECT order_id FROM orders WHERE order_id = $1 AND state = 'locked'{}",
                d.lock_rows_skip_locked()
            ));
            if tx.fetch_optional(q.bind(id.as_str())).await?.is_none() {
                continue;
            }
        }
        if let Some((record, _)) = order_row(&mut *tx, d, &id, false).await? {
            expire(&mut *tx, d, &record, now).await?;
            ended.push(id);
        }
    }
    if !ended.is_empty() {
        coupond_store::failpoints::hit("sweeper.before_commit")?;
    }
    tx.commit().await?;
    Ok(ended)
}

/// Ends a lock past its deadline: as [`release`] into `expired`, by coupond itself (the
/// sweeper, or a confirm, cancel or extension that finds the deadline passed).
pub(crate) async fn expire<E: Exec + ?Sized>(
    ex: &mut E,
    d: Dialect,
    record: &OrderRecord,
    now: Timestamp,
) -> StoreResult<OrderRecord> {
    release(ex, d, record, OrderState::Expired, &Actor::System, now).await
}

/// Gives an order's coupons back (unused, or expired if their validity ended meanwhile) and
/// their reservations, and ends the order in `state`. The caller holds the order row.
pub(crate) async fn release<E: Exec + ?Sized>(
    ex: &mut E,
    d: Dialect,
    record: &OrderRecord,
    state: OrderState,
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<OrderRecord> {
    let order = &record.order_id;
    let held = held_by(ex, d, order).await?;
    let mut give_back: BTreeMap<TemplateId, i64> = BTreeMap::new();
    for c in &held {
        *give_back.entry(c.template_id).or_default() += c.discount.map_or(0, Money::minor);
        let to = if c.valid_until <= now {
            CouponStatus::Expired
        } else {
            CouponStatus::Unused
        };
        ex.execute(
            sql(
                "UPDATE coupons SET status = $1, order_id = NULL, locked_until = NULL,
                     discount = NULL, updated_at = $2
                 WHERE id = $3",
            )
            .bind(to.as_str())
            .bind(now)
            .bind(c.id.get()),
        )
        .await?;
        log_change(ex, c.id, CouponStatus::Locked, to, order, actor, now).await?;
        let body = events::coupon_order(c, order, Money::ZERO, Some(to));
        emit(ex, kind::COUPON_RELEASED, now, body).await?;
    }
    let lock = d.lock_rows(true);
    if !lock.is_empty() {
        let ids: Vec<i64> = give_back.keys().map(|t| t.get()).collect();
        let q = sql(format!(
            "SELECT id FROM templates WHERE {} ORDER BY id{lock}",
            d.in_list("id", 1)
        ))
        .bind(ids);
        ex.fetch_all(q).await?;
    }
    for (t, g) in give_back {
        ex.execute(
            sql("UPDATE templates SET reserved = reserved - $1 WHERE id = $2")
                .bind(g)
                .bind(t.get()),
        )
        .await?;
    }
    end_order(ex, d, order, state, now).await
}

/// Ends locked order `order` in `state`.
async fn end_order<E: Exec + ?Sized>(
    ex: &mut E,
    d: Dialect,
    order: &OrderId,
    state: OrderState,
    now: Timestamp,
) -> StoreResult<OrderRecord> {
    let left = || StoreError::other("the order left `locked` while this transaction held it");
    let update = "UPDATE orders SET state = $1, ended_at = $2
                  WHERE order_id = $3 AND state = 'locked'";
    let q = |text: String| {
        sql(text)
            .bind(state.as_str())
            .bind(now)
            .bind(order.as_str())
    };
    let row = if d == Dialect::Mysql {
        // No `RETURNING`, and orders have no integer id to read one back by: read it after.
        if ex.execute(q(update.to_owned())).await? != 1 {
            return Err(left());
        }
        let read = sql(format!(
            "SELECT {ORDER_COLS} FROM orders WHERE order_id = $1"
        ));
        ex.fetch_one(read.bind(order.as_str())).await?
    } else {
        let text = format!("{update} RETURNING {ORDER_COLS}");
        ex.fetch_optional(q(text)).await?.ok_or_else(left)?
    };
    order_record(&row)
}

/// A coupon's log row for a checkout step of `order`.
async fn log_change<E: Exec + ?Sized>(
    ex: &mut E,
    coupon: CouponId,
    from: CouponStatus,
    to: CouponStatus,
    order: &OrderId,
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<()> {
    let entry = LogEntry {
        coupon,
        from,
        to,
        order: Some(order),
        actor,
        reason: None,
        now,
    };
    log_coupon(ex, &entry).await
}

/// A row of a coupon's operation log, for a change of an existing coupon.
pub(crate) struct LogEntry<'a> {
    pub coupon: CouponId,
    pub from: CouponStatus,
    pub to: CouponStatus,
    pub order: Option<&'a OrderId>,
    pub actor: &'a Actor,
    /// Why, when a person said so (a revoke, a refund).
    pub reason: Option<&'a str>,
    pub now: Timestamp,
}

pub(crate) async fn log_coupon<E: Exec + ?Sized>(ex: &mut E, e: &LogEntry<'_>) -> StoreResult<()> {
    ex.execute(
        sql(
            "INSERT INTO coupon_events (coupon_id, from_status, to_status, order_id, actor,
                 reason, at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(e.coupon.get())
        .bind(e.from.as_str())
        .bind(e.to.as_str())
        .bind(e.order.map(OrderId::as_str))
        .bind(e.actor.to_text())
        .bind(e.reason)
        .bind(e.now),
    )
    .await?;
    Ok(())
}
