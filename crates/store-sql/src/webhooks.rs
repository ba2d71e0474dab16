//! Webhook endpoints, deliveries and attempts
//! ([`WebhookStore`](coupond_store::WebhookStore)), on every backend.

use coupond_domain::{MerchantId, Timestamp};
use coupond_store::{
    Conflict, Delivery, DeliveryAttempt, DeliveryState, DueSkip, NewDelivery, NewWebhook,
    StoreError, StoreResult, Webhook,
};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Row, Work};
use coupond_store::WebhookStore;

/// Deliveries queued per statement.
const CHUNK: usize = 500;

pub async fn insert_webhook(
    db: &dyn Db,
    new: &NewWebhook<'_>,
    max: u32,
    now: Timestamp,
) -> StoreResult<Webhook> {
    let owner = new.merchant_id.map(MerchantId::get);
    let mut tx = db.begin(Work::Request).await?;
    // Registrations of one owner take turns, so two cannot both count below the cap and both
    // insert.
    tx.lock(&format!("webhooks:{}", owner.unwrap_or(0))).await?;
    let q = sql(format!(
        "INSERT INTO webhooks (merchant_id, url, secret, event_types, created_at)
         SELECT $1, $2, $3, $4, $5
         WHERE (SELECT count(*) FROM webhooks WHERE {} AND disabled_at IS NULL) < $6
         RETURNING *",
        db.dialect().same("merchant_id", "$1")
    ))
    .bind(owner)
    .bind(new.url)
    .bind(new.secret)
    .bind(serde_json::to_string(new.event_types).map_err(StoreError::other)?)
    .bind(now)
    .bind(max);
    let row = tx
        .fetch_optional(q)
        .await?
        .ok_or(StoreError::Conflict(Conflict::Limit))?;
    coupond_store::audit::created(row.i64("id")?);
    tx.commit().await?;
    webhook_row(&row)
}

pub async fn webhook(db: &dyn Db, id: i64) -> StoreResult<Webhook> {
    let row = db
        .read_one(sql("SELECT * FROM webhooks WHERE id = $1").bind(id))
        .await?;
    webhook_row(&row)
}

pub async fn list_webhooks(db: &dyn Db, merchant: Option<MerchantId>) -> StoreResult<Vec<Webhook>> {
    let q = match merchant {
        Some(m) => sql("SELECT * FROM webhooks WHERE merchant_id = $1 ORDER BY id").bind(m.get()),
        None => sql("SELECT * FROM webhooks ORDER BY id"),
    };
    db.read_all(q).await?.iter().map(webhook_row).collect()
}

pub async fn disable_webhook(db: &dyn Db, id: i64, now: Timestamp) -> StoreResult<Webhook> {
    let mut tx = db.begin(Work::Request).await?;
    let row = tx
        .fetch_one(
            sql("UPDATE webhooks SET disabled_at = COALESCE(disabled_at, $1) WHERE id = $2 RETURNING *")
                .bind(now)
                .bind(id),
        )
        .await?;
    tx.execute(
        sql("UPDATE webhook_deliveries SET state = 'failed' WHERE webhook_id = $1 AND state = 'pending'")
            .bind(id),
    )
    .await?;
    let w = webhook_row(&row)?;
    tx.commit().await?;
    Ok(w)
}

