//! Stats and reconciliation on PostgreSQL: aggregates over the coupons and their log.

use async_trait::async_trait;
use coupond_store::{ReportStore, Violation};
use std::collections::HashMap;

use coupond_domain::{TemplateId, Timestamp};
use coupond_store::{CouponCounts, StoreError, StoreResult, UsageRow};
use time::OffsetDateTime;

use crate::rows::db_err;
use crate::store::{dt, PgStore};

fn template_id(v: i64) -> StoreResult<TemplateId> {
    TemplateId::new(v).map_err(StoreError::other)
}

fn ts(t: OffsetDateTime) -> StoreResult<Timestamp> {
    Timestamp::from_datetime(t).ok_or_else(|| StoreError::other("instant out of range"))
}

#[async_trait]
impl ReportStore for PgStore {
    async fn coupon_counts(
        &self,
        templates: &[TemplateId],
        now: Timestamp,
        hours: u32,
    ) -> StoreResult<Vec<(TemplateId, CouponCounts)>> {
        if templates.is_empty() {
            return Ok(vec![]);
        }
        let ids: Vec<i64> = templates.iter().map(|t| t.get()).collect();
        let mut out: HashMap<i64, CouponCounts> =
            ids.iter().map(|t| (*t, CouponCounts::default())).collect();
        let rows: Vec<(i64, String, i64, i64, i64)> = sqlx::query_as(
            "SELECT template_id,
                    CASE WHEN status = 'unused' AND valid_until <= $2 THEN 'expired'
                         ELSE status END AS shown,
                    COUNT(*),
                    COALESCE(SUM(discount) FILTER (WHERE status = 'used'), 0)::bigint,
                    COUNT(issuance_id)
             FROM coupons WHERE template_id = ANY($1) GROUP BY template_id, shown",
        )
        .bind(&ids)
        .bind(dt(now))
        .fetch_all(&self.pool)
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
        let since = now.minus(time::Duration::hours(i64::from(hours)));
        let rows: Vec<(i64, OffsetDateTime, i64, i64)> = sqlx::query_as(
            "SELECT c.template_id, date_trunc('hour', e.at) AS hour,
                    COUNT(*) FILTER (WHERE e.to_status = 'unused' AND e.from_status IS NULL),
                    COUNT(*) FILTER (WHERE e.to_status = 'used')
             FROM coupon_events e JOIN coupons c ON c.id = e.coupon_id
             WHERE e.at >= $2 AND e.at <= $3 AND c.template_id = ANY($1)
             GROUP BY c.template_id, hour ORDER BY hour",
        )
        .bind(&ids)
        .bind(dt(since))
        .bind(dt(now))
        .fetch_all(&self.pool)
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
            "SELECT template_id, COUNT(*), COALESCE(SUM(discount), 0)::bigint FROM coupons
             WHERE used_at >= $1 AND used_at < $2 AND status = 'used'
             GROUP BY template_id ORDER BY template_id",
        )
        .bind(dt(from))
        .bind(dt(to))
        .fetch_all(&self.pool)
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
