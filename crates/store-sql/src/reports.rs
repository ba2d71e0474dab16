//! Stats, reconciliation and the invariant audit ([`ReportStore`](coupond_store::ReportStore)):
//! aggregates over the coupons and their log, on every backend.

use std::collections::HashMap;

use coupond_domain::{TemplateId, Timestamp};
use coupond_store::{
    CouponCounts, HourCounts, Since, StoreError, StoreResult, UsageRow, Violation,
};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Dialect, Query};
use coupond_domain::Coupon;
use coupond_domain::MerchantId;
use coupond_domain::Template;
use coupond_store::ChannelHour;
use coupond_store::FigureKey;
use coupond_store::Figures;
use coupond_store::FiguresQuery;
use coupond_store::HoldersQuery;
use coupond_store::KeptFigures;
use coupond_store::ReportStore;
use coupond_store::Standing;

fn template_id(v: i64) -> StoreResult<TemplateId> {
    TemplateId::new(v).map_err(StoreError::other)
}

pub async fn coupon_counts(
    db: &dyn Db,
    templates: &[TemplateId],
    now: Timestamp,
    since: Timestamp,
) -> StoreResult<Vec<(TemplateId, CouponCounts)>> {
    if templates.is_empty() {
        return Ok(vec![]);
    }
    let ids: Vec<i64> = templates.iter().map(|t| t.get()).collect();
    let mut out: HashMap<i64, CouponCounts> =
        ids.iter().map(|t| (*t, CouponCounts::default())).collect();
    let d = db.dialect();
    let q = sql(format!(
        "SELECT template_id,
                CASE WHEN status = 'unused' AND valid_until <= $2 THEN 'expired'
                     ELSE status END AS shown,
                COUNT(*) AS n,
                COALESCE({}, 0) AS discount,
                COUNT(issuance_id) AS in_bulk
         FROM coupons WHERE {} GROUP BY template_id, shown",
        d.sum("CASE WHEN status = 'used' THEN discount END"),
        d.in_list("template_id", 1),
    ))
    .bind(ids.clone())
    .bind(now);
    for r in db.read_all(q).await? {
        let c = out.entry(r.i64("template_id")?).or_default();
        let n = r.i64("n")?;
        c.in_bulk += r.i64("in_bulk")?;
        c.discount += r.i64("discount")?;
        match r.str("shown")? {
            "unused" => c.unused += n,
            "locked" => c.locked += n,
            "used" => c.used += n,
            "expired" => c.expired += n,
            _ => c.revoked += n,
        }
    }
    let q = sql(format!(
        "SELECT template_id, COUNT(*) AS n, COALESCE({}, 0) AS discount
         FROM refunds WHERE {} GROUP BY template_id",
        d.sum("discount"),
        d.in_list("template_id", 1),
    ))
    .bind(ids.clone());
    for r in db.read_all(q).await? {
        let c = out.entry(r.i64("template_id")?).or_default();
        c.refunded += r.i64("n")?;
        c.refunded_discount += r.i64("discount")?;
    }
    for (t, h) in per_hour(db, ids, now, since).await? {
        out.entry(t).or_default().per_hour.push(h);
    }
    templates
        .iter()
        .map(|t| Ok((*t, out.remove(&t.get()).unwrap_or_default())))
        .collect()
}

