//! The invariant audit on PostgreSQL: one query per check, each returning the offending rows.

use coupond_domain::Timestamp;
use coupond_store::{StoreResult, Violation};

use crate::rows::db_err;
use crate::store::{dt, PgStore};

/// `(check, query)`: each query takes `$1` = the instant locks must have ended by, and returns
/// `(subject, detail)` rows.
const CHECKS: [(&str, &str); 10] = [
    (
        "stock",
        "SELECT 'template ' || t.id, 'claimed ' || COALESCE(s.claimed, 0) || ', coupons '
                || COALESCE(c.n, 0) || ', stock ' || t.total_stock
                || ', shards hold ' || COALESCE(s.total, 0)
         FROM templates t
         LEFT JOIN (SELECT template_id, SUM(claimed) AS claimed, SUM(total) AS total
                    FROM template_stock GROUP BY template_id) s ON s.template_id = t.id
         LEFT JOIN (SELECT template_id, COUNT(*) AS n FROM coupons GROUP BY template_id) c
             ON c.template_id = t.id
         WHERE COALESCE(s.claimed, 0) <> COALESCE(c.n, 0) OR COALESCE(c.n, 0) > t.total_stock
            OR COALESCE(s.total, 0) <> t.total_stock",
    ),
    (
        "per_user_limit",
        "SELECT 'template ' || c.template_id || ' user ' || c.user_id,
                COUNT(*) || ' coupons, limit ' || t.per_user_limit
         FROM coupons c JOIN templates t ON t.id = c.template_id
         GROUP BY c.template_id, c.user_id, t.per_user_limit HAVING COUNT(*) > t.per_user_limit",
    ),
    (
        "holdings",
        "SELECT 'template ' || h.template_id || ' user ' || h.user_id,
                'counter ' || h.n || ', coupons ' || COALESCE(c.n, 0)
         FROM holdings h LEFT JOIN (SELECT template_id, user_id, COUNT(*) AS n FROM coupons
                                    GROUP BY template_id, user_id) c
             ON c.template_id = h.template_id AND c.user_id = h.user_id
         WHERE h.n <> COALESCE(c.n, 0)",
    ),
    (
        "locks",
        "SELECT 'coupon ' || c.id, 'locked for ' || COALESCE(c.order_id, 'no order')
                || ' whose state is ' || COALESCE(o.state, 'missing')
         FROM coupons c LEFT JOIN orders o ON o.order_id = c.order_id
         WHERE c.status = 'locked' AND (o.state IS NULL OR o.state <> 'locked')
         UNION ALL
         SELECT 'coupon ' || c.id, 'not locked (' || c.status || ') but its order '
                || c.order_id || ' is'
         FROM coupons c JOIN orders o ON o.order_id = c.order_id
         WHERE o.state = 'locked' AND c.status <> 'locked'",
    ),
    (
        "uses",
        "SELECT 'coupon ' || c.id, 'used by ' || COALESCE(c.order_id, 'no order')
                || ' whose state is ' || COALESCE(o.state, 'missing')
         FROM coupons c LEFT JOIN orders o ON o.order_id = c.order_id
         WHERE c.status = 'used' AND (o.state IS NULL OR o.state <> 'confirmed')",
    ),
    (
        "overdue_locks",
        "SELECT 'order ' || order_id, 'still locked; its deadline passed' FROM orders
         WHERE state = 'locked' AND deadline < $1",
    ),
    (
        "log",
        "SELECT 'coupon ' || c.id, 'status ' || c.status || ', last logged '
                || COALESCE(e.to_status, 'nothing')
         FROM coupons c LEFT JOIN coupon_events e ON e.id =
             (SELECT MAX(id) FROM coupon_events x WHERE x.coupon_id = c.id)
         WHERE e.to_status IS NULL OR e.to_status <> c.status",
    ),
    (
        "template_amounts",
        "SELECT 'template ' || t.id, 'used ' || t.used || '/' || COUNT(c.id)
                || ', given ' || t.given || '/' || COALESCE(SUM(c.discount), 0)
                || ', reserved ' || t.reserved || '/' || COALESCE((SELECT SUM(l.discount)
                    FROM coupons l WHERE l.template_id = t.id AND l.status = 'locked'), 0)
         FROM templates t LEFT JOIN coupons c ON c.template_id = t.id AND c.status = 'used'
         GROUP BY t.id
         HAVING t.used <> COUNT(c.id) OR t.given <> COALESCE(SUM(c.discount), 0)
             OR t.reserved <> COALESCE((SELECT SUM(l.discount) FROM coupons l
                 WHERE l.template_id = t.id AND l.status = 'locked'), 0)",
    ),
    (
        // What the claim path's dropped foreign keys guarded (migration 0015).
        "orphans",
        "SELECT 'coupon ' || c.id, 'of missing template ' || c.template_id
         FROM coupons c WHERE NOT EXISTS (SELECT 1 FROM templates t WHERE t.id = c.template_id)
         UNION ALL
         SELECT 'holding ' || h.template_id || '/' || h.user_id, 'of a missing template'
         FROM holdings h WHERE NOT EXISTS (SELECT 1 FROM templates t WHERE t.id = h.template_id)
         UNION ALL
         SELECT 'log row ' || e.id, 'of missing coupon ' || e.coupon_id
         FROM coupon_events e WHERE NOT EXISTS (SELECT 1 FROM coupons c WHERE c.id = e.coupon_id)
         UNION ALL
         SELECT 'reminder ' || r.user_id || '/' || r.template_id, 'of a missing template'
         FROM reminders r WHERE NOT EXISTS (SELECT 1 FROM templates t WHERE t.id = r.template_id)",
    ),
    (
        "codes",
        "SELECT 'code ' || k.code, 'gave coupon ' || k.coupon_id || ' of '
                || COALESCE(c.user_id, 'nobody') || ', redeemed by ' || k.redeemed_by
         FROM codes k LEFT JOIN coupons c ON c.id = k.coupon_id
         WHERE k.coupon_id IS NOT NULL
           AND (c.id IS NULL OR c.user_id <> k.redeemed_by OR c.code IS DISTINCT FROM k.code)",
    ),
];

impl PgStore {
    pub(crate) async fn audit_q(
        &self,
        now: Timestamp,
        grace: time::Duration,
    ) -> StoreResult<Vec<Violation>> {
        let mut out = Vec::new();
        for (check, sql) in CHECKS {
            let sql = format!("{sql} LIMIT 100");
            let mut q = sqlx::query_as(&sql);
            if sql.contains("$1") {
                q = q.bind(dt(now.minus(grace)));
            }
            let rows: Vec<(String, String)> = q.fetch_all(&self.pool).await.map_err(db_err)?;
            out.extend(rows.into_iter().map(|(subject, detail)| Violation {
                check,
                subject,
                detail,
            }));
        }
        Ok(out)
    }
}
