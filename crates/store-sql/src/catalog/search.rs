//! Listing search: listings by merchant, reference, place and the coupons live on them
//! (kind, activity, the activity's type, template, any at all), and the live templates of a
//! page of listings.

use coupond_domain::{Listing, ListingId, Template, TemplateStatus, Timestamp};
use coupond_store::{ListingQuery, StoreResult};

use super::{id, listing_row, push_template_status, template_row};
use crate::{sql, Db, Dialect, Query};

pub async fn list_listings(db: &dyn Db, q: &ListingQuery) -> StoreResult<Vec<Listing>> {
    let mut b = sql("SELECT * FROM listings WHERE id > ");
    b.push_bind(q.page.after.unwrap_or(0));
    if let Some(m) = q.merchant {
        b.push(" AND merchant_id = ").push_bind(m.get());
    }
    if let Some(e) = &q.external_id {
        b.push(" AND external_id = ").push_bind(e.as_str());
    }
    if let Some(c) = q.city {
        b.push(" AND city_id = ").push_bind(c.get());
    }
    if let Some(c) = q.category {
        b.push(" AND category_id = ").push_bind(c.get());
    }
    // A template or an activity names few listings: start from its bindings rather than
    // walk every listing (the EXISTS below still checks the template is live).
    if let Some(t) = q.template {
        b.push(" AND id IN (SELECT listing_id FROM bindings WHERE template_id = ")
            .push_bind(t.get())
            .push(")");
    } else if let Some(a) = q.activity {
        b.push(
            " AND id IN (SELECT b.listing_id FROM bindings b \
             JOIN templates t ON t.id = b.template_id WHERE t.activity_id = ",
        )
        .push_bind(a.get())
        .push(")");
    }
    if q.wants_coupon() || q.has_coupon == Some(false) {
        push_live_coupon(&mut b, db.dialect(), q);
    }
    b.push(" ORDER BY id LIMIT ")
        .push_bind(i64::from(q.page.limit));
    db.read_all(b).await?.iter().map(listing_row).collect()
}

/// The `[NOT] EXISTS` filter on the live templates bound to a listing.
fn push_live_coupon(b: &mut Query, d: Dialect, q: &ListingQuery) {
    b.push(if q.has_coupon == Some(false) {
        " AND NOT EXISTS"
    } else {
        " AND EXISTS"
    });
    b.push(
        " (SELECT 1 FROM bindings b JOIN templates t ON t.id = b.template_id \
         WHERE b.listing_id = listings.id",
    );
    push_template_status(b, TemplateStatus::Active, q.now);
    if let Some(k) = q.kind {
        b.push(" AND t.kind = ").push_bind(k.as_str());
    }
    if let Some(a) = q.activity {
        b.push(" AND t.activity_id = ").push_bind(a.get());
    }
    if let Some(ty) = &q.activity_type {
        b.push(" AND t.activity_id IN (SELECT a.id FROM activities a WHERE ")
            .push(&d.reference("a.spec", "type"))
            .push(" = ")
            .push_bind(ty.as_str())
            .push(")");
    }
    if let Some(t) = q.template {
        b.push(" AND t.id = ").push_bind(t.get());
    }
    b.push(")");
}

pub async fn live_templates(
    db: &dyn Db,
    listings: &[ListingId],
    now: Timestamp,
) -> StoreResult<Vec<(ListingId, Template)>> {
    if listings.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = listings.iter().map(|l| l.get()).collect();
    let mut b = sql(format!(
        "SELECT b.listing_id, {} FROM bindings b \
         JOIN templates t ON t.id = b.template_id WHERE {}",
        db.dialect().template_columns(),
        db.dialect().in_list("b.listing_id", 1)
    ))
    .bind(ids);
    push_template_status(&mut b, TemplateStatus::Active, now);
    b.push(" ORDER BY b.listing_id, t.id");
    let rows = db.read_all(b).await?;
    rows.iter()
        .map(|r| Ok((id(r.i64("listing_id")?, ListingId::new)?, template_row(r)?)))
        .collect()
}
