//! [`MessagingStore`](coupond_store::MessagingStore) on every backend: contact points and choices,
//! message texts, and the delivery log the email and SMS couriers work through.

use std::collections::BTreeMap;

use coupond_domain::messaging::{
    Channel, Contact, Locale, MessageKind, MessageText, Phone, Preferences,
};
use coupond_domain::{Email, Timestamp, UserId, Zone};
use coupond_store::messaging::{
    ContactRecord, NewOutbound, Outbound, OutboundQuery, OutboundStatus, OutboundStep, StoredText,
};
use coupond_store::{StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Dialect, Exec, Row, Work};
use coupond_store::MessagingStore;

/// Rows per statement.
const CHUNK: usize = 200;
/// The longest provider answer kept.
const MAX_ANSWER: usize = 1_000;

const CONTACT_COLS: &str = "user_id, email, phone, locale, time_zone, preferences, updated_at";
const DELIVERY_COLS: &str = "id, channel, dedupe_key, user_id, kind, address, time_zone, subject, \
     body, status, attempts, next_at, answer, created_at, sent_at";

/// Sets `user`'s contact points (the row made if missing, its choices kept).
pub async fn put_contact(
    db: &dyn Db,
    user: &UserId,
    c: &Contact,
    now: Timestamp,
) -> StoreResult<ContactRecord> {
    let q = sql(format!(
        "INSERT INTO contacts (user_id, email, phone, locale, time_zone, preferences, updated_at)
         VALUES ($1, $2, $3, $4, $5, '{{}}', $6){}",
        db.dialect().on_conflict_update(
            "user_id",
            &["email", "phone", "locale", "time_zone", "updated_at"]
        )
    ))
    .bind(user.as_str())
    .bind(c.email.as_ref().map(Email::as_str))
    .bind(c.phone.as_ref().map(Phone::as_str))
    .bind(c.locale.as_ref().map(Locale::as_str))
    .bind(c.zone.map(|z| z.name()))
    .bind(now);
    write_then_read(db, q, user).await
}

/// Sets `user`'s choices (the row made if missing, its contact points kept).
pub async fn put_preferences(
    db: &dyn Db,
    user: &UserId,
    p: &Preferences,
    now: Timestamp,
) -> StoreResult<ContactRecord> {
    let json = serde_json::to_string(p).map_err(StoreError::other)?;
    let q = sql(format!(
        "INSERT INTO contacts (user_id, preferences, updated_at) VALUES ($1, $2, $3){}",
        db.dialect()
            .on_conflict_update("user_id", &["preferences", "updated_at"])
    ))
    .bind(user.as_str())
    .bind(json)
    .bind(now);
    write_then_read(db, q, user).await
}

async fn write_then_read(
    db: &dyn Db,
    q: crate::Query,
    user: &UserId,
) -> StoreResult<ContactRecord> {
    let mut tx = db.begin(Work::Request).await?;
    tx.execute(q).await?;
    let q = sql(format!(
        "SELECT {CONTACT_COLS} FROM contacts WHERE user_id = $1"
    ))
    .bind(user.as_str());
    let row = tx.fetch_one(q).await?;
    tx.commit().await?;
    contact_row(&row)
}

pub async fn contact(db: &dyn Db, user: &UserId) -> StoreResult<Option<ContactRecord>> {
    let q = sql(format!(
        "SELECT {CONTACT_COLS} FROM contacts WHERE user_id = $1"
    ))
    .bind(user.as_str());
    db.read_optional(q)
        .await?
        .as_ref()
        .map(contact_row)
        .transpose()
}

pub async fn contacts(db: &dyn Db, users: &[UserId]) -> StoreResult<Vec<ContactRecord>> {
    let mut out = Vec::new();
    for chunk in users.chunks(CHUNK) {
        let mut q = sql(format!(
            "SELECT {CONTACT_COLS} FROM contacts WHERE user_id IN ("
        ));
        q.push_binds(chunk.iter().map(UserId::as_str)).push(")");
        for r in db.read_all(q).await? {
            out.push(contact_row(&r)?);
        }
    }
    Ok(out)
}

