//! The scheduler's reads and writes ([`SchedulerStore`]) and the outbox consumers' leases
//! and progress (the shared part of [`OutboxStore`]), on every backend.
//!
//! Announcing moves a status only from the one the scheduler read, in the transaction that
//! writes its events, so several schedulers may run at once and each transition is announced
//! once. Expiry locks the coupons it reads where writers run at once, passing over those
//! another transaction holds.
//!
//! What [`OutboxStore`] reads (the outbox, in its order) is each backend's own: PostgreSQL
//! orders by transaction with a visibility horizon, SQLite by id. Backends implement it
//! themselves, calling [`try_lease`], [`sink_position`] and [`sink_ack`].
//!
//! [`SchedulerStore`]: coupond_store::SchedulerStore
//! [`OutboxStore`]: coupond_store::OutboxStore

use coupond_domain::{
    Activity, ActivityId, ActivityStatus, Actor, Coupon, Template, TemplateId, TemplateStatus,
    Timestamp, Transition,
};
use coupond_store::events::{self, kind};
use coupond_store::{Event, OutboxPosition, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::campaigns::{activity_row, ACTIVITY_COLS};
use crate::catalog::{template_row, PUBLIC};
use crate::{rows, sql, Db, Dialect, Exec, Json, Work};
use coupond_store::SchedulerStore;

/// Deletes `holder`'s leases: the next `try_lease` of any instance takes them.
pub async fn release_leases(db: &dyn Db, holder: &str) -> StoreResult<u64> {
    db.write(sql("DELETE FROM leases WHERE holder = $1").bind(holder))
        .await
}

/// Takes lease `name` for `holder` until `until` if it is free, expired at `now`, or already
/// `holder`'s; whether `holder` has it.
pub async fn try_lease(
    db: &dyn Db,
    name: &str,
    holder: &str,
    now: Timestamp,
    until: Timestamp,
) -> StoreResult<bool> {
    let (upsert, read) = if db.dialect() == Dialect::Mysql {
        // No conditional upsert: the condition moves into the values (assigned left to
        // right, so `until` follows `holder`), and the holder is read after.
        (
            "INSERT INTO leases (name, holder, until) VALUES ($1, $2, $3)
             ON DUPLICATE KEY UPDATE holder = IF(until <= $4 OR holder = $2, $2, holder),
                 until = IF(holder = $2, $3, until)",
            Some(sql("SELECT holder FROM leases WHERE name = $1").bind(name)),
        )
    } else {
        (
            "INSERT INTO leases (name, holder, until) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET holder = $2, until = $3
                 WHERE leases.until <= $4 OR leases.holder = $2
             RETURNING holder",
            None,
        )
    };
    let q = sql(upsert).bind(name).bind(holder).bind(until).bind(now);
    let mut tx = db.begin(Work::Request).await?;
    let held = match read {
        Some(read) => {
            tx.execute(q).await?;
            tx.fetch_optional(read).await?
        }
        None => tx.fetch_optional(q).await?,
    };
    tx.commit().await?;
    Ok(match held {
        Some(r) => r.str("holder")? == holder,
        None => false,
    })
}

/// Up to `limit` events below id `before`, newest first.
pub async fn outbox_latest(
    db: &dyn Db,
    before: Option<i64>,
    limit: u32,
) -> StoreResult<Vec<Event>> {
    let q = sql("SELECT * FROM outbox WHERE id < $1 ORDER BY id DESC LIMIT $2")
        .bind(before.unwrap_or(i64::MAX))
        .bind(limit);
    db.read_all(q)
        .await?
        .iter()
        .map(crate::inspect::event_row)
        .collect()
}

/// Where consumer `sink` has got to in the outbox (the start if it has not acknowledged).
pub async fn sink_position(db: &dyn Db, sink: &str) -> StoreResult<OutboxPosition> {
    let row = db
        .read_optional(sql("SELECT txid, event_id FROM sink_progress WHERE sink = $1").bind(sink))
        .await?;
    row.map_or(Ok(OutboxPosition::default()), |r| {
        Ok(OutboxPosition {
            txid: r.i64("txid")?,
            event_id: r.i64("event_id")?,
        })
    })
}

/// Records that each consumer has handled the outbox up to its position, in one transaction.
pub async fn sink_ack(db: &dyn Db, acks: &[(&str, OutboxPosition)]) -> StoreResult<()> {
    if acks.is_empty() {
        return Ok(());
    }
    let upsert = format!(
        "INSERT INTO sink_progress (sink, txid, event_id) VALUES ($1, $2, $3){}",
        db.dialect()
            .on_conflict_update("sink", &["txid", "event_id"])
    );
    let mut tx = db.begin(Work::Request).await?;
    for (sink, at) in acks {
        let q = sql(upsert.clone())
            .bind(*sink)
            .bind(at.txid)
            .bind(at.event_id);
        tx.execute(q).await?;
    }
    tx.commit().await
}

/// Activities whose announced status is not final, with it (`None`: none announced yet).
pub async fn unannounced_activities(
    db: &dyn Db,
) -> StoreResult<Vec<(Activity, Option<ActivityStatus>)>> {
    let q = sql(format!(
        "SELECT {ACTIVITY_COLS}, announced FROM activities
         WHERE announced NOT IN ('ended', 'aborted') ORDER BY id"
    ));
    db.read_all(q)
        .await?
        .iter()
        .map(|r| Ok((activity_row(r)?, ActivityStatus::parse(r.str("announced")?))))
        .collect()
}

/// Templates whose status at `now` may have moved past the one announced, with it.
pub async fn due_templates(
    db: &dyn Db,
    now: Timestamp,
    limit: u32,
) -> StoreResult<Vec<(Template, Option<TemplateStatus>)>> {
    // Each branch can use an index; together they are every template whose status moved
    // past the one announced (or that has none announced).
    let q = sql(format!(
        "SELECT {}, announced FROM templates WHERE id IN (
             SELECT id FROM templates WHERE announced IN ('none', 'draft', 'pending_approval', 'rejected')
                 AND ({PUBLIC} OR announced = 'none')
             UNION SELECT id FROM templates WHERE announced = 'scheduled' AND claim_start <= $1
             UNION SELECT id FROM templates WHERE announced = 'active' AND claim_end <= $1
             UNION SELECT id FROM templates WHERE announced = 'ended' AND expires_at <= $1
             UNION SELECT id FROM templates WHERE aborted_at IS NOT NULL
                 AND announced <> 'aborted'
         ) ORDER BY id LIMIT $2",
        db.dialect().template_columns()
    ))
    .bind(now)
    .bind(limit);
    db.read_all(q)
        .await?
        .iter()
        .map(|r| Ok((template_row(r)?, TemplateStatus::parse(r.str("announced")?))))
        .collect()
}

