//! The scheduler's reads and writes, the outbox's consumers, reminders and the inbox, on
//! SQLite. Writes run in `BEGIN IMMEDIATE` transactions: what they read stays true until they
//! commit.

use async_trait::async_trait;
use coupond_domain::{
    Activity, ActivityId, ActivityStatus, Actor, Coupon, Template, TemplateId, TemplateStatus,
    Timestamp, Transition, UserId,
};
use coupond_store::events::{self, kind};
use coupond_store::{
    Event, Message, MessageContent, OutboxPosition, Reminder, StoreError, StoreResult,
};
use coupond_store::{InboxStore, OutboxStore, SchedulerStore};
use sqlx::{QueryBuilder, Sqlite};

use crate::rows::{self, db_err};
use crate::store::{us, SqliteStore, ACTIVITY_COLS, TEMPLATE_COLS};

type Tx = sqlx::Transaction<'static, Sqlite>;

const DAY_US: i64 = 86_400_000_000;

impl SqliteStore {
    pub(crate) async fn outbox_head_q(&self) -> StoreResult<OutboxPosition> {
        let id: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM outbox")
            .fetch_one(&self.reader)
            .await
            .map_err(db_err)?;
        Ok(OutboxPosition {
            txid: 0,
            event_id: id,
        })
    }
}

async fn deliver(
    tx: &mut Tx,
    content: &MessageContent,
    recipients: &[(UserId, String)],
    now: Timestamp,
) -> StoreResult<u64> {
    sqlx::query(
        "INSERT INTO message_contents (key, kind, title, body, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (key) DO NOTHING",
    )
    .bind(&content.key)
    .bind(&content.kind)
    .bind(&content.title)
    .bind(&content.body)
    .bind(us(now))
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    let content_id: i64 = sqlx::query_scalar("SELECT id FROM message_contents WHERE key = ?")
        .bind(&content.key)
        .fetch_one(&mut **tx)
        .await
        .map_err(db_err)?;
    let mut added = 0;
    for chunk in recipients.chunks(500) {
        let mut q = QueryBuilder::<Sqlite>::new(
            "INSERT INTO messages (user_id, content_id, source, created_at) ",
        );
        q.push_values(chunk, |mut b, (user, source)| {
            b.push_bind(user.as_str().to_owned())
                .push_bind(content_id)
                .push_bind(source.clone())
                .push_bind(us(now));
        });
        q.push(" ON CONFLICT (user_id, source) DO NOTHING");
        added += q
            .build()
            .execute(&mut **tx)
            .await
            .map_err(db_err)?
            .rows_affected();
    }
    Ok(added)
}

async fn emit(tx: &mut Tx, kind: &str, at: Timestamp, body: String) -> StoreResult<()> {
    sqlx::query("INSERT INTO outbox (kind, at, body) VALUES (?, ?, ?)")
        .bind(kind)
        .bind(us(at))
        .bind(body)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(())
}

#[async_trait]
impl OutboxStore for SqliteStore {
    async fn try_lease(
        &self,
        name: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        let held: Option<String> = sqlx::query_scalar(
            "INSERT INTO leases (name, holder, until) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO UPDATE SET holder = ?2, until = ?3
                 WHERE leases.until <= ?4 OR leases.holder = ?2
             RETURNING holder",
        )
        .bind(name)
        .bind(holder)
        .bind(us(until))
        .bind(us(now))
        .fetch_optional(&self.writer)
        .await
        .map_err(db_err)?;
        Ok(held.as_deref() == Some(holder))
    }

    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>> {
        // One writer: ids grow in commit order, so the id alone is the position.
        let rows = sqlx::query("SELECT * FROM outbox WHERE id > ? ORDER BY id LIMIT ?")
            .bind(after.event_id)
            .bind(i64::from(limit))
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::event).collect()
    }

    async fn sink_position(&self, sink: &str) -> StoreResult<OutboxPosition> {
        let row: Option<(i64, i64)> =
            sqlx::query_as("SELECT txid, event_id FROM sink_progress WHERE sink = ?")
                .bind(sink)
                .fetch_optional(&self.reader)
                .await
                .map_err(db_err)?;
        Ok(row.map_or(OutboxPosition::default(), |(txid, event_id)| {
            OutboxPosition { txid, event_id }
        }))
    }

    async fn sink_ack(&self, sink: &str, at: OutboxPosition) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO sink_progress (sink, txid, event_id) VALUES (?1, ?2, ?3)
             ON CONFLICT (sink) DO UPDATE SET txid = ?2, event_id = ?3",
        )
        .bind(sink)
        .bind(at.txid)
        .bind(at.event_id)
        .execute(&self.writer)
        .await
        .map_err(db_err)?;
        Ok(())
    }
}