fn contact_row(r: &Row) -> StoreResult<ContactRecord> {
    let corrupt =
        |what: &str, e: &dyn std::fmt::Display| StoreError::corrupt(format!("contact {what}: {e}"));
    let user_id = UserId::parse(r.str("user_id")?).map_err(|e| corrupt("user_id", &e))?;
    let email = r
        .opt_str("email")?
        .map(Email::parse)
        .transpose()
        .map_err(|e| corrupt("email", &e))?;
    let phone = r
        .opt_str("phone")?
        .map(Phone::parse)
        .transpose()
        .map_err(|e| corrupt("phone", &e))?;
    let locale = r
        .opt_str("locale")?
        .map(Locale::parse)
        .transpose()
        .map_err(|e| corrupt("locale", &e))?;
    let zone = r
        .opt_str("time_zone")?
        .map(Zone::parse)
        .transpose()
        .map_err(|e| corrupt("time_zone", &e))?;
    Ok(ContactRecord {
        user_id,
        contact: Contact {
            email,
            phone,
            locale,
            zone,
        },
        preferences: preferences(r.str("preferences")?)?,
        updated_at: r.time("updated_at")?,
    })
}

/// Stored choices, tolerant of channels and kinds this version does not know (a newer one
/// wrote them): those are passed over.
fn preferences(text: &str) -> StoreResult<Preferences> {
    let raw: BTreeMap<String, BTreeMap<String, bool>> =
        serde_json::from_str(text).map_err(|e| StoreError::corrupt(format!("preferences: {e}")))?;
    let mut choices = BTreeMap::new();
    for (channel, kinds) in raw {
        let Some(c) = Channel::parse(&channel) else {
            continue;
        };
        let known: BTreeMap<MessageKind, bool> = kinds
            .into_iter()
            .filter_map(|(k, on)| Some((MessageKind::parse(&k)?, on)))
            .filter(|(k, _)| k.purpose() == coupond_domain::messaging::Purpose::Marketing)
            .collect();
        choices.insert(c, known);
    }
    Preferences::new(choices).map_err(|e| StoreError::corrupt(format!("preferences: {e}")))
}

pub async fn message_texts(db: &dyn Db) -> StoreResult<Vec<StoredText>> {
    let q = sql("SELECT kind, locale, subject, body, sms, updated_at FROM message_texts ORDER BY kind, locale");
    db.read_all(q).await?.iter().map(text_row).collect()
}

pub async fn put_message_text(
    db: &dyn Db,
    kind: MessageKind,
    locale: &Locale,
    t: &MessageText,
    now: Timestamp,
) -> StoreResult<StoredText> {
    let q = sql(format!(
        "INSERT INTO message_texts (kind, locale, subject, body, sms, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6){}",
        db.dialect()
            .on_conflict_update("kind, locale", &["subject", "body", "sms", "updated_at"])
    ))
    .bind(kind.as_str())
    .bind(locale.as_str())
    .bind(t.subject.as_str())
    .bind(t.body.as_str())
    .bind(t.sms.as_str())
    .bind(now);
    db.write(q).await?;
    Ok(StoredText {
        kind,
        locale: locale.clone(),
        text: t.clone(),
        updated_at: now,
    })
}

pub async fn drop_message_text(
    db: &dyn Db,
    kind: MessageKind,
    locale: &Locale,
) -> StoreResult<bool> {
    let q = sql("DELETE FROM message_texts WHERE kind = $1 AND locale = $2")
        .bind(kind.as_str())
        .bind(locale.as_str());
    Ok(db.write(q).await? > 0)
}

fn text_row(r: &Row) -> StoreResult<StoredText> {
    let kind = r.str("kind")?;
    Ok(StoredText {
        kind: MessageKind::parse(kind)
            .ok_or_else(|| StoreError::corrupt(format!("message kind {kind}")))?,
        locale: Locale::parse(r.str("locale")?).map_err(|e| StoreError::corrupt(e.to_string()))?,
        text: MessageText {
            subject: r.string("subject")?,
            body: r.string("body")?,
            sms: r.string("sms")?,
        },
        updated_at: r.time("updated_at")?,
    })
}

/// Queues `ds`, skipping a `(channel, key)` queued already; how many were new.
pub async fn queue_outbound(db: &dyn Db, ds: &[NewOutbound], now: Timestamp) -> StoreResult<u64> {
    let mut tx = db.begin(Work::Background).await?;
    let added = queue_in(&mut *tx, db.dialect(), ds, now).await?;
    tx.commit().await?;
    Ok(added)
}