/// Moves the activity's announced status from `from` to the last of `transitions`, emitting
/// an event for each; `false` if another scheduler moved it first.
pub async fn announce_activity(
    db: &dyn Db,
    id: ActivityId,
    from: Option<ActivityStatus>,
    transitions: &[Transition<ActivityStatus>],
) -> StoreResult<bool> {
    let Some(last) = transitions.last() else {
        return Ok(true);
    };
    let mut tx = db.begin(Work::Background).await?;
    let moved = tx
        .execute(
            sql("UPDATE activities SET announced = $1 WHERE id = $2 AND announced = $3")
                .bind(last.to.as_str())
                .bind(id.get())
                .bind(from.map_or("none", ActivityStatus::as_str)),
        )
        .await?;
    if moved != 1 {
        return Ok(false);
    }
    let mut prev = from.map(ActivityStatus::as_str);
    for t in transitions {
        let body = events::status_changed("activity_id", id.get(), prev, t.to.as_str(), t.at);
        emit(&mut *tx, kind::ACTIVITY_STATUS_CHANGED, t.at, body).await?;
        prev = Some(t.to.as_str());
    }
    tx.commit().await?;
    Ok(true)
}

/// As [`announce_activity`], for a template; entering or leaving `active` also tells the
/// listings their coupons changed.
pub async fn announce_template(
    db: &dyn Db,
    id: TemplateId,
    from: Option<TemplateStatus>,
    transitions: &[Transition<TemplateStatus>],
) -> StoreResult<bool> {
    if transitions.is_empty() {
        return Ok(true);
    }
    let mut tx = db.begin(Work::Background).await?;
    if !announce_template_in(&mut *tx, id, from, transitions).await? {
        return Ok(false);
    }
    tx.commit().await?;
    Ok(true)
}

