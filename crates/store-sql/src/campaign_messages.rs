//! [`CampaignMessageStore`](coupond_store::CampaignMessageStore) on every backend: operators' campaign messages, capped per owner per local
//! day, and their recipients paged by user id (holders through `coupons_by_template
//! (template_id, user_id)`, a segment through `user_tags`), the last one the cursor.

use coupond_domain::messaging::Campaign;
use coupond_domain::{Actor, Segment, Tag, TemplateId, Timestamp, UserId};
use coupond_store::campaign_messages::{
    CampaignMessage, CampaignPage, NewCampaignMessage, Recipients,
};
use coupond_store::{Conflict, Page, StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Query, Row, Work};
use coupond_store::CampaignMessageStore;

const COLS: &str = "id, template_id, owner, actor, title, message, segment, next_after, \
     recipients, queued, created_at, finished_at";

pub async fn insert(
    db: &dyn Db,
    new: &NewCampaignMessage<'_>,
    since: Timestamp,
    max: u32,
    now: Timestamp,
) -> StoreResult<CampaignMessage> {
    let c = new.campaign;
    let segment = c
        .segment()
        .map(serde_json::to_string)
        .transpose()
        .map_err(StoreError::other)?;
    let mut tx = db.begin(Work::Request).await?;
    // One owner's messages take turns, so two cannot both count below the cap.
    tx.lock(&format!("campaign_messages:{}", new.owner)).await?;
    let q = sql(format!(
        "INSERT INTO campaign_messages (template_id, owner, actor, title, message, segment, created_at)
         SELECT $1, $2, $3, $4, $5, $6, $7
         WHERE (SELECT count(*) FROM campaign_messages WHERE owner = $2 AND created_at >= $8) < $9
         RETURNING {COLS}"
    ))
    .bind(new.template.get())
    .bind(new.owner)
    .bind(new.actor.to_text())
    .bind(c.title())
    .bind(c.message())
    .bind(segment)
    .bind(now)
    .bind(since)
    .bind(i64::from(max));
    let row = tx
        .fetch_optional(q)
        .await?
        .ok_or(StoreError::Conflict(Conflict::Limit))?;
    coupond_store::audit::created(row.i64("id")?);
    tx.commit().await?;
    message_row(&row)
}

pub async fn one(db: &dyn Db, id: i64) -> StoreResult<CampaignMessage> {
    let q = sql(format!(
        "SELECT {COLS} FROM campaign_messages WHERE id = $1"
    ))
    .bind(id);
    message_row(&db.read_one(q).await?)
}

pub async fn of_template(
    db: &dyn Db,
    template: TemplateId,
    sender: Option<i64>,
    page: Page,
) -> StoreResult<Vec<CampaignMessage>> {
    let mut q = sql(format!(
        "SELECT {COLS} FROM campaign_messages WHERE template_id = "
    ));
    q.push_bind(template.get());
    if let Some(owner) = sender {
        q.push(" AND owner = ").push_bind(owner);
    }
    if let Some(after) = page.after {
        q.push(" AND id < ").push_bind(after);
    }
    q.push(" ORDER BY id DESC LIMIT ")
        .push_bind(i64::from(page.limit));
    db.read_all(q).await?.iter().map(message_row).collect()
}

pub async fn next(db: &dyn Db) -> StoreResult<Option<CampaignMessage>> {
    let q = sql(format!(
        "SELECT {COLS} FROM campaign_messages WHERE finished_at IS NULL ORDER BY id LIMIT 1"
    ));
    db.read_optional(q)
        .await?
        .as_ref()
        .map(message_row)
        .transpose()
}

pub async fn recipients(
    db: &dyn Db,
    m: &CampaignMessage,
    now: Timestamp,
    limit: u32,
) -> StoreResult<Recipients> {
    if m.campaign.segment().is_some_and(|s| s.any.is_empty()) {
        // A merchant's segment of tags none of which are shared: nobody.
        return Ok(Recipients::default());
    }
    let mut q = match m.campaign.segment() {
        None => holders(m, now),
        Some(s) => segment(m, s),
    };
    q.push(" LIMIT ").push_bind(i64::from(limit));
    let rows = db.read_all(q).await?;
    let next = match rows.last() {
        Some(last) if rows.len() >= limit as usize => Some(last.string("user_id")?),
        _ => None,
    };
    // A user id this version cannot read (written by hand, or by a newer coupond) is passed
    // over rather than stopping the message for everyone.
    let users = rows
        .iter()
        .filter_map(|r| UserId::parse(r.str("user_id").ok()?).ok())
        .collect();
    Ok(Recipients { users, next })
}