pub async fn delete_webhook(db: &dyn Db, id: i64) -> StoreResult<Webhook> {
    let mut tx = db.begin(Work::Request).await?;
    let lock = db.dialect().lock_rows(false);
    let row = tx
        .fetch_one(sql(format!("SELECT * FROM webhooks WHERE id = $1 {lock}")).bind(id))
        .await?;
    let w = webhook_row(&row)?;
    // Its deliveries locked first: an attempt being recorded meanwhile ends before they go
    // (and then finds its delivery gone, and records nothing).
    tx.fetch_all(
        sql(format!(
            "SELECT id FROM webhook_deliveries WHERE webhook_id = $1 {lock}"
        ))
        .bind(id),
    )
    .await?;
    tx.execute(
        sql("DELETE FROM webhook_attempts WHERE delivery_id IN
             (SELECT id FROM webhook_deliveries WHERE webhook_id = $1)")
        .bind(id),
    )
    .await?;
    tx.execute(sql("DELETE FROM webhook_deliveries WHERE webhook_id = $1").bind(id))
        .await?;
    tx.execute(sql("DELETE FROM webhooks WHERE id = $1").bind(id))
        .await?;
    tx.commit().await?;
    Ok(w)
}

pub async fn enqueue_ping(db: &dyn Db, webhook: i64, now: Timestamp) -> StoreResult<Delivery> {
    let mut tx = db.begin(Work::Request).await?;
    // Pings of one endpoint take turns, so two cannot both take the same number.
    tx.lock(&format!("webhook-ping:{webhook}")).await?;
    let hook = tx
        .fetch_one(sql("SELECT * FROM webhooks WHERE id = $1").bind(webhook))
        .await
        .and_then(|r| webhook_row(&r))?;
    if hook.disabled_at.is_some() {
        return Err(StoreError::Conflict(Conflict::Version));
    }
    let last = tx
        .fetch_one(
            sql(
                "SELECT COALESCE(MIN(event_id), 0) AS last FROM webhook_deliveries
                 WHERE webhook_id = $1 AND event_id < 0",
            )
            .bind(webhook),
        )
        .await?
        .i64("last")?;
    let id = last - 1;
    let payload = coupond_store::webhooks::ping_payload(id, webhook, now);
    let row = tx
        .fetch_one(
            sql(
                "INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, payload, state,
                                                 next_at, created_at)
                 VALUES ($1, $2, $3, $4, 'pending', $5, $5) RETURNING *",
            )
            .bind(webhook)
            .bind(id)
            .bind(coupond_store::webhooks::PING)
            .bind(payload.as_str())
            .bind(now),
        )
        .await?;
    let d = delivery_row(&row, vec![])?;
    tx.commit().await?;
    Ok(d)
}

pub async fn enqueue_deliveries(
    db: &dyn Db,
    d: &[NewDelivery],
    now: Timestamp,
) -> StoreResult<u64> {
    if d.is_empty() {
        return Ok(0);
    }
    let mut tx = db.begin(Work::Background).await?;
    let mut added = 0;
    for chunk in d.chunks(CHUNK) {
        let mut q = sql(
            "INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, payload, state,
                                             next_at, created_at) VALUES ",
        );
        for (i, n) in chunk.iter().enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.push_bind(n.webhook_id)
                .push(", ")
                .push_bind(n.event_id)
                .push(", ");
            q.push_bind(n.event_type.as_str())
                .push(", ")
                .push_bind(n.payload.as_str());
            q.push(", 'pending', ")
                .push_bind(now)
                .push(", ")
                .push_bind(now)
                .push(")");
        }
        q.push(&db.dialect().on_conflict_nothing("webhook_id"));
        added += tx.execute(q).await?;
    }
    tx.commit().await?;
    Ok(added)
}

pub async fn due_deliveries(
    db: &dyn Db,
    now: Timestamp,
    limit: u32,
    skip: &DueSkip,
) -> StoreResult<Vec<Delivery>> {
    let d = db.dialect();
    let q = sql(format!(
        "SELECT d.* FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
         WHERE d.state = 'pending' AND d.next_at <= $1 AND w.disabled_at IS NULL AND {} AND {}
         ORDER BY d.next_at, d.id LIMIT $2",
        d.not_in_list("d.webhook_id", 3),
        d.not_in_list("COALESCE(w.merchant_id, 0)", 4)
    ))
    .bind(now)
    .bind(limit)
    .bind(skip.webhooks.as_slice())
    .bind(skip.owners.as_slice());
    let rows = db.read_all(q).await?;
    rows.iter().map(|r| delivery_row(r, vec![])).collect()
}

pub async fn record_attempt(
    db: &dyn Db,
    delivery: i64,
    attempt: &DeliveryAttempt,
    state: DeliveryState,
    next: Timestamp,
) -> StoreResult<()> {
    let mut tx = db.begin(Work::Background).await?;
    // A delivery deleted with its endpoint while it was being sent: nothing to record.
    let lock = db.dialect().lock_rows(false);
    let q = sql(format!(
        "SELECT id FROM webhook_deliveries WHERE id = $1 {lock}"
    ))
    .bind(delivery);
    if tx.fetch_optional(q).await?.is_none() {
        return Ok(());
    }
    let on_conflict = db.dialect().on_conflict_nothing("attempt");
    tx.execute(
        sql(format!(
            "INSERT INTO webhook_attempts (delivery_id, attempt, at, status, error)
             VALUES ($1, $2, $3, $4, $5){on_conflict}"
        ))
        .bind(delivery)
        .bind(attempt.attempt)
        .bind(attempt.at)
        .bind(attempt.status.map(i64::from))
        .bind(&attempt.error),
    )
    .await?;
    let delivered = (state == DeliveryState::Delivered).then_some(attempt.at);
    tx.execute(
        sql("UPDATE webhook_deliveries SET state = $1, attempts = $2, next_at = $3, delivered_at = $4
             WHERE id = $5 AND state = 'pending'")
        .bind(state.as_str())
        .bind(attempt.attempt)
        .bind(next)
        .bind(delivered)
        .bind(delivery),
    )
    .await?;
    tx.commit().await
}

pub async fn deliveries(
    db: &dyn Db,
    webhook: i64,
    before: Option<i64>,
    limit: u32,
) -> StoreResult<Vec<Delivery>> {
    let rows = db
        .read_all(
            sql(
                "SELECT * FROM webhook_deliveries WHERE webhook_id = $1 AND id < $2
                 ORDER BY id DESC LIMIT $3",
            )
            .bind(webhook)
            .bind(before.unwrap_or(i64::MAX))
            .bind(limit),
        )
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let attempts = db
            .read_all(
                sql("SELECT * FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt")
                    .bind(r.i64("id")?),
            )
            .await?
            .iter()
            .map(attempt_row)
            .collect::<StoreResult<Vec<_>>>()?;
        out.push(delivery_row(r, attempts)?);
    }
    Ok(out)
}

