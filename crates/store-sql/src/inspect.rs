//! Reads for tests, audits and the load tool ([`InspectStore`](coupond_store::InspectStore)),
//! on every backend.

use coupond_domain::{CouponId, TemplateId, UserId};
use coupond_store::{Event, SpecOf, StoreError, StoreResult, TemplateAudit};

use crate::{sql, Db, Json, Row};

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
                db.claimed_column()
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

/// Implements [`InspectStore`](coupond_store::InspectStore) for a backend type that is a
/// [`Db`].
#[macro_export]
macro_rules! impl_inspect_store {
    ($t:ty) => {
        #[$crate::async_trait]
        impl $crate::reexport::store::InspectStore for $t {
            async fn count_coupons(
                &self,
                template: $crate::reexport::domain::TemplateId,
            ) -> $crate::reexport::store::StoreResult<i64> {
                $crate::inspect::count_coupons(self, template).await
            }
            async fn count_coupons_among(
                &self,
                template: $crate::reexport::domain::TemplateId,
                coupons: &[$crate::reexport::domain::CouponId],
            ) -> $crate::reexport::store::StoreResult<i64> {
                $crate::inspect::count_coupons_among(self, template, coupons).await
            }
            async fn coupon_owners(
                &self,
                template: $crate::reexport::domain::TemplateId,
            ) -> $crate::reexport::store::StoreResult<
                Vec<(
                    $crate::reexport::domain::CouponId,
                    $crate::reexport::domain::UserId,
                )>,
            > {
                $crate::inspect::coupon_owners(self, template).await
            }
            async fn audit_template(
                &self,
                template: $crate::reexport::domain::TemplateId,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::TemplateAudit> {
                $crate::inspect::audit_template(self, template).await
            }
            async fn outbox_head(
                &self,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::OutboxPosition> {
                $crate::Db::outbox_head(self).await
            }
            async fn events_after(
                &self,
                after: i64,
                limit: u32,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::store::Event>> {
                $crate::inspect::events_after(self, after, limit).await
            }
            async fn put_raw_spec(
                &self,
                record: $crate::reexport::store::SpecOf,
                json: &str,
            ) -> $crate::reexport::store::StoreResult<()> {
                $crate::inspect::put_raw_spec(self, record, json).await
            }
        }
    };
}
