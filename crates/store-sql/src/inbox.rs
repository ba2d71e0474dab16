//! Reminders and the inbox ([`InboxStore`]), on every backend.
//!
//! A reminder is per (user, template, day): a user holding several coupons of a template
//! that expire on one day gets one message. A message's text is stored once
//! (`message_contents`, by key) and each recipient gets a row naming its source, so a source
//! delivered twice reaches no one twice.
//!
//! [`InboxStore`]: coupond_store::InboxStore

use coupond_domain::{TemplateId, Timestamp, UserId};
use coupond_store::events::kind;
use coupond_store::{Message, MessageContent, Reminder, StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Dialect, Exec, Row, Work};
use coupond_store::InboxStore;

/// Reminders inserted per statement (a backend's own planning keeps to it too).
pub const CHUNK: usize = 500;

/// A message read with its content (`m`: messages, `c`: message_contents).
const MESSAGE_SELECT: &str = "SELECT m.id, m.user_id, c.kind, c.title, c.body, m.created_at, \
     m.read_at FROM messages m JOIN message_contents c ON c.id = m.content_id";

/// `reminders` in the order every backend plans them: by template, then key, so two planners
/// writing overlapping batches meet each key in the same order and neither waits on the other
/// in a cycle. The sort is stable: of two reminders with one key, the first given is planned.
pub fn in_lock_order(reminders: &[Reminder]) -> Vec<&Reminder> {
    let mut sorted: Vec<&Reminder> = reminders.iter().collect();
    sorted.sort_by(|a, b| {
        (a.template_id, a.user_id.as_str(), a.day).cmp(&(b.template_id, b.user_id.as_str(), b.day))
    });
    sorted
}

/// Plans `reminders`, skipping those already planned (and, of two in the batch with one key,
/// the second): a multi-row `VALUES` list per [`CHUNK`] rows, in one transaction.
pub async fn plan_reminders(db: &dyn Db, reminders: &[Reminder]) -> StoreResult<()> {
    if reminders.is_empty() {
        return Ok(());
    }
    let sorted = in_lock_order(reminders);
    let mut tx = db.begin(Work::Background).await?;
    for chunk in sorted.chunks(CHUNK) {
        let mut q = sql(
            "INSERT INTO reminders (user_id, template_id, day, span_start, span_end, due_at) VALUES ",
        );
        for (i, r) in chunk.iter().enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.push_bind(r.user_id.as_str())
                .push(", ")
                .push_bind(r.template_id.get())
                .push(", ")
                .push_bind(r.day)
                .push(", ")
                .push_bind(r.expiring.start)
                .push(", ")
                .push_bind(r.expiring.end)
                .push(", ")
                .push_bind(r.due_at)
                .push(")");
        }
        q.push(&db.dialect().on_conflict_nothing("day"));
        tx.execute(q).await?;
    }
    tx.commit().await
}

/// Drops the user's reminder for `template` on `day` unless they still hold an unused coupon
/// of it expiring that day.
pub async fn cancel_reminder(
    db: &dyn Db,
    user: &UserId,
    template: TemplateId,
    day: i64,
) -> StoreResult<()> {
    let q = sql(
        "DELETE FROM reminders WHERE user_id = $1 AND template_id = $2 AND day = $3
         AND NOT EXISTS (SELECT 1 FROM coupons c WHERE c.user_id = $1 AND c.template_id = $2
             AND c.status = 'unused' AND c.valid_until >= reminders.span_start
             AND c.valid_until < reminders.span_end)",
    )
    .bind(user.as_str())
    .bind(template.get())
    .bind(day);
    db.write(q).await.map(drop)
}

pub async fn due_reminders(db: &dyn Db, now: Timestamp, limit: u32) -> StoreResult<Vec<Reminder>> {
    let q = sql("SELECT * FROM reminders WHERE due_at <= $1 ORDER BY due_at LIMIT $2")
        .bind(now)
        .bind(limit);
    db.read_all(q).await?.iter().map(reminder_row).collect()
}