fn webhook_row(r: &Row) -> StoreResult<Webhook> {
    Ok(Webhook {
        id: r.i64("id")?,
        merchant_id: r
            .opt_i64("merchant_id")?
            .map(|v| MerchantId::new(v).map_err(StoreError::other))
            .transpose()?,
        url: r.string("url")?,
        secret: r.string("secret")?,
        event_types: serde_json::from_str(r.str("event_types")?).map_err(StoreError::other)?,
        created_at: r.time("created_at")?,
        disabled_at: r.opt_time("disabled_at")?,
    })
}

fn delivery_row(r: &Row, attempts: Vec<DeliveryAttempt>) -> StoreResult<Delivery> {
    Ok(Delivery {
        id: r.i64("id")?,
        webhook_id: r.i64("webhook_id")?,
        event_id: r.i64("event_id")?,
        event_type: r.string("event_type")?,
        payload: r.string("payload")?,
        state: DeliveryState::parse(r.str("state")?)
            .ok_or_else(|| StoreError::other("unknown delivery state"))?,
        next_at: r.time("next_at")?,
        created_at: r.time("created_at")?,
        delivered_at: r.opt_time("delivered_at")?,
        tries: r.i64("attempts")?,
        attempts,
    })
}

fn attempt_row(r: &Row) -> StoreResult<DeliveryAttempt> {
    Ok(DeliveryAttempt {
        attempt: r.i64("attempt")?,
        at: r.time("at")?,
        status: r
            .opt_i64("status")?
            .map(|s| u16::try_from(s).map_err(StoreError::other))
            .transpose()?,
        error: r.opt_string("error")?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> WebhookStore for SqlStore<B> {
    async fn insert_webhook(
        &self,
        new: &NewWebhook<'_>,
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Webhook> {
        insert_webhook(&self.db, new, max, now).await
    }
    async fn webhook(&self, id: i64) -> StoreResult<Webhook> {
        webhook(&self.db, id).await
    }
    async fn list_webhooks(&self, merchant: Option<MerchantId>) -> StoreResult<Vec<Webhook>> {
        list_webhooks(&self.db, merchant).await
    }
    async fn disable_webhook(&self, id: i64, now: Timestamp) -> StoreResult<Webhook> {
        disable_webhook(&self.db, id, now).await
    }
    async fn delete_webhook(&self, id: i64) -> StoreResult<Webhook> {
        delete_webhook(&self.db, id).await
    }
    async fn enqueue_ping(&self, webhook: i64, now: Timestamp) -> StoreResult<Delivery> {
        enqueue_ping(&self.db, webhook, now).await
    }
    async fn enqueue_deliveries(&self, d: &[NewDelivery], now: Timestamp) -> StoreResult<u64> {
        enqueue_deliveries(&self.db, d, now).await
    }
    async fn due_deliveries(
        &self,
        now: Timestamp,
        limit: u32,
        skip: &DueSkip,
    ) -> StoreResult<Vec<Delivery>> {
        due_deliveries(&self.db, now, limit, skip).await
    }
    async fn record_attempt(
        &self,
        delivery: i64,
        attempt: &DeliveryAttempt,
        state: DeliveryState,
        next: Timestamp,
    ) -> StoreResult<()> {
        record_attempt(&self.db, delivery, attempt, state, next).await
    }
    async fn deliveries(
        &self,
        webhook: i64,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Delivery>> {
        deliveries(&self.db, webhook, before, limit).await
    }
}