/// Announces `t`'s transitions up to `now` in the caller's transaction (which has just
/// changed it: published, aborted), so its status events come before anything a later
/// transaction writes about it (a claim of it, say), whatever the scheduler does meanwhile.
pub async fn announce_template_now<E: Exec + ?Sized>(
    ex: &mut E,
    t: &coupond_domain::Template,
    now: Timestamp,
) -> StoreResult<()> {
    let q = sql("SELECT announced FROM templates WHERE id = $1").bind(t.id.get());
    let from = TemplateStatus::parse(ex.fetch_one(q).await?.str("announced")?);
    let moves = t.transitions_since(from, now);
    if !moves.is_empty() {
        announce_template_in(ex, t.id, from, &moves).await?;
    }
    Ok(())
}

/// Announces `id`'s transitions due at `now` in a transaction of its own (see
/// `SchedulerStore::announce_template_due`). Losing to another announcer is fine: its
/// `UPDATE` waited for that one's commit, whose events therefore come first.
pub async fn announce_template_due(
    db: &dyn Db,
    id: TemplateId,
    now: Timestamp,
) -> StoreResult<Option<TemplateStatus>> {
    let q = sql(format!(
        "SELECT {}, announced FROM templates WHERE id = $1",
        db.dialect().template_columns()
    ))
    .bind(id.get());
    let Some(row) = db.read_optional(q).await? else {
        return Ok(None);
    };
    let (template, from) = (
        template_row(&row)?,
        TemplateStatus::parse(row.str("announced")?),
    );
    let moves = template.transitions_since(from, now);
    let Some(last) = moves.last() else {
        return Ok(from);
    };
    let mut tx = db.begin(Work::Background).await?;
    if !announce_template_in(&mut *tx, id, from, &moves).await? {
        return Ok(from);
    }
    tx.commit().await?;
    Ok(Some(last.to))
}

/// [`announce_template`]'s work in the caller's transaction: false (nothing written) if the
/// announced status is no longer `from`.
async fn announce_template_in<E: Exec + ?Sized>(
    tx: &mut E,
    id: TemplateId,
    from: Option<TemplateStatus>,
    transitions: &[Transition<TemplateStatus>],
) -> StoreResult<bool> {
    let Some(last) = transitions.last() else {
        return Ok(true);
    };
    let moved = tx
        .execute(
            sql("UPDATE templates SET announced = $1 WHERE id = $2 AND announced = $3")
                .bind(last.to.as_str())
                .bind(id.get())
                .bind(from.map_or("none", TemplateStatus::as_str)),
        )
        .await?;
    if moved != 1 {
        return Ok(false);
    }
    let mut prev = from;
    for t in transitions {
        let body = events::status_changed(
            "template_id",
            id.get(),
            prev.map(TemplateStatus::as_str),
            t.to.as_str(),
            t.at,
        );
        emit(tx, kind::TEMPLATE_STATUS_CHANGED, t.at, body).await?;
        let was_live = prev == Some(TemplateStatus::Active);
        if was_live != (t.to == TemplateStatus::Active) {
            let body =
                serde_json::json!({"template_id": id, "live": t.to == TemplateStatus::Active});
            emit(tx, kind::LISTING_COUPONS_CHANGED, t.at, body.to_string()).await?;
        }
        prev = Some(t.to);
    }
    Ok(true)
}

/// Expires up to `limit` unused coupons whose validity ended by `now`, oldest first, with
/// their log rows and events; how many it expired.
pub async fn expire_coupons(db: &dyn Db, now: Timestamp, limit: u32) -> StoreResult<u64> {
    let q = sql(format!(
        "SELECT * FROM coupons WHERE status = 'unused' AND valid_until <= $1
         ORDER BY valid_until LIMIT $2{}",
        db.dialect().lock_rows_skip_locked()
    ))
    .bind(now)
    .bind(limit);
    let mut tx = db.begin(Work::Background).await?;
    let due = tx
        .fetch_all(q)
        .await?
        .iter()
        .map(rows::coupon)
        .collect::<StoreResult<Vec<_>>>()?;
    let mut n = 0;
    for c in &due {
        if expire(&mut *tx, c, now).await? {
            n += 1;
        }
    }
    tx.commit().await?;
    Ok(n)
}

