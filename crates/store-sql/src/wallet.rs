//! A user's wallet: the reads of [`ClaimStore`](coupond_store::ClaimStore) (a page of a user's
//! coupons, one coupon, its history, how many it holds of some templates), on every backend; and a
//! template's coupons (who holds them, for [`ReportStore`](coupond_store::ReportStore)).
//!
//! The claim batch is each backend's own hot path ([`Backend::claim_batch`](crate::Backend)). A
//! backend may run [`coupon_page`] its own way (SQLite reads the page as one aggregated row);
//! [`user_coupons`] is the default.

use coupond_domain::{Coupon, CouponId, CouponStatus, TemplateId, Timestamp, UserId};
use coupond_store::{CouponEvent, CouponQuery, HoldersQuery, StoreError, StoreResult};

use crate::rows::{coupon as coupon_row, coupon_event};
use crate::{sql, Db, Dialect, Query};

/// The statement for a page of `q.user`'s coupons, soonest expiring first (`SELECT *` of
/// `coupons`, in `(valid_until, id)` order).
pub fn coupon_page(d: Dialect, q: &CouponQuery) -> Query {
    let mut s = sql("SELECT * FROM coupons WHERE user_id = ");
    s.push_bind(q.user.as_str());
    if let Some(m) = q.merchant {
        s.push(" AND template_id IN (SELECT id FROM templates WHERE merchant_id = ")
            .push_bind(m.get())
            .push(")");
    }
    push_status(&mut s, q.status, q.now);
    if let Some((valid_until, id)) = q.after {
        let (vu, id) = (s.param(valid_until), s.param(id));
        s.push(" AND ").push(&after(d, &vu, &id));
    }
    s.push(" ORDER BY valid_until, id LIMIT ")
        .push_bind(i64::from(q.limit));
    s
}

/// Appends ` AND` the status filter at `now` (an unused coupon past its validity is expired).
fn push_status(s: &mut Query, status: Option<CouponStatus>, now: Timestamp) {
    match status {
        None => {}
        Some(CouponStatus::Unused) => {
            s.push(" AND status = 'unused' AND valid_until > ")
                .push_bind(now);
        }
        Some(CouponStatus::Expired) => {
            s.push(" AND (status = 'expired' OR (status = 'unused' AND valid_until <= ")
                .push_bind(now)
                .push("))");
        }
        Some(st) => {
            s.push(" AND status = ").push_bind(st.as_str());
        }
    }
}

/// A page of a template's coupons by id, optionally of one user and in one status.
pub async fn template_coupons(db: &dyn Db, q: &HoldersQuery) -> StoreResult<Vec<Coupon>> {
    let mut s = sql("SELECT * FROM coupons WHERE template_id = ");
    s.push_bind(q.template.get());
    if let Some(user) = &q.user {
        s.push(" AND user_id = ").push_bind(user.as_str());
    }
    push_status(&mut s, q.status, q.now);
    if let Some(id) = q.after {
        s.push(" AND id > ").push_bind(id);
    }
    s.push(" ORDER BY id LIMIT ").push_bind(i64::from(q.limit));
    let rows = db.read_all(s).await?;
    rows.iter().map(coupon_row).collect()
}

/// `(valid_until, id) > (vu, id)`: PostgreSQL compares the row values (one range of the
/// `coupons_by_user` index); elsewhere the comparison is spelled out, as SQLite has always
/// planned it.
fn after(d: Dialect, vu: &str, id: &str) -> String {
    match d {
        Dialect::Postgres => format!("(valid_until, id) > ({vu}, {id})"),
        _ => format!("(valid_until > {vu} OR (valid_until = {vu} AND id > {id}))"),
    }
}

/// A page of a user's coupons ([`coupon_page`]).
pub async fn user_coupons(db: &dyn Db, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
    let rows = db.read_all(coupon_page(db.dialect(), q)).await?;
    rows.iter().map(coupon_row).collect()
}

/// How many coupons `user` was issued of each of `templates`: the per-user limit's counters
/// (`holdings`), each one primary-key lookup.
pub async fn held(
    db: &dyn Db,
    user: &UserId,
    templates: &[TemplateId],
) -> StoreResult<Vec<(TemplateId, u32)>> {
    if templates.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = templates.iter().map(|t| t.get()).collect();
    let q = sql(format!(
        "SELECT template_id, n FROM holdings WHERE user_id = $1 AND {} AND n > 0",
        db.dialect().in_list("template_id", 2)
    ))
    .bind(user.as_str())
    .bind(ids);
    db.read_all(q)
        .await?
        .iter()
        .map(|r| {
            let t = TemplateId::new(r.i64("template_id")?).map_err(StoreError::other)?;
            let n = u32::try_from(r.i64("n")?).map_err(StoreError::other)?;
            Ok((t, n))
        })
        .collect()
}

pub async fn coupon(db: &dyn Db, id: CouponId) -> StoreResult<Coupon> {
    let q = sql("SELECT * FROM coupons WHERE id = $1").bind(id.get());
    coupon_row(&db.read_one(q).await?)
}

/// A coupon's operation log, oldest first.
pub async fn coupon_history(db: &dyn Db, coupon: CouponId) -> StoreResult<Vec<CouponEvent>> {
    let q = sql("SELECT * FROM coupon_events WHERE coupon_id = $1 ORDER BY id").bind(coupon.get());
    db.read_all(q).await?.iter().map(coupon_event).collect()
}

#[cfg(test)]
mod tests {
    use coupond_domain::{Timestamp, UserId};

    use super::*;

    fn query(status: Option<CouponStatus>) -> CouponQuery {
        let now = Timestamp::from_unix_micros(1_700_000_000_000_000).unwrap();
        CouponQuery {
            merchant: None,
            user: UserId::parse("u1").unwrap(),
            status,
            now,
            after: Some((now, 9)),
            limit: 20,
        }
    }

    #[test]
    fn pages_continue_after_a_position_in_each_dialect() {
        let q = coupon_page(Dialect::Postgres, &query(Some(CouponStatus::Unused)));
        assert!(
            q.text()
                .contains("AND (valid_until, id) > ($3, $4) ORDER BY"),
            "{}",
            q.text()
        );
        assert_eq!(q.args().len(), 5);
        let q = coupon_page(Dialect::Sqlite, &query(None));
        let sqlite = "AND (valid_until > $2 OR (valid_until = $2 AND id > $3)) ORDER BY";
        assert!(q.text().contains(sqlite), "{}", q.text());
        assert!(q.text().ends_with("LIMIT $4"));
    }
}