/// Takes reminder `r` off the plan and, if the user still holds an unused coupon expiring
/// that day (and not yet expired at `now`), delivers `content` to them; whether it did.
pub async fn send_reminder(
    db: &dyn Db,
    r: &Reminder,
    content: &MessageContent,
    now: Timestamp,
) -> StoreResult<bool> {
    let mut tx = db.begin(Work::Background).await?;
    let gone = tx
        .execute(
            sql("DELETE FROM reminders WHERE user_id = $1 AND template_id = $2 AND day = $3")
                .bind(r.user_id.as_str())
                .bind(r.template_id.get())
                .bind(r.day),
        )
        .await?;
    if gone == 0 {
        return Ok(false);
    }
    let holds = sql(
        "SELECT valid_until FROM coupons WHERE user_id = $1 AND template_id = $2
         AND status = 'unused' AND valid_until >= $3 AND valid_until < $4 AND valid_until > $5
         ORDER BY valid_until LIMIT 1",
    )
    .bind(r.user_id.as_str())
    .bind(r.template_id.get())
    .bind(r.expiring.start)
    .bind(r.expiring.end)
    .bind(now);
    let sent = if let Some(held) = tx.fetch_optional(holds).await? {
        // Email and SMS reminders follow the event (the messages consumer), in this
        // transaction with the inbox's, so a reminder is never half sent.
        let body = serde_json::json!({
            "user_id": r.user_id,
            "template_id": r.template_id,
            "valid_until": held.time("valid_until")?,
        });
        crate::scheduling::emit(&mut *tx, kind::COUPON_EXPIRING, now, body.to_string()).await?;
        let source = format!("reminder:{}:{}", r.template_id, r.day);
        deliver(
            &mut *tx,
            db.dialect(),
            content,
            &[(r.user_id.clone(), source)],
            now,
        )
        .await?
            == 1
    } else {
        false
    };
    tx.commit().await?;
    Ok(sent)
}

/// Delivers `content` to each `(user, source)` not delivered that source before; how many
/// it reached.
pub async fn deliver_messages(
    db: &dyn Db,
    content: &MessageContent,
    recipients: &[(UserId, String)],
    now: Timestamp,
) -> StoreResult<u64> {
    let mut tx = db.begin(Work::Background).await?;
    let n = deliver(&mut *tx, db.dialect(), content, recipients, now).await?;
    tx.commit().await?;
    Ok(n)
}

/// The user's messages, unread first, then newest first within each group; `after` is the
/// last of the previous page (read, id).
pub async fn user_messages(
    db: &dyn Db,
    user: &UserId,
    after: Option<(bool, i64)>,
    limit: u32,
) -> StoreResult<Vec<Message>> {
    let mut q = sql(format!("{MESSAGE_SELECT} WHERE m.user_id = "));
    q.push_bind(user.as_str());
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
    db.read_all(q).await?.iter().map(message_row).collect()
}

/// Marks the user's message `id` read at `now` (if it was not already); the message.
pub async fn mark_read(
    db: &dyn Db,
    user: &UserId,
    id: i64,
    now: Timestamp,
) -> StoreResult<Message> {
    let mut tx = db.begin(Work::Request).await?;
    tx.execute(
        sql("UPDATE messages SET read_at = COALESCE(read_at, $1) WHERE id = $2 AND user_id = $3")
            .bind(now)
            .bind(id)
            .bind(user.as_str()),
    )
    .await?;
    let row = tx
        .fetch_one(
            sql(format!(
                "{MESSAGE_SELECT} WHERE m.id = $1 AND m.user_id = $2"
            ))
            .bind(id)
            .bind(user.as_str()),
        )
        .await?;
    let m = message_row(&row)?;
    tx.commit().await?;
    Ok(m)
}