/// Queues `ds` inside the caller's transaction, skipping those queued already; how many were
/// new.
pub(crate) async fn queue_in<E: Exec + ?Sized>(
    ex: &mut E,
    dialect: Dialect,
    ds: &[NewOutbound],
    now: Timestamp,
) -> StoreResult<u64> {
    let mut added = 0;
    for chunk in ds.chunks(CHUNK) {
        let mut q = sql(
            "INSERT INTO outbound_messages (channel, dedupe_key, user_id, kind, address, time_zone, \
             subject, body, status, attempts, next_at, created_at) VALUES ",
        );
        for (i, d) in chunk.iter().enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.push_bind(d.channel.as_str()).push(", ");
            q.push_bind(d.key.as_str()).push(", ");
            q.push_bind(d.user_id.as_ref().map(UserId::as_str))
                .push(", ");
            q.push_bind(d.kind.as_str()).push(", ");
            q.push_bind(d.address.as_str()).push(", ");
            q.push_bind(d.zone.name()).push(", ");
            q.push_bind(d.subject.as_str()).push(", ");
            q.push_bind(d.body.as_str()).push(", 'queued', 0, ");
            q.push_bind(d.due_at).push(", ");
            q.push_bind(now).push(")");
        }
        q.push(&dialect.on_conflict_nothing("dedupe_key"));
        added += ex.execute(q).await?;
    }
    Ok(added)
}

pub async fn due_outbound(
    db: &dyn Db,
    channel: Channel,
    now: Timestamp,
    limit: u32,
) -> StoreResult<Vec<Outbound>> {
    let q = sql(format!(
        "SELECT {DELIVERY_COLS} FROM outbound_messages WHERE channel = $1 AND status = 'queued'
         AND next_at <= $2 ORDER BY next_at, id LIMIT $3"
    ))
    .bind(channel.as_str())
    .bind(now)
    .bind(limit);
    db.read_all(q).await?.iter().map(outbound_row).collect()
}