/// `(template, hour)` for the hours from `since` to `now` with any coupon created or used,
/// oldest first. A use's discount is the coupon's, or, if the use was refunded since, the
/// refund's record of it.
async fn per_hour(
    db: &dyn Db,
    ids: Vec<i64>,
    now: Timestamp,
    since: Timestamp,
) -> StoreResult<Vec<(i64, HourCounts)>> {
    let d = db.dialect();
    let q = sql(format!(
        "SELECT c.template_id, {} AS hour,
                {} AS created, {} AS used, {} AS discount,
                {} AS refunded, {} AS refunded_discount
         FROM coupon_events e JOIN coupons c ON c.id = e.coupon_id
         LEFT JOIN refunds r ON r.coupon_id = e.coupon_id AND r.used_at = e.at
              AND e.to_status = 'used'
         WHERE e.at >= $2 AND e.at <= $3 AND {}
         GROUP BY c.template_id, hour ORDER BY hour",
        d.hour("e.at"),
        d.sum("CASE WHEN e.to_status = 'unused' AND e.from_status IS NULL THEN 1 ELSE 0 END"),
        d.sum("CASE WHEN e.to_status = 'used' THEN 1 ELSE 0 END"),
        d.sum(
            "CASE WHEN e.to_status = 'used' THEN COALESCE(r.discount, \
             CASE WHEN c.used_at = e.at THEN c.discount END, 0) ELSE 0 END"
        ),
        d.sum("CASE WHEN r.coupon_id IS NOT NULL THEN 1 ELSE 0 END"),
        d.sum("COALESCE(r.discount, 0)"),
        d.in_list("c.template_id", 1),
    ))
    .bind(ids)
    .bind(since)
    .bind(now);
    let mut out = Vec::new();
    for r in db.read_all(q).await? {
        let h = HourCounts {
            hour: r.time("hour")?,
            created: r.i64("created")?,
            used: r.i64("used")?,
            discount: r.i64("discount")?,
            refunded: r.i64("refunded")?,
            refunded_discount: r.i64("refunded_discount")?,
        };
        if h.created + h.used > 0 {
            out.push((r.i64("template_id")?, h));
        }
    }
    Ok(out)
}

/// What [`ReportStore::since`](coupond_store::ReportStore::since) counts: coupon log rows
/// since the instant (by its index on `at`), joined to their templates when one merchant's
/// are asked for, and webhook deliveries created since.
pub async fn since(
    db: &dyn Db,
    merchant: Option<coupond_domain::MerchantId>,
    since: Timestamp,
) -> StoreResult<Since> {
    let d = db.dialect();
    let (join, only) = match merchant {
        Some(_) => (
            "JOIN coupons c ON c.id = e.coupon_id JOIN templates t ON t.id = c.template_id",
            "AND t.merchant_id = $2",
        ),
        None => ("", ""),
    };
    let q = sql(format!(
        "SELECT COALESCE({}, 0) AS claimed, COALESCE({}, 0) AS used
         FROM coupon_events e {join} WHERE e.at >= $1 {only}",
        d.sum("CASE WHEN e.from_status IS NULL THEN 1 ELSE 0 END"),
        d.sum("CASE WHEN e.to_status = 'used' THEN 1 ELSE 0 END"),
    ))
    .bind(since);
    let coupons = db.read_all(bind_merchant(q, merchant)).await?;
    let (w_join, w_only) = match merchant {
        Some(_) => (
            "JOIN webhooks w ON w.id = x.webhook_id",
            "AND w.merchant_id = $2",
        ),
        None => ("", ""),
    };
    let q = sql(format!(
        "SELECT COALESCE({}, 0) AS failed, COALESCE({}, 0) AS retrying
         FROM webhook_deliveries x {w_join} WHERE x.created_at >= $1 {w_only}",
        d.sum("CASE WHEN x.state = 'failed' THEN 1 ELSE 0 END"),
        d.sum("CASE WHEN x.state = 'pending' AND x.attempts > 0 THEN 1 ELSE 0 END"),
    ))
    .bind(since);
    let deliveries = db.read_all(bind_merchant(q, merchant)).await?;
    let mut out = Since::default();
    if let Some(r) = coupons.first() {
        out.claimed = r.i64("claimed")?;
        out.used = r.i64("used")?;
    }
    if let Some(r) = deliveries.first() {
        out.deliveries_failed = r.i64("failed")?;
        out.deliveries_retrying = r.i64("retrying")?;
    }
    Ok(out)
}

/// `q` with the merchant as its `$2`, when one is asked for.
fn bind_merchant(q: Query, merchant: Option<coupond_domain::MerchantId>) -> Query {
    match merchant {
        Some(m) => q.bind(m.get()),
        None => q,
    }
}