/// Expires coupon `c` if it is still unused (a lock may have taken it since it was read),
/// with its log row and event, inside the caller's transaction; whether it did.
async fn expire<E: Exec + ?Sized>(ex: &mut E, c: &Coupon, now: Timestamp) -> StoreResult<bool> {
    let expired = ex
        .execute(
            sql("UPDATE coupons SET status = 'expired', updated_at = $1
                 WHERE id = $2 AND status = 'unused'")
            .bind(now)
            .bind(c.id.get()),
        )
        .await?;
    if expired != 1 {
        return Ok(false);
    }
    ex.execute(
        sql(
            "INSERT INTO coupon_events (coupon_id, from_status, to_status, actor, at)
             VALUES ($1, 'unused', 'expired', $2, $3)",
        )
        .bind(c.id.get())
        .bind(Actor::System.to_text())
        .bind(c.valid_until),
    )
    .await?;
    emit(
        ex,
        kind::COUPON_EXPIRED,
        c.valid_until,
        events::coupon_expired(c),
    )
    .await?;
    Ok(true)
}

/// The next instant after `now` at which the scheduler has something to do, if any.
pub async fn next_due(db: &dyn Db, now: Timestamp) -> StoreResult<Option<Timestamp>> {
    let q = sql("SELECT MIN(t) AS next_at FROM (
             SELECT MIN(claim_start) AS t FROM templates
                 WHERE announced = 'scheduled' AND claim_start > $1
             UNION ALL SELECT MIN(claim_end) FROM templates
                 WHERE announced = 'active' AND claim_end > $1
             UNION ALL SELECT MIN(expires_at) FROM templates
                 WHERE announced = 'ended' AND expires_at > $1
             UNION ALL SELECT MIN(valid_until) FROM coupons
                 WHERE status = 'unused' AND valid_until > $1
             UNION ALL SELECT MIN(deadline) FROM orders
                 WHERE state = 'locked' AND deadline > $1
             UNION ALL SELECT MIN(due_at) FROM reminders WHERE due_at > $1
         ) AS due")
    .bind(now);
    db.read_one(q).await?.opt_time("next_at")
}

/// Appends an event to the outbox, inside the caller's transaction.
pub(crate) async fn emit<E: Exec + ?Sized>(
    ex: &mut E,
    kind: &str,
    at: Timestamp,
    body: String,
) -> StoreResult<()> {
    ex.execute(
        sql("INSERT INTO outbox (kind, at, body) VALUES ($1, $2, $3)")
            .bind(kind)
            .bind(at)
            .bind(Json(body)),
    )
    .await?;
    Ok(())
}

#[async_trait::async_trait]
impl<B: Backend> SchedulerStore for SqlStore<B> {
    async fn unannounced_activities(&self) -> StoreResult<Vec<(Activity, Option<ActivityStatus>)>> {
        unannounced_activities(&self.db).await
    }
    async fn due_templates(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(Template, Option<TemplateStatus>)>> {
        due_templates(&self.db, now, limit).await
    }
    async fn announce_activity(
        &self,
        id: ActivityId,
        from: Option<ActivityStatus>,
        transitions: &[Transition<ActivityStatus>],
    ) -> StoreResult<bool> {
        announce_activity(&self.db, id, from, transitions).await
    }
    async fn announce_template(
        &self,
        id: TemplateId,
        from: Option<TemplateStatus>,
        transitions: &[Transition<TemplateStatus>],
    ) -> StoreResult<bool> {
        announce_template(&self.db, id, from, transitions).await
    }
    async fn announce_template_due(
        &self,
        id: TemplateId,
        now: Timestamp,
    ) -> StoreResult<Option<TemplateStatus>> {
        announce_template_due(&self.db, id, now).await
    }
    async fn expire_coupons(&self, now: Timestamp, limit: u32) -> StoreResult<u64> {
        expire_coupons(&self.db, now, limit).await
    }
    async fn next_due(&self, now: Timestamp) -> StoreResult<Option<Timestamp>> {
        next_due(&self.db, now).await
    }
}
