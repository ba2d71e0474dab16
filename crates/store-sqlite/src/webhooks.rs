//! Webhook endpoints, deliveries and attempts on SQLite.

use async_trait::async_trait;
use coupond_domain::{MerchantId, Timestamp};
use coupond_store::Conflict;
use coupond_store::WebhookStore;
use coupond_store::{
    Delivery, DeliveryAttempt, DeliveryState, NewDelivery, NewWebhook, StoreError, StoreResult,
    Webhook,
};
use sqlx::{QueryBuilder, Sqlite};

use crate::rows::{self, db_err};
use crate::store::{us, SqliteStore};

#[async_trait]
impl WebhookStore for SqliteStore {
    async fn insert_webhook(
        &self,
        new: &NewWebhook<'_>,
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Webhook> {
        // One writer: the count and the insert cannot interleave with another registration.
        let row = sqlx::query(
            "INSERT INTO webhooks (merchant_id, url, secret, event_types, created_at)
             SELECT ?1, ?2, ?3, ?4, ?5
             WHERE (SELECT count(*) FROM webhooks
                    WHERE merchant_id IS ?1 AND disabled_at IS NULL) < ?6
             RETURNING *",
        )
        .bind(new.merchant_id.map(MerchantId::get))
        .bind(new.url)
        .bind(new.secret)
        .bind(serde_json::to_string(new.event_types).map_err(StoreError::other)?)
        .bind(us(now))
        .bind(i64::from(max))
        .fetch_optional(&self.writer)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::Conflict(Conflict::Limit))?;
        rows::webhook(&row)
    }

    async fn webhook(&self, id: i64) -> StoreResult<Webhook> {
        let row = sqlx::query("SELECT * FROM webhooks WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.reader)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound)?;
        rows::webhook(&row)
    }

    async fn list_webhooks(&self, merchant: Option<MerchantId>) -> StoreResult<Vec<Webhook>> {
        let rows = match merchant {
            Some(m) => {
                sqlx::query("SELECT * FROM webhooks WHERE merchant_id = ? ORDER BY id")
                    .bind(m.get())
                    .fetch_all(&self.reader)
                    .await
            }
            None => {
                sqlx::query("SELECT * FROM webhooks ORDER BY id")
                    .fetch_all(&self.reader)
                    .await
            }
        }
        .map_err(db_err)?;
        rows.iter().map(rows::webhook).collect()
    }

    async fn disable_webhook(&self, id: i64, now: Timestamp) -> StoreResult<Webhook> {
        let mut tx = self.begin().await?;
        let row = sqlx::query(
            "UPDATE webhooks SET disabled_at = COALESCE(disabled_at, ?) WHERE id = ? RETURNING *",
        )
        .bind(us(now))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound)?;
        sqlx::query(
            "UPDATE webhook_deliveries SET state = 'failed' WHERE webhook_id = ? AND state = 'pending'",
        )
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let w = rows::webhook(&row)?;
        tx.commit().await.map_err(db_err)?;
        Ok(w)
    }

    async fn enqueue_deliveries(&self, d: &[NewDelivery], now: Timestamp) -> StoreResult<u64> {
        if d.is_empty() {
            return Ok(0);
        }
        let (_turn, mut tx) = self.begin_background().await?;
        let mut added = 0;
        for chunk in d.chunks(500) {
            let mut q = QueryBuilder::<Sqlite>::new(
                "INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, payload, state,
                                                 next_at, created_at) ",
            );
            q.push_values(chunk, |mut b, n| {
                b.push_bind(n.webhook_id)
                    .push_bind(n.event_id)
                    .push_bind(n.event_type.clone())
                    .push_bind(n.payload.clone())
                    .push("'pending'")
                    .push_bind(us(now))
                    .push_bind(us(now));
            });
            q.push(" ON CONFLICT (webhook_id, event_id) DO NOTHING");
            added += q
                .build()
                .execute(&mut *tx)
                .await
                .map_err(db_err)?
                .rows_affected();
        }
        tx.commit().await.map_err(db_err)?;
        Ok(added)
    }

    async fn due_deliveries(
        &self,
        now: Timestamp,
        limit: u32,
        skip: &[i64],
    ) -> StoreResult<Vec<Delivery>> {
        let rows = sqlx::query(
            "SELECT d.* FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
             WHERE d.state = 'pending' AND d.next_at <= ? AND w.disabled_at IS NULL
               AND d.webhook_id NOT IN (SELECT value FROM json_each(?))
             ORDER BY d.next_at, d.id LIMIT ?",
        )
        .bind(us(now))
        .bind(serde_json::to_string(skip).map_err(StoreError::other)?)
        .bind(i64::from(limit))
        .fetch_all(&self.reader)
        .await
        .map_err(db_err)?;
        rows.iter().map(|r| rows::delivery(r, vec![])).collect()
    }

    async fn record_attempt(
        &self,
        delivery: i64,
        attempt: &DeliveryAttempt,
        state: DeliveryState,
        next: Timestamp,
    ) -> StoreResult<()> {
        let (_turn, mut tx) = self.begin_background().await?;
        sqlx::query(
            "INSERT INTO webhook_attempts (delivery_id, attempt, at, status, error)
             VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        )
        .bind(delivery)
        .bind(attempt.attempt)
        .bind(us(attempt.at))
        .bind(attempt.status.map(i64::from))
        .bind(&attempt.error)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        sqlx::query(
            "UPDATE webhook_deliveries SET state = ?, attempts = ?, next_at = ?,
                 delivered_at = CASE WHEN ? = 'delivered' THEN ? END
             WHERE id = ? AND state = 'pending'",
        )
        .bind(state.as_str())
        .bind(attempt.attempt)
        .bind(us(next))
        .bind(state.as_str())
        .bind(us(attempt.at))
        .bind(delivery)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }

    async fn deliveries(
        &self,
        webhook: i64,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Delivery>> {
        let rows = sqlx::query(
            "SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND id < ?
             ORDER BY id DESC LIMIT ?",
        )
        .bind(webhook)
        .bind(before.unwrap_or(i64::MAX))
        .bind(i64::from(limit))
        .fetch_all(&self.reader)
        .await
        .map_err(db_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let id: i64 = sqlx::Row::try_get(r, "id").map_err(db_err)?;
            let attempts = sqlx::query(
                "SELECT * FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt",
            )
            .bind(id)
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?
            .iter()
            .map(rows::attempt)
            .collect::<StoreResult<Vec<_>>>()?;
            out.push(rows::delivery(r, attempts)?);
        }
        Ok(out)
    }
}
