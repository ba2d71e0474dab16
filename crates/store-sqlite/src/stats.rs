//! Stats and reconciliation on SQLite: aggregates over the coupons and their log.

use async_trait::async_trait;
use coupond_store::{ReportStore, Violation};
use std::collections::HashMap;

use coupond_domain::{TemplateId, Timestamp};
use coupond_store::{CouponCounts, StoreError, StoreResult, UsageRow};
use sqlx::{QueryBuilder, Sqlite};

use crate::rows::{db_err, ts};
use crate::store::{us, SqliteStore};

const HOUR_US: i64 = 3_600_000_000;

fn template_id(v: i64) -> StoreResult<TemplateId> {
    TemplateId::new(v).map_err(StoreError::other)
}

#[async_trait]
impl ReportStore for SqliteStore {
    async fn coupon_counts(
        &self,
        templates: &[TemplateId],
        now: Timestamp,
        hours: u32,
    ) -> StoreResult<Vec<(TemplateId, CouponCounts)>> {
        let mut out: HashMap<i64, CouponCounts> = templates
            .iter()
            .map(|t| (t.get(), CouponCounts::default()))
            .collect();
        if templates.is_empty() {
            return Ok(vec![]);
        }
        let ids = |q: &mut QueryBuilder<'_, Sqlite>| {
            let mut sep = q.separated(", ");
            for t in templates {
                sep.push_bind(t.get());
            }
        };
        let mut q = QueryBuilder::<Sqlite>::new(
            "SELECT template_id,
                    CASE WHEN status = 'unused' AND valid_until <= ",
        );
        q.push_bind(us(now)).push(
            " THEN 'expired' ELSE status END AS shown,
                    COUNT(*), COALESCE(SUM(CASE WHEN status = 'used' THEN discount END), 0),
                    COUNT(issuance_id)
             FROM coupons WHERE template_id IN (",
        );
        ids(&mut q);
        q.push(") GROUP BY template_id, shown");
        let rows: Vec<(i64, String, i64, i64, i64)> = q
            .build_query_as()
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        for (t, status, n, discount, issued) in rows {
            let c = out.entry(t).or_default();
            c.issued += issued;
            c.discount += discount;
            match status.as_str() {
                "unused" => c.unused += n,
                "locked" => c.locked += n,
                "used" => c.used += n,
                "expired" => c.expired += n,
                _ => c.revoked += n,
            }
        }
        let since = us(now) - i64::from(hours) * HOUR_US;
        let mut q = QueryBuilder::<Sqlite>::new("SELECT c.template_id, (e.at / ");
        q.push(HOUR_US).push(") * ").push(HOUR_US).push(
            " AS hour,
                    SUM(e.to_status = 'unused' AND e.from_status IS NULL),
                    SUM(e.to_status = 'used')
             FROM coupon_events e JOIN coupons c ON c.id = e.coupon_id
             WHERE e.at >= ",
        );
        q.push_bind(since).push(" AND e.at <= ").push_bind(us(now));
        q.push(" AND c.template_id IN (");
        ids(&mut q);
        q.push(") GROUP BY c.template_id, hour ORDER BY hour");
        let rows: Vec<(i64, i64, i64, i64)> = q
            .build_query_as()
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        for (t, hour, created, used) in rows {
            if created + used > 0 {
                out.entry(t)
                    .or_default()
                    .per_hour
                    .push((ts(hour)?, created, used));
            }
        }
        templates
            .iter()
            .map(|t| Ok((*t, out.remove(&t.get()).unwrap_or_default())))
            .collect()
    }

    async fn usage_between(&self, from: Timestamp, to: Timestamp) -> StoreResult<Vec<UsageRow>> {
        let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
            "SELECT template_id, COUNT(*), COALESCE(SUM(discount), 0) FROM coupons
             WHERE used_at >= ? AND used_at < ? AND status = 'used'
             GROUP BY template_id ORDER BY template_id",
        )
        .bind(us(from))
        .bind(us(to))
        .fetch_all(&self.reader)
        .await
        .map_err(db_err)?;
        rows.into_iter()
            .map(|(t, used, discount)| {
                Ok(UsageRow {
                    template_id: template_id(t)?,
                    used,
                    discount,
                })
            })
            .collect()
    }

    async fn audit(&self, now: Timestamp, grace: time::Duration) -> StoreResult<Vec<Violation>> {
        self.audit_q(now, grace).await
    }
}