pub async fn usage_between(
    db: &dyn Db,
    from: Timestamp,
    to: Timestamp,
) -> StoreResult<Vec<UsageRow>> {
    // A use counts in the period it happened, whether or not it was refunded since (the
    // refund row keeps its `used_at`); a refund counts in the period of the refund. So a
    // period's figures never move once it is over. Grouped by discount amount too, so a
    // split of each coupon's discount can be summed exactly.
    let sum = |c: &str| db.dialect().sum(c);
    let q = sql(format!(
        "SELECT template_id, amount, {} AS used, {} AS refunded
         FROM (SELECT template_id, discount AS amount, 1 AS u, 0 AS r FROM coupons
               WHERE used_at >= $1 AND used_at < $2 AND status = 'used'
               UNION ALL
               SELECT template_id, discount, 1, 0 FROM refunds
               WHERE used_at >= $1 AND used_at < $2
               UNION ALL
               SELECT template_id, discount, 0, 1 FROM refunds
               WHERE at >= $1 AND at < $2) x
         GROUP BY template_id, amount ORDER BY template_id, amount",
        sum("u"),
        sum("r"),
    ))
    .bind(from)
    .bind(to);
    let mut out: Vec<UsageRow> = Vec::new();
    for r in db.read_all(q).await? {
        let t = template_id(r.i64("template_id")?)?;
        let amount = r.opt_i64("amount")?.unwrap_or(0);
        let (used, refunded) = (r.i64("used")?, r.i64("refunded")?);
        if out.last().map(|u| u.template_id) != Some(t) {
            out.push(UsageRow {
                template_id: t,
                used: 0,
                discount: 0,
                refunded: 0,
                refunded_discount: 0,
                amounts: Vec::new(),
            });
        }
        if let Some(u) = out.last_mut() {
            u.used += used;
            u.discount += amount * used;
            u.refunded += refunded;
            u.refunded_discount += amount * refunded;
            u.amounts.push((amount, used, refunded));
        }
    }
    Ok(out)
}

/// `(check, query)`: each query may use `$1` = the instant locks must have ended by, and
/// returns `(subject, detail)` rows; `{same}` is replaced by the dialect's null-safe
/// `c.code = k.code`.
pub const CHECKS: [(&str, &str); 8] = [
    (
        "per_user_limit",
        "SELECT 'template ' || c.template_id || ' user ' || c.user_id AS subject,
                COUNT(*) || ' coupons, limit ' || t.per_user_limit AS detail
         FROM coupons c JOIN templates t ON t.id = c.template_id
         GROUP BY c.template_id, c.user_id, t.per_user_limit HAVING COUNT(*) > t.per_user_limit",
    ),
    (
        "holdings",
        "SELECT 'template ' || h.template_id || ' user ' || h.user_id AS subject,
                'counter ' || h.n || ', coupons ' || COALESCE(c.n, 0) AS detail
         FROM holdings h LEFT JOIN (SELECT template_id, user_id, COUNT(*) AS n FROM coupons
                                    GROUP BY template_id, user_id) c
             ON c.template_id = h.template_id AND c.user_id = h.user_id
         WHERE h.n <> COALESCE(c.n, 0)",
    ),
    (
        "locks",
        "SELECT 'coupon ' || c.id AS subject, 'locked for ' || COALESCE(c.order_id, 'no order')
                || ' whose state is ' || COALESCE(o.state, 'missing') AS detail
         FROM coupons c LEFT JOIN orders o ON o.order_id = c.order_id
         WHERE c.status = 'locked' AND (o.state IS NULL OR o.state <> 'locked')
         UNION ALL
         SELECT 'coupon ' || c.id, 'not locked (' || c.status || ') but its order '
                || c.order_id || ' is'
         FROM coupons c JOIN orders o ON o.order_id = c.order_id
         WHERE o.state = 'locked' AND c.status NOT IN ('locked', 'revoked')",
    ),
    (
        "uses",
        "SELECT 'coupon ' || c.id AS subject, 'used by ' || COALESCE(c.order_id, 'no order')
                || ' whose state is ' || COALESCE(o.state, 'missing') AS detail
         FROM coupons c LEFT JOIN orders o ON o.order_id = c.order_id
         WHERE c.status = 'used' AND (o.state IS NULL OR o.state <> 'confirmed')",
    ),
    (
        "overdue_locks",
        "SELECT 'order ' || order_id AS subject, 'still locked; its deadline passed' AS detail
         FROM orders WHERE state = 'locked' AND deadline < $1",
    ),
    (
        "log",
        "SELECT 'coupon ' || c.id AS subject, 'status ' || c.status || ', last logged '
                || COALESCE(e.to_status, 'nothing') AS detail
         FROM coupons c LEFT JOIN coupon_events e ON e.id =
             (SELECT MAX(id) FROM coupon_events x WHERE x.coupon_id = c.id)
         WHERE e.to_status IS NULL OR e.to_status <> c.status",
    ),
    (
        "template_amounts",
        "SELECT 'template ' || t.id AS subject, 'used ' || t.used || '/' || COUNT(c.id)
                || ', given ' || t.given || '/' || COALESCE(SUM(c.discount), 0)
                || ', reserved ' || t.reserved || '/' || COALESCE((SELECT SUM(l.discount)
                    FROM coupons l WHERE l.template_id = t.id AND l.status = 'locked'), 0)
                AS detail
         FROM templates t LEFT JOIN coupons c ON c.template_id = t.id AND c.status = 'used'
         GROUP BY t.id, t.used, t.given, t.reserved
         HAVING t.used <> COUNT(c.id) OR t.given <> COALESCE(SUM(c.discount), 0)
             OR t.reserved <> COALESCE((SELECT SUM(l.discount) FROM coupons l
                 WHERE l.template_id = t.id AND l.status = 'locked'), 0)",
    ),
    (
        "codes",
        "SELECT 'code ' || k.code AS subject, 'gave coupon ' || k.coupon_id || ' of '
                || COALESCE(c.user_id, 'nobody') || ', redeemed by ' || k.redeemed_by AS detail
         FROM codes k LEFT JOIN coupons c ON c.id = k.coupon_id
         WHERE k.coupon_id IS NOT NULL
           AND (c.id IS NULL OR c.user_id <> k.redeemed_by OR NOT ({same}))",
    ),
];

