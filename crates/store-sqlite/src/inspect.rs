//! Reads for tests, audits and the load tool on SQLite.

use coupond_store::{InspectStore, SpecOf};

use async_trait::async_trait;
use coupond_domain::{CouponId, TemplateId, UserId};
use coupond_store::{Event, OutboxPosition, StoreError, StoreResult, TemplateAudit};
use sqlx::{QueryBuilder, Sqlite};

use crate::rows::{self, db_err};
use crate::store::SqliteStore;

#[async_trait]
impl InspectStore for SqliteStore {
    async fn audit_template(&self, template: TemplateId) -> StoreResult<TemplateAudit> {
        let row = sqlx::query(
            "SELECT t.total_stock, t.claimed, t.per_user_limit,
                    (SELECT COUNT(*) FROM coupons c WHERE c.template_id = t.id) AS coupons,
                    (SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM coupons c
                        WHERE c.template_id = t.id GROUP BY c.user_id) per_user) AS max_per_user
             FROM templates t WHERE t.id = ?",
        )
        .bind(template.get())
        .fetch_one(&self.reader)
        .await
        .map_err(db_err)?;
        let get = |col: &str| -> StoreResult<i64> { sqlx::Row::try_get(&row, col).map_err(db_err) };
        Ok(TemplateAudit {
            total_stock: get("total_stock")?,
            claimed: get("claimed")?,
            coupons: get("coupons")?,
            per_user_limit: get("per_user_limit")?,
            max_per_user: get("max_per_user")?,
        })
    }

    async fn count_coupons(&self, template: TemplateId) -> StoreResult<i64> {
        sqlx::query_scalar("SELECT COUNT(*) FROM coupons WHERE template_id = ?")
            .bind(template.get())
            .fetch_one(&self.reader)
            .await
            .map_err(db_err)
    }

    async fn count_coupons_among(
        &self,
        template: TemplateId,
        coupons: &[CouponId],
    ) -> StoreResult<i64> {
        let mut total = 0;
        for chunk in coupons.chunks(500) {
            let mut b =
                QueryBuilder::<Sqlite>::new("SELECT COUNT(*) FROM coupons WHERE template_id = ");
            b.push_bind(template.get()).push(" AND id IN (");
            let mut ids = b.separated(", ");
            for c in chunk {
                ids.push_bind(c.get());
            }
            b.push(")");
            let n: i64 = b
                .build_query_scalar()
                .fetch_one(&self.reader)
                .await
                .map_err(db_err)?;
            total += n;
        }
        Ok(total)
    }

    async fn coupon_owners(&self, template: TemplateId) -> StoreResult<Vec<(CouponId, UserId)>> {
        let rows: Vec<(i64, String)> =
            sqlx::query_as("SELECT id, user_id FROM coupons WHERE template_id = ? ORDER BY id")
                .bind(template.get())
                .fetch_all(&self.reader)
                .await
                .map_err(db_err)?;
        rows.into_iter()
            .map(|(id, user)| {
                Ok((
                    CouponId::new(id).map_err(StoreError::other)?,
                    UserId::parse(&user).map_err(StoreError::other)?,
                ))
            })
            .collect()
    }

    async fn events_after(&self, after: i64, limit: u32) -> StoreResult<Vec<Event>> {
        let rows = sqlx::query("SELECT * FROM outbox WHERE id > ? ORDER BY id LIMIT ?")
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::event).collect()
    }

    async fn outbox_head(&self) -> StoreResult<OutboxPosition> {
        self.outbox_head_q().await
    }

    async fn put_raw_spec(&self, record: SpecOf, json: &str) -> StoreResult<()> {
        let (sql, id) = match record {
            SpecOf::Template(id) => ("UPDATE templates SET spec = ? WHERE id = ?", id.get()),
            SpecOf::Activity(id) => ("UPDATE activities SET spec = ? WHERE id = ?", id.get()),
        };
        let done = sqlx::query(sql)
            .bind(json)
            .bind(id)
            .execute(&self.writer)
            .await
            .map_err(db_err)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}