/// The holders of an unused coupon of the template valid at `now`, after the cursor.
fn holders(m: &CampaignMessage, now: Timestamp) -> Query {
    let mut q = sql("SELECT DISTINCT user_id FROM coupons WHERE template_id = ");
    q.push_bind(m.template_id.get());
    if let Some(after) = &m.cursor {
        q.push(" AND user_id > ").push_bind(after.as_str());
    }
    q.push(" AND status = 'unused' AND valid_until > ")
        .push_bind(now)
        .push(" ORDER BY user_id");
    q
}

/// The segment's users (seen since its `active_within_days` when it has one), by user id
/// after the cursor.
fn segment(m: &CampaignMessage, s: &Segment) -> Query {
    let since = s.seen_since(m.created_at);
    let mut q = sql(match since {
        Some(_) => {
            "SELECT DISTINCT t.user_id FROM user_tags t \
             JOIN user_activity a ON a.user_id = t.user_id WHERE t.tag IN ("
        }
        None => "SELECT DISTINCT t.user_id FROM user_tags t WHERE t.tag IN (",
    });
    // At most 20 tags: one parameter each.
    q.push_binds(s.any.iter().map(Tag::as_str)).push(")");
    if let Some(since) = since {
        q.push(" AND a.last_seen_at >= ").push_bind(since);
    }
    if let Some(after) = &m.cursor {
        q.push(" AND t.user_id > ").push_bind(after.as_str());
    }
    q.push(" ORDER BY t.user_id");
    q
}

pub async fn send_page(db: &dyn Db, page: &CampaignPage<'_>, now: Timestamp) -> StoreResult<()> {
    let mut tx = db.begin(Work::Background).await?;
    let lock = db.dialect().lock_rows(true);
    let q = sql(format!(
        "SELECT next_after FROM campaign_messages WHERE id = $1 AND finished_at IS NULL{lock}"
    ))
    .bind(page.id);
    match tx.fetch_optional(q).await? {
        Some(row) if row.opt_str("next_after")? == page.from => {}
        // Finished, or moved on by another instance since this page was read.
        _ => return Ok(()),
    }
    let mut reached = 0;
    for (content, recipients) in page.inbox {
        reached += crate::inbox::deliver(&mut *tx, db.dialect(), content, recipients, now).await?;
    }
    let queued = crate::messaging::queue_in(&mut *tx, db.dialect(), page.outbound, now).await?;
    let q = sql(
        "UPDATE campaign_messages SET next_after = $1, recipients = recipients + $2, \
         queued = queued + $3, finished_at = $4 WHERE id = $5",
    )
    .bind(page.next)
    .bind(reached as i64)
    .bind(queued as i64)
    .bind(page.next.is_none().then_some(now))
    .bind(page.id);
    tx.execute(q).await?;
    tx.commit().await
}

fn message_row(r: &Row) -> StoreResult<CampaignMessage> {
    let corrupt = |e: &dyn std::fmt::Display| StoreError::corrupt(format!("campaign message: {e}"));
    let segment: Option<Segment> = r
        .opt_str("segment")?
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| corrupt(&e))?;
    let campaign = Campaign::stored(r.string("title")?, r.string("message")?, segment);
    Ok(CampaignMessage {
        id: r.i64("id")?,
        template_id: TemplateId::new(r.i64("template_id")?).map_err(|e| corrupt(&e))?,
        owner: r.i64("owner")?,
        actor: Actor::read(r.str("actor")?),
        campaign,
        cursor: r.opt_string("next_after")?,
        recipients: r.i64("recipients")?.max(0) as u64,
        queued: r.i64("queued")?.max(0) as u64,
        created_at: r.time("created_at")?,
        finished_at: r.opt_time("finished_at")?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> CampaignMessageStore for SqlStore<B> {
    async fn insert_campaign_message(
        &self,
        new: &NewCampaignMessage<'_>,
        since: Timestamp,
        max: u32,
        now: Timestamp,
    ) -> StoreResult<CampaignMessage> {
        insert(&self.db, new, since, max, now).await
    }
    async fn campaign_message(&self, id: i64) -> StoreResult<CampaignMessage> {
        one(&self.db, id).await
    }
    async fn template_campaign_messages(
        &self,
        template: TemplateId,
        sender: Option<i64>,
        page: Page,
    ) -> StoreResult<Vec<CampaignMessage>> {
        of_template(&self.db, template, sender, page).await
    }
    async fn next_campaign_message(&self) -> StoreResult<Option<CampaignMessage>> {
        next(&self.db).await
    }
    async fn campaign_recipients(
        &self,
        m: &CampaignMessage,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Recipients> {
        recipients(&self.db, m, now, limit).await
    }
    async fn send_campaign_page(&self, page: &CampaignPage<'_>, now: Timestamp) -> StoreResult<()> {
        send_page(&self.db, page, now).await
    }
}