/// The stock check of a backend that keeps its stock in shards (`template_stock`: PostgreSQL,
/// MySQL), for its [`Db::own_audit_checks`]: the shards' `claimed` is the count of the
/// template's coupons, within the stock, and the shards' totals are the stock.
pub const STOCK_IN_SHARDS: (&str, &str) = (
    "stock",
    "SELECT 'template ' || t.id AS subject, 'claimed ' || COALESCE(s.claimed, 0)
                || ', coupons ' || COALESCE(c.n, 0) || ', stock ' || t.total_stock
                || ', shards hold ' || COALESCE(s.total, 0) AS detail
         FROM templates t
         LEFT JOIN (SELECT template_id, SUM(claimed) AS claimed, SUM(total) AS total
                    FROM template_stock GROUP BY template_id) s ON s.template_id = t.id
         LEFT JOIN (SELECT template_id, COUNT(*) AS n FROM coupons GROUP BY template_id) c
             ON c.template_id = t.id
         WHERE COALESCE(s.claimed, 0) <> COALESCE(c.n, 0) OR COALESCE(c.n, 0) > t.total_stock
            OR COALESCE(s.total, 0) <> t.total_stock",
);

/// The check of a backend whose claim path writes without foreign keys (PostgreSQL's migration
/// 0015, MySQL's 0021), for its [`Db::own_audit_checks`]: no coupon, holding or reminder of a
/// template that does not exist, no log row of a coupon that does not exist.
pub const ORPHANS: (&str, &str) = (
    "orphans",
    "SELECT 'coupon ' || c.id AS subject, 'of missing template ' || c.template_id AS detail
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
);

/// The stock check of a backend that keeps `claimed` on `templates` (SQLite), for its
/// [`Db::own_audit_checks`]: `claimed` is the count of its coupons, within the stock.
pub const CLAIMED_ON_TEMPLATES: [(&str, &str); 1] = [(
    "stock",
    "SELECT 'template ' || t.id AS subject, 'claimed ' || t.claimed || ', coupons '
            || COUNT(c.id) || ', stock ' || t.total_stock AS detail
     FROM templates t LEFT JOIN coupons c ON c.template_id = t.id
     GROUP BY t.id, t.claimed, t.total_stock
     HAVING t.claimed <> COUNT(c.id) OR COUNT(c.id) > t.total_stock",
)];

