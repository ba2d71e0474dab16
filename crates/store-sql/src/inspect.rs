//! Reads for tests, audits and the load tool ([`InspectStore`](coupond_store::InspectStore)),
//! on every backend.

use coupond_domain::{CouponId, TemplateId, UserId};
use coupond_store::{Event, SpecOf, StoreError, StoreResult, TemplateAudit};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Json, Row};
use coupond_store::InspectStore;
use coupond_store::OutboxPosition;

pub async fn audit_template(db: &dyn Db, template: TemplateId) -> StoreResult<TemplateAudit> {
    let r = db
        .read_one(
            sql(format!(
                "SELECT total_stock, per_user_limit, {} AS claimed,
                        (SELECT COUNT(*) FROM coupons c WHERE c.template_id = $1) AS coupons,
                        (SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM coupons c
                            WHERE c.template_id = $1 GROUP BY c.user_id) per_user)
                            AS max_per_user
                 FROM templates WHERE id = $1",
                db.dialect().claimed_column()
            ))
            .bind(template.get()),
        )
        .await?;
    Ok(TemplateAudit {
        total_stock: r.i64("total_stock")?,
        claimed: r.i64("claimed")?,
        coupons: r.i64("coupons")?,
        per_user_limit: r.i64("per_user_limit")?,
        max_per_user: r.i64("max_per_user")?,
    })
}

pub async fn count_coupons(db: &dyn Db, template: TemplateId) -> StoreResult<i64> {
    db.read_one(
        sql("SELECT COUNT(*) AS n FROM coupons WHERE template_id = $1").bind(template.get()),
    )
    .await?
    .i64("n")
}

pub async fn count_coupons_among(
    db: &dyn Db,
    template: TemplateId,
    coupons: &[CouponId],
) -> StoreResult<i64> {
    let ids: Vec<i64> = coupons.iter().map(|c| c.get()).collect();
    let q = sql(format!(
        "SELECT COUNT(*) AS n FROM coupons WHERE template_id = $1 AND {}",
        db.dialect().in_list("id", 2)
    ))
    .bind(template.get())
    .bind(ids);
    db.read_one(q).await?.i64("n")
}

pub async fn coupon_owners(
    db: &dyn Db,
    template: TemplateId,
) -> StoreResult<Vec<(CouponId, UserId)>> {
    let q = sql("SELECT id, user_id FROM coupons WHERE template_id = $1 ORDER BY id")
        .bind(template.get());
    db.read_all(q)
        .await?
        .iter()
        .map(|r| {
            Ok((
                CouponId::new(r.i64("id")?).map_err(StoreError::other)?,
                UserId::parse(r.str("user_id")?).map_err(StoreError::other)?,
            ))
        })
        .collect()
}

pub async fn events_after(db: &dyn Db, after: i64, limit: u32) -> StoreResult<Vec<Event>> {
    let q = sql("SELECT * FROM outbox WHERE id > $1 ORDER BY id LIMIT $2")
        .bind(after)
        .bind(limit);
    db.read_all(q).await?.iter().map(event_row).collect()
}

/// An outbox row as an [`Event`].
pub fn event_row(r: &Row) -> StoreResult<Event> {
    Ok(Event {
        id: r.i64("id")?,
        // Only a backend that orders the outbox by transaction keeps the column.
        txid: if r.has("txid") { r.i64("txid")? } else { 0 },
        kind: r.string("kind")?,
        at: r.time("at")?,
        body: serde_json::from_str(r.str("body")?).map_err(StoreError::other)?,
    })
}

pub async fn put_raw_spec(db: &dyn Db, record: SpecOf, json: &str) -> StoreResult<()> {
    let (table, id) = match record {
        SpecOf::Template(id) => ("templates", id.get()),
        SpecOf::Activity(id) => ("activities", id.get()),
    };
    let q = sql(format!("UPDATE {table} SET spec = $1 WHERE id = $2"))
        .bind(Json(json.to_owned()))
        .bind(id);
    match db.write(q).await? {
        0 => Err(StoreError::NotFound),
        _ => Ok(()),
    }
}

#[async_trait::async_trait]
impl<B: Backend> InspectStore for SqlStore<B> {
    async fn count_coupons(&self, template: TemplateId) -> StoreResult<i64> {
        count_coupons(&self.db, template).await
    }
    async fn count_coupons_among(
        &self,
        template: TemplateId,
        coupons: &[CouponId],
    ) -> StoreResult<i64> {
        count_coupons_among(&self.db, template, coupons).await
    }
    async fn coupon_owners(&self, template: TemplateId) -> StoreResult<Vec<(CouponId, UserId)>> {
        coupon_owners(&self.db, template).await
    }
    async fn audit_template(&self, template: TemplateId) -> StoreResult<TemplateAudit> {
        audit_template(&self.db, template).await
    }
    async fn outbox_head(&self) -> StoreResult<OutboxPosition> {
        self.db.outbox_head().await
    }
    async fn events_after(&self, after: i64, limit: u32) -> StoreResult<Vec<Event>> {
        events_after(&self.db, after, limit).await
    }
    async fn put_raw_spec(&self, record: SpecOf, json: &str) -> StoreResult<()> {
        put_raw_spec(&self.db, record, json).await
    }
}