/// Stores `content` once (by key) and gives each recipient a message of it, skipping sources
/// they already have, inside the caller's transaction; how many messages it added.
pub(crate) async fn deliver<E: Exec + ?Sized>(
    ex: &mut E,
    d: Dialect,
    content: &MessageContent,
    recipients: &[(UserId, String)],
    now: Timestamp,
) -> StoreResult<u64> {
    ex.execute(
        sql(format!(
            "INSERT INTO message_contents (\"key\", kind, title, body, created_at)
             VALUES ($1, $2, $3, $4, $5){}",
            d.on_conflict_nothing("\"key\"")
        ))
        .bind(&content.key)
        .bind(&content.kind)
        .bind(&content.title)
        .bind(&content.body)
        .bind(now),
    )
    .await?;
    let content_id = ex
        .fetch_one(sql("SELECT id FROM message_contents WHERE \"key\" = $1").bind(&content.key))
        .await?
        .i64("id")?;
    let mut added = 0;
    for chunk in recipients.chunks(CHUNK) {
        let mut q = sql("INSERT INTO messages (user_id, content_id, source, created_at) VALUES ");
        for (i, (user, source)) in chunk.iter().enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.push_bind(user.as_str())
                .push(", ")
                .push_bind(content_id)
                .push(", ")
                .push_bind(source)
                .push(", ")
                .push_bind(now)
                .push(")");
        }
        q.push(&d.on_conflict_nothing("source"));
        added += ex.execute(q).await?;
    }
    Ok(added)
}

fn reminder_row(r: &Row) -> StoreResult<Reminder> {
    Ok(Reminder {
        user_id: UserId::parse(r.str("user_id")?).map_err(StoreError::other)?,
        template_id: TemplateId::new(r.i64("template_id")?).map_err(StoreError::other)?,
        day: r.i64("day")?,
        expiring: coupond_domain::Window::new(r.time("span_start")?, r.time("span_end")?)
            .map_err(StoreError::corrupt)?,
        due_at: r.time("due_at")?,
    })
}

fn message_row(r: &Row) -> StoreResult<Message> {
    Ok(Message {
        id: r.i64("id")?,
        user_id: UserId::parse(r.str("user_id")?).map_err(StoreError::other)?,
        kind: r.string("kind")?,
        title: r.string("title")?,
        body: r.string("body")?,
        created_at: r.time("created_at")?,
        read_at: r.opt_time("read_at")?,
    })
}

/// Reminders are planned by the backend ([`Backend::plan_reminders`]: PostgreSQL has its own
/// statement); the rest is written above.
#[async_trait::async_trait]
impl<B: Backend> InboxStore for SqlStore<B> {
    async fn plan_reminders(&self, reminders: &[Reminder]) -> StoreResult<()> {
        self.db.plan_reminders(reminders).await
    }
    async fn cancel_reminder(
        &self,
        user: &UserId,
        template: TemplateId,
        day: i64,
    ) -> StoreResult<()> {
        cancel_reminder(&self.db, user, template, day).await
    }
    async fn due_reminders(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<Reminder>> {
        due_reminders(&self.db, now, limit).await
    }
    async fn send_reminder(
        &self,
        r: &Reminder,
        content: &MessageContent,
        now: Timestamp,
    ) -> StoreResult<bool> {
        send_reminder(&self.db, r, content, now).await
    }
    async fn deliver_messages(
        &self,
        content: &MessageContent,
        recipients: &[(UserId, String)],
        now: Timestamp,
    ) -> StoreResult<u64> {
        deliver_messages(&self.db, content, recipients, now).await
    }
    async fn user_messages(
        &self,
        user: &UserId,
        after: Option<(bool, i64)>,
        limit: u32,
    ) -> StoreResult<Vec<Message>> {
        user_messages(&self.db, user, after, limit).await
    }
    async fn mark_read(&self, user: &UserId, id: i64, now: Timestamp) -> StoreResult<Message> {
        mark_read(&self.db, user, id, now).await
    }
}