/// The `holdings` check as MySQL runs it: correlated, looked up by the coupons'
/// `(template_id, user_id)` index. MariaDB joins the grouped derived table of [`CHECKS`]
/// without a key (8 min 41 s on 100,000 coupons; this form 0.4 s), while SQLite, whose planner
/// would look this one up by the template alone, keeps the join.
const HOLDINGS_MYSQL: &str = "SELECT 'template ' || h.template_id || ' user ' || h.user_id
        AS subject, 'counter ' || h.n || ', coupons ' || (SELECT COUNT(*) FROM coupons c
            WHERE c.template_id = h.template_id AND c.user_id = h.user_id) AS detail
     FROM holdings h
     WHERE h.n <> (SELECT COUNT(*) FROM coupons c
                   WHERE c.template_id = h.template_id AND c.user_id = h.user_id)";

/// Runs the backend's own checks, then [`CHECKS`]; at most 100 findings per check.
pub async fn audit(
    db: &dyn Db,
    now: Timestamp,
    grace: time::Duration,
) -> StoreResult<Vec<Violation>> {
    let same = db.dialect().same("c.code", "k.code");
    let deadline = now.minus(grace);
    let mut out = Vec::new();
    for (check, text) in db.dialect().own_audit_checks().iter().chain(CHECKS.iter()) {
        let text = match (*check, db.dialect()) {
            ("holdings", Dialect::Mysql) => HOLDINGS_MYSQL,
            _ => text,
        };
        let mut q: Query = sql(format!("{} LIMIT 100", text.replace("{same}", &same)));
        if text.contains("$1") {
            q = q.bind(deadline);
        }
        for r in db.read_all(q).await? {
            out.push(Violation {
                check,
                subject: r.string("subject")?,
                detail: r.string("detail")?,
            });
        }
    }
    Ok(out)
}

#[async_trait::async_trait]
impl<B: Backend> ReportStore for SqlStore<B> {
    async fn coupon_counts(
        &self,
        templates: &[TemplateId],
        now: Timestamp,
        since: Timestamp,
    ) -> StoreResult<Vec<(TemplateId, CouponCounts)>> {
        coupon_counts(&self.db, templates, now, since).await
    }
    async fn usage_between(&self, from: Timestamp, to: Timestamp) -> StoreResult<Vec<UsageRow>> {
        usage_between(&self.db, from, to).await
    }
    async fn figures(&self, q: &FiguresQuery<'_>) -> StoreResult<Figures> {
        crate::figures::figures(&self.db, q).await
    }
    async fn expired_unused(&self, q: &FiguresQuery<'_>) -> StoreResult<Vec<ChannelHour>> {
        crate::figures::expired_unused(&self.db, q).await
    }
    async fn kept_figures(
        &self,
        key: &FigureKey,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<KeptFigures> {
        crate::figures::kept_figures(&self.db, key, from, to).await
    }
    async fn keep_figures(
        &self,
        key: &FigureKey,
        from: Timestamp,
        to: Timestamp,
        figures: &Figures,
    ) -> StoreResult<()> {
        crate::figures::keep_figures(&self.db, key, (from, to), figures).await
    }
    async fn since(&self, merchant: Option<MerchantId>, since: Timestamp) -> StoreResult<Since> {
        self::since(&self.db, merchant, since).await
    }
    async fn standing(
        &self,
        merchant: Option<MerchantId>,
        now: Timestamp,
    ) -> StoreResult<Standing> {
        crate::standing::standing(&self.db, merchant, now).await
    }
    async fn locks_due_before(&self, before: Timestamp) -> StoreResult<i64> {
        crate::standing::locks_due_before(&self.db, before).await
    }
    async fn needing_attention(
        &self,
        merchant: Option<MerchantId>,
        now: Timestamp,
        soon: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<Template>> {
        crate::standing::needing_attention(&self.db, merchant, now, soon, limit).await
    }
    async fn template_coupons(&self, q: &HoldersQuery) -> StoreResult<Vec<Coupon>> {
        crate::wallet::template_coupons(&self.db, q).await
    }
    async fn audit(&self, now: Timestamp, grace: time::Duration) -> StoreResult<Vec<Violation>> {
        audit(&self.db, now, grace).await
    }
}
