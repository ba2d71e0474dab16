//! The rows a granted claim writes on MySQL, as statements of a [`Script`]: its coupon, its
//! operation-log row, its `coupon.claimed` event, and its idempotency key pointed at it.

use coupond_domain::{Coupon, CouponId, TemplateId, Timestamp};
use coupond_store::events;
use coupond_store::{ClaimRequest, StoreError, StoreResult};

use super::{keys, CHUNK};
use crate::script::Script;

/// Writes the coupons of the `granted` claims, with ids from `first` on, with one
/// operation-log row and one `coupon.claimed` event each, and points their idempotency keys at
/// them; the coupons, in the order of `granted`. (Single-use codes are the caller's.)
pub(super) fn insert_into(
    s: &mut Script,
    template: TemplateId,
    claims: &[ClaimRequest],
    granted: &[usize],
    first: i64,
    now: Timestamp,
) -> StoreResult<Vec<Coupon>> {
    let mut coupons = Vec::with_capacity(granted.len());
    for (k, &i) in granted.iter().enumerate() {
        let id = CouponId::new(first + k as i64).map_err(StoreError::other)?;
        coupons.push(claims[i].coupon(id, template, now));
    }
    let pairs: Vec<(&Coupon, &ClaimRequest)> = coupons
        .iter()
        .zip(granted.iter().map(|&i| &claims[i]))
        .collect();
    for chunk in pairs.chunks(CHUNK) {
        coupon_rows(s, template, chunk, now);
        s.rows(
            "INSERT INTO coupon_events (coupon_id, to_status, actor, at) VALUES ",
            chunk,
            |s, (c, r)| {
                s.int(c.id.get())
                    .sql(", 'unused', ")
                    .text(&r.actor.to_text())
                    .sql(", ")
                    .time(now);
            },
        );
        s.end();
        s.rows(
            "INSERT INTO outbox (kind, at, body) VALUES ",
            chunk,
            |s, (c, r)| {
                let (kind, body) = events::coupon_claimed(c, &r.actor, r.issuance);
                s.text(kind).sql(", ").time(now).sql(", ").text(&body);
            },
        );
        s.end();
    }
    let keyed: Vec<(&coupond_store::IdempotencyKey, i64)> = pairs
        .iter()
        .filter_map(|(c, r)| r.idempotency.as_ref().map(|k| (k, c.id.get())))
        .collect();
    keys::link_into(s, &keyed, now);
    Ok(coupons)
}

fn coupon_rows(
    s: &mut Script,
    template: TemplateId,
    chunk: &[(&Coupon, &ClaimRequest)],
    now: Timestamp,
) {
    s.rows(
        "INSERT INTO coupons (id, template_id, user_id, claimed_at, valid_from, valid_until,
                              updated_at, code, issuance_id, channel, source) VALUES ",
        chunk,
        |s, (c, r)| {
            s.int(c.id.get())
                .sql(", ")
                .int(template.get())
                .sql(", ")
                .text(c.user_id.as_str())
                .sql(", ")
                .time(now)
                .sql(", ")
                .time(c.valid_from)
                .sql(", ")
                .time(c.valid_until)
                .sql(", ")
                .time(now)
                .sql(", ")
                .opt_text(c.code.as_deref())
                .sql(", ");
            match r.issuance {
                Some(id) => s.int(id),
                None => s.sql("NULL"),
            };
            s.sql(", ")
                .text(&r.channel.to_text())
                .sql(", ")
                .opt_text(r.source.as_ref().map(|s| s.as_str()));
        },
    );
    s.end();
}