/// Moves queued delivery `id` from due at `now` to due at `until`; whether it was due.
pub async fn claim_outbound(
    db: &dyn Db,
    id: i64,
    now: Timestamp,
    until: Timestamp,
) -> StoreResult<bool> {
    let q = sql("UPDATE outbound_messages SET next_at = $1
         WHERE id = $2 AND status = 'queued' AND next_at <= $3")
    .bind(until)
    .bind(id)
    .bind(now);
    Ok(db.write(q).await? == 1)
}

/// Records `step` for queued delivery `id`.
pub async fn record_outbound(
    db: &dyn Db,
    id: i64,
    step: &OutboundStep,
    now: Timestamp,
) -> StoreResult<()> {
    let clip = |s: &str| s.chars().take(MAX_ANSWER).collect::<String>();
    let q = match step {
        OutboundStep::Sent { answer } => sql(
            "UPDATE outbound_messages SET status = 'sent', attempts = attempts + 1, next_at = $1,
             sent_at = $1, answer = $2, body = CASE WHEN kind = $3 THEN '' ELSE body END
             WHERE id = $4 AND status = 'queued'",
        )
        .bind(now)
        .bind(clip(answer))
        // A one-time link (a merchant's invitation) is kept no longer than its email.
        .bind(MessageKind::OperatorInvited.as_str()),
        OutboundStep::Retry { next_at, answer } => sql(
            "UPDATE outbound_messages SET attempts = attempts + 1, next_at = $1, answer = $2
             WHERE id = $3 AND status = 'queued'",
        )
        .bind(*next_at)
        .bind(clip(answer)),
        OutboundStep::Defer { next_at } => {
            sql("UPDATE outbound_messages SET next_at = $1 WHERE id = $2 AND status = 'queued'")
                .bind(*next_at)
        }
        OutboundStep::Failed { answer } => sql(
            "UPDATE outbound_messages SET status = 'failed', attempts = attempts + 1, next_at = $1,
             answer = $2, body = CASE WHEN kind = $3 THEN '' ELSE body END
             WHERE id = $4 AND status = 'queued'",
        )
        .bind(now)
        .bind(clip(answer))
        // A one-time link (a merchant's invitation) is kept no longer than its email.
        .bind(MessageKind::OperatorInvited.as_str()),
    };
    let mut tx = db.begin(Work::Background).await?;
    tx.execute(q.bind(id)).await?;
    tx.commit().await
}

pub async fn outbound(db: &dyn Db, f: &OutboundQuery) -> StoreResult<Vec<Outbound>> {
    let mut q = sql(format!(
        "SELECT {DELIVERY_COLS} FROM outbound_messages WHERE id < "
    ));
    q.push_bind(f.before.unwrap_or(i64::MAX));
    if let Some(u) = &f.user_id {
        q.push(" AND user_id = ").push_bind(u.as_str());
    }
    if let Some(c) = f.channel {
        q.push(" AND channel = ").push_bind(c.as_str());
    }
    if let Some(s) = f.status {
        q.push(" AND status = ").push_bind(s.as_str());
    }
    q.push(" ORDER BY id DESC LIMIT ").push_bind(f.limit);
    db.read_all(q).await?.iter().map(outbound_row).collect()
}

fn outbound_row(r: &Row) -> StoreResult<Outbound> {
    let bad = |what: &str, v: &str| StoreError::corrupt(format!("delivery {what} {v}"));
    let (channel, kind, status, zone) = (
        r.str("channel")?,
        r.str("kind")?,
        r.str("status")?,
        r.str("time_zone")?,
    );
    Ok(Outbound {
        id: r.i64("id")?,
        channel: Channel::parse(channel).ok_or_else(|| bad("channel", channel))?,
        key: r.string("dedupe_key")?,
        user_id: r
            .opt_str("user_id")?
            .map(UserId::parse)
            .transpose()
            .map_err(|e| bad("user", &e))?,
        kind: MessageKind::parse(kind).ok_or_else(|| bad("kind", kind))?,
        address: r.string("address")?,
        zone: Zone::parse(zone).map_err(|_| bad("time zone", zone))?,
        subject: r.string("subject")?,
        body: r.string("body")?,
        status: OutboundStatus::parse(status).ok_or_else(|| bad("status", status))?,
        attempts: i32::try_from(r.i64("attempts")?).map_err(|e| bad("attempts", &e.to_string()))?,
        next_at: r.time("next_at")?,
        answer: r.opt_string("answer")?,
        created_at: r.time("created_at")?,
        sent_at: r.opt_time("sent_at")?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> MessagingStore for SqlStore<B> {
    async fn put_contact(
        &self,
        user: &UserId,
        contact: &Contact,
        now: Timestamp,
    ) -> StoreResult<coupond_store::ContactRecord> {
        put_contact(&self.db, user, contact, now).await
    }
    async fn put_preferences(
        &self,
        user: &UserId,
        p: &Preferences,
        now: Timestamp,
    ) -> StoreResult<coupond_store::ContactRecord> {
        put_preferences(&self.db, user, p, now).await
    }
    async fn contact(&self, user: &UserId) -> StoreResult<Option<coupond_store::ContactRecord>> {
        contact(&self.db, user).await
    }
    async fn contacts(&self, users: &[UserId]) -> StoreResult<Vec<coupond_store::ContactRecord>> {
        contacts(&self.db, users).await
    }
    async fn message_texts(&self) -> StoreResult<Vec<coupond_store::StoredText>> {
        message_texts(&self.db).await
    }
    async fn put_message_text(
        &self,
        kind: MessageKind,
        locale: &Locale,
        text: &MessageText,
        now: Timestamp,
    ) -> StoreResult<coupond_store::StoredText> {
        put_message_text(&self.db, kind, locale, text, now).await
    }
    async fn drop_message_text(&self, kind: MessageKind, locale: &Locale) -> StoreResult<bool> {
        drop_message_text(&self.db, kind, locale).await
    }
    async fn queue_outbound(
        &self,
        ds: &[coupond_store::NewOutbound],
        now: Timestamp,
    ) -> StoreResult<u64> {
        queue_outbound(&self.db, ds, now).await
    }
    async fn due_outbound(
        &self,
        channel: Channel,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<coupond_store::Outbound>> {
        due_outbound(&self.db, channel, now, limit).await
    }
    async fn claim_outbound(&self, id: i64, now: Timestamp, until: Timestamp) -> StoreResult<bool> {
        claim_outbound(&self.db, id, now, until).await
    }
    async fn record_outbound(
        &self,
        id: i64,
        step: &coupond_store::OutboundStep,
        now: Timestamp,
    ) -> StoreResult<()> {
        record_outbound(&self.db, id, step, now).await
    }
    async fn outbound(
        &self,
        q: &coupond_store::OutboundQuery,
    ) -> StoreResult<Vec<coupond_store::Outbound>> {
        outbound(&self.db, q).await
    }
}
