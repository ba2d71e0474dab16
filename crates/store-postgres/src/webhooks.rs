//! Webhook endpoints, deliveries and attempts on PostgreSQL.

use async_trait::async_trait;
use coupond_domain::{MerchantId, Timestamp};
use coupond_store::Conflict;
use coupond_store::WebhookStore;
use coupond_store::{
    Delivery, DeliveryAttempt, DeliveryState, NewDelivery, NewWebhook, StoreError, StoreResult,
    Webhook,
};
use sqlx::{Postgres, QueryBuilder};

use crate::rows::{self, db_err};
use crate::store::{dt, PgStore};

#[async_trait]
impl WebhookStore for PgStore {
    async fn insert_webhook(
        &self,
        new: &NewWebhook<'_>,
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Webhook> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Registrations of one owner take turns (a transaction-scoped advisory lock on the
        // owner), so two cannot both count below the cap and both insert.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('webhooks:' || $1, 0))")
            .bind(new.merchant_id.map_or(0, MerchantId::get))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        let row = sqlx::query(
            "INSERT INTO webhooks (merchant_id, url, secret, event_types, created_at)
             SELECT $1, $2, $3, $4, $5
             WHERE (SELECT count(*) FROM webhooks
                    WHERE merchant_id IS NOT DISTINCT FROM $1 AND disabled_at IS NULL) < $6
             RETURNING *",
        )
        .bind(new.merchant_id.map(MerchantId::get))
        .bind(new.url)
        .bind(new.secret)
        .bind(serde_json::to_string(new.event_types).map_err(StoreError::other)?)
        .bind(dt(now))
        .bind(i64::from(max))
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::Conflict(Conflict::Limit))?;
        tx.commit().await.map_err(db_err)?;
        rows::webhook(&row)
    }

    async fn webhook(&self, id: i64) -> StoreResult<Webhook> {
        let row = sqlx::query("SELECT * FROM webhooks WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound)?;
        rows::webhook(&row)
    }

    async fn list_webhooks(&self, merchant: Option<MerchantId>) -> StoreResult<Vec<Webhook>> {
        let rows = match merchant {
            Some(m) => {
                sqlx::query("SELECT * FROM webhooks WHERE merchant_id = $1 ORDER BY id")
                    .bind(m.get())
                    .fetch_all(&self.pool)
                    .await
            }
            None => {
                sqlx::query("SELECT * FROM webhooks ORDER BY id")
                    .fetch_all(&self.pool)
                    .await
            }
        }
        .map_err(db_err)?;
        rows.iter().map(rows::webhook).collect()
    }

    async fn disable_webhook(&self, id: i64, now: Timestamp) -> StoreResult<Webhook> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let row = sqlx::query(
            "UPDATE webhooks SET disabled_at = COALESCE(disabled_at, $1) WHERE id = $2 RETURNING *",
        )
        .bind(dt(now))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound)?;
        sqlx::query(
            "UPDATE webhook_deliveries SET state = 'failed' WHERE webhook_id = $1 AND state = 'pending'",
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
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let mut added = 0;
        for chunk in d.chunks(500) {
            let mut q = QueryBuilder::<Postgres>::new(
                "INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, payload, state,
                                                 next_at, created_at) ",
            );
            q.push_values(chunk, |mut b, n| {
                b.push_bind(n.webhook_id)
                    .push_bind(n.event_id)
                    .push_bind(n.event_type.clone())
                    .push_bind(n.payload.clone())
                    .push("'pending'")
                    .push_bind(dt(now))
                    .push_bind(dt(now));
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
             WHERE d.state = 'pending' AND d.next_at <= $1 AND w.disabled_at IS NULL
               AND d.webhook_id <> ALL($3)
             ORDER BY d.next_at, d.id LIMIT $2",
        )
        .bind(dt(now))
        .bind(i64::from(limit))
        .bind(skip)
        .fetch_all(&self.pool)
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
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO webhook_attempts (delivery_id, attempt, at, status, error)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )
        .bind(delivery)
        .bind(attempt.attempt)
        .bind(dt(attempt.at))
        .bind(attempt.status.map(i64::from))
        .bind(&attempt.error)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        sqlx::query(
            "UPDATE webhook_deliveries SET state = $1, attempts = $2, next_at = $3,
                 delivered_at = CASE WHEN $4 = 'delivered' THEN $5 END
             WHERE id = $6 AND state = 'pending'",
        )
        .bind(state.as_str())
        .bind(attempt.attempt)
        .bind(dt(next))
        .bind(state.as_str())
        .bind(dt(attempt.at))
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
            "SELECT * FROM webhook_deliveries WHERE webhook_id = $1 AND id < $2
             ORDER BY id DESC LIMIT $3",
        )
        .bind(webhook)
        .bind(before.unwrap_or(i64::MAX))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let id: i64 = sqlx::Row::try_get(r, "id").map_err(db_err)?;
            let attempts = sqlx::query(
                "SELECT * FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt",
            )
            .bind(id)
            .fetch_all(&self.pool)
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