#[async_trait]
impl SchedulerStore for SqliteStore {
    async fn unannounced_activities(&self) -> StoreResult<Vec<(Activity, Option<ActivityStatus>)>> {
        let rows = sqlx::query(&format!(
            "SELECT {ACTIVITY_COLS}, announced FROM activities
             WHERE announced NOT IN ('ended', 'aborted') ORDER BY id"
        ))
        .fetch_all(&self.reader)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                let a: String = sqlx::Row::try_get(r, "announced").map_err(db_err)?;
                Ok((rows::activity(r)?, ActivityStatus::parse(&a)))
            })
            .collect()
    }

    async fn due_templates(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(Template, Option<TemplateStatus>)>> {
        // Each branch can use an index; together they are every template whose status moved
        // past the one announced (or that has none announced).
        let rows = sqlx::query(&format!(
            "SELECT {TEMPLATE_COLS}, announced FROM templates WHERE id IN (
                 SELECT id FROM templates WHERE announced IN ('none', 'draft')
                     AND (activity_id IS NOT NULL OR published_at IS NOT NULL OR announced = 'none')
                 UNION SELECT id FROM templates WHERE announced = 'scheduled' AND claim_start <= ?1
                 UNION SELECT id FROM templates WHERE announced = 'active' AND claim_end <= ?1
                 UNION SELECT id FROM templates WHERE announced = 'ended' AND expires_at <= ?1
                 UNION SELECT id FROM templates WHERE aborted_at IS NOT NULL
                     AND announced <> 'aborted'
             ) ORDER BY id LIMIT ?2"
        ))
        .bind(us(now))
        .bind(i64::from(limit))
        .fetch_all(&self.reader)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                let a: String = sqlx::Row::try_get(r, "announced").map_err(db_err)?;
                Ok((rows::template(r)?, TemplateStatus::parse(&a)))
            })
            .collect()
    }

    async fn announce_activity(
        &self,
        id: ActivityId,
        from: Option<ActivityStatus>,
        transitions: &[Transition<ActivityStatus>],
    ) -> StoreResult<bool> {
        let Some(last) = transitions.last() else {
            return Ok(true);
        };
        let (_turn, mut tx) = self.begin_background().await?;
        let moved =
            sqlx::query("UPDATE activities SET announced = ? WHERE id = ? AND announced = ?")
                .bind(last.to.as_str())
                .bind(id.get())
                .bind(from.map_or("none", ActivityStatus::as_str))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        if moved.rows_affected() != 1 {
            return Ok(false);
        }
        let mut prev = from.map(ActivityStatus::as_str);
        for t in transitions {
            emit(
                &mut tx,
                kind::ACTIVITY_STATUS_CHANGED,
                t.at,
                events::status_changed("activity_id", id.get(), prev, t.to.as_str(), t.at),
            )
            .await?;
            prev = Some(t.to.as_str());
        }
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

    async fn announce_template(
        &self,
        id: TemplateId,
        from: Option<TemplateStatus>,
        transitions: &[Transition<TemplateStatus>],
    ) -> StoreResult<bool> {
        let Some(last) = transitions.last() else {
            return Ok(true);
        };
        let (_turn, mut tx) = self.begin_background().await?;
        let moved =
            sqlx::query("UPDATE templates SET announced = ? WHERE id = ? AND announced = ?")
                .bind(last.to.as_str())
                .bind(id.get())
                .bind(from.map_or("none", TemplateStatus::as_str))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        if moved.rows_affected() != 1 {
            return Ok(false);
        }
        let mut prev = from;
        for t in transitions {
            emit(
                &mut tx,
                kind::TEMPLATE_STATUS_CHANGED,
                t.at,
                events::status_changed(
                    "template_id",
                    id.get(),
                    prev.map(TemplateStatus::as_str),
                    t.to.as_str(),
                    t.at,
                ),
            )
            .await?;
            let was_live = prev == Some(TemplateStatus::Active);
            if was_live != (t.to == TemplateStatus::Active) {
                emit(
                    &mut tx,
                    kind::LISTING_COUPONS_CHANGED,
                    t.at,
                    serde_json::json!({"template_id": id, "live": t.to == TemplateStatus::Active})
                        .to_string(),
                )
                .await?;
            }
            prev = Some(t.to);
        }
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

    async fn expire_coupons(&self, now: Timestamp, limit: u32) -> StoreResult<u64> {
        let (_turn, mut tx) = self.begin_background().await?;
        let due: Vec<Coupon> = sqlx::query(
            "SELECT * FROM coupons WHERE status = 'unused' AND valid_until <= ?
             ORDER BY valid_until LIMIT ?",
        )
        .bind(us(now))
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?
        .iter()
        .map(rows::coupon)
        .collect::<StoreResult<_>>()?;
        let mut n = 0;
        for c in &due {
            // Only if still unused: a lock may have taken it since it was read.
            let expired = sqlx::query(
                "UPDATE coupons SET status = 'expired', updated_at = ? WHERE id = ? AND status = 'unused'",
            )
            .bind(us(now))
            .bind(c.id.get())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            if expired.rows_affected() != 1 {
                continue;
            }
            n += 1;
            sqlx::query(
                "INSERT INTO coupon_events (coupon_id, from_status, to_status, actor, at)
                 VALUES (?, 'unused', 'expired', ?, ?)",
            )
            .bind(c.id.get())
            .bind(Actor::System.to_text())
            .bind(us(c.valid_until))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            emit(
                &mut tx,
                kind::COUPON_EXPIRED,
                c.valid_until,
                events::coupon_expired(c),
            )
            .await?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(n)
    }

    async fn next_due(&self, now: Timestamp) -> StoreResult<Option<Timestamp>> {
        let next: Option<i64> = sqlx::query_scalar(
            "SELECT MIN(t) FROM (
                 SELECT MIN(claim_start) AS t FROM templates
                     WHERE announced = 'scheduled' AND claim_start > ?1
                 UNION ALL SELECT MIN(claim_end) FROM templates
                     WHERE announced = 'active' AND claim_end > ?1
                 UNION ALL SELECT MIN(expires_at) FROM templates
                     WHERE announced = 'ended' AND expires_at > ?1
                 UNION ALL SELECT MIN(valid_until) FROM coupons
                     WHERE status = 'unused' AND valid_until > ?1
                 UNION ALL SELECT MIN(deadline) FROM orders
                     WHERE state = 'locked' AND deadline > ?1
                 UNION ALL SELECT MIN(due_at) FROM reminders WHERE due_at > ?1
             )",
        )
        .bind(us(now))
        .fetch_one(&self.reader)
        .await
        .map_err(db_err)?;
        next.map(rows::ts).transpose()
    }
}

#[async_trait]
impl InboxStore for SqliteStore {
    async fn plan_reminders(&self, reminders: &[Reminder]) -> StoreResult<()> {
        if reminders.is_empty() {
            return Ok(());
        }
        let (_turn, mut tx) = self.begin_background().await?;
        for chunk in reminders.chunks(500) {
            let mut q = QueryBuilder::<Sqlite>::new(
                "INSERT INTO reminders (user_id, template_id, day, due_at) ",
            );
            q.push_values(chunk, |mut b, r| {
                b.push_bind(r.user_id.as_str().to_owned())
                    .push_bind(r.template_id.get())
                    .push_bind(r.day)
                    .push_bind(us(r.due_at));
            });
            q.push(" ON CONFLICT DO NOTHING");
            q.build().execute(&mut *tx).await.map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)
    }

    async fn cancel_reminder(
        &self,
        user: &UserId,
        template: TemplateId,
        day: i64,
    ) -> StoreResult<()> {
        sqlx::query(
            "DELETE FROM reminders WHERE user_id = ?1 AND template_id = ?2 AND day = ?3
             AND NOT EXISTS (SELECT 1 FROM coupons WHERE user_id = ?1 AND template_id = ?2
                 AND status = 'unused' AND valid_until >= ?4 AND valid_until < ?5)",
        )
        .bind(user.as_str())
        .bind(template.get())
        .bind(day)
        .bind(day * DAY_US)
        .bind((day + 1) * DAY_US)
        .execute(&self.writer)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn due_reminders(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<Reminder>> {
        let rows = sqlx::query("SELECT * FROM reminders WHERE due_at <= ? ORDER BY due_at LIMIT ?")
            .bind(us(now))
            .bind(i64::from(limit))
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::reminder).collect()
    }

    async fn send_reminder(
        &self,
        r: &Reminder,
        content: &MessageContent,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let (_turn, mut tx) = self.begin_background().await?;
        let gone =
            sqlx::query("DELETE FROM reminders WHERE user_id = ? AND template_id = ? AND day = ?")
                .bind(r.user_id.as_str())
                .bind(r.template_id.get())
                .bind(r.day)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        if gone.rows_affected() == 0 {
            return Ok(false);
        }
        let holds: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM coupons WHERE user_id = ? AND template_id = ? AND status = 'unused'
             AND valid_until >= ? AND valid_until < ? AND valid_until > ? LIMIT 1",
        )
        .bind(r.user_id.as_str())
        .bind(r.template_id.get())
        .bind(r.day * DAY_US)
        .bind((r.day + 1) * DAY_US)
        .bind(us(now))
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let sent = if holds.is_some() {
            let source = format!("reminder:{}:{}", r.template_id, r.day);
            deliver(&mut tx, content, &[(r.user_id.clone(), source)], now).await? == 1
        } else {
            false
        };
        tx.commit().await.map_err(db_err)?;
        Ok(sent)
    }

    async fn deliver_messages(
        &self,
        content: &MessageContent,
        recipients: &[(UserId, String)],
        now: Timestamp,
    ) -> StoreResult<u64> {
        let (_turn, mut tx) = self.begin_background().await?;
        let n = deliver(&mut tx, content, recipients, now).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(n)
    }

    async fn user_messages(
        &self,
        user: &UserId,
        after: Option<(bool, i64)>,
        limit: u32,
    ) -> StoreResult<Vec<Message>> {
        // Unread first (read = 0), then newest first within each group.
        let mut q = QueryBuilder::<Sqlite>::new(
            "SELECT m.id, m.user_id, c.kind, c.title, c.body, m.created_at, m.read_at
             FROM messages m JOIN message_contents c ON c.id = m.content_id
             WHERE m.user_id = ",
        );
        q.push_bind(user.as_str().to_owned());
        if let Some((read, id)) = after {
            q.push(" AND ((m.read_at IS NOT NULL) > ")
                .push_bind(read)
                .push(" OR ((m.read_at IS NOT NULL) = ")
                .push_bind(read)
                .push(" AND m.id < ")
                .push_bind(id)
                .push("))");
        }
        q.push(" ORDER BY (m.read_at IS NOT NULL), m.id DESC LIMIT ")
            .push_bind(i64::from(limit));
        let rows = q.build().fetch_all(&self.reader).await.map_err(db_err)?;
        rows.iter().map(rows::message).collect()
    }

    async fn mark_read(&self, user: &UserId, id: i64, now: Timestamp) -> StoreResult<Message> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "UPDATE messages SET read_at = COALESCE(read_at, ?) WHERE id = ? AND user_id = ?",
        )
        .bind(us(now))
        .bind(id)
        .bind(user.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let row = sqlx::query(
            "SELECT m.id, m.user_id, c.kind, c.title, c.body, m.created_at, m.read_at
             FROM messages m JOIN message_contents c ON c.id = m.content_id
             WHERE m.id = ? AND m.user_id = ?",
        )
        .bind(id)
        .bind(user.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound)?;
        let m = rows::message(&row)?;
        tx.commit().await.map_err(db_err)?;
        Ok(m)
    }
}
