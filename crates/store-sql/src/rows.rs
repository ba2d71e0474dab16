//! Row mappers the backends share: a [`Row`] (however the backend read it) into the domain's
//! and the store's types. Backend code that reads with its driver converts the driver row
//! first (`crate::exec::row` in each backend).
//!
//! Templates are mapped in `catalog` (read with [`Db::template_columns`](crate::Db)) and
//! activities in `campaigns`; [`template`] is the way in for backends.

use coupond_domain::{
    Actor, Coupon, CouponId, CouponStatus, Money, OrderId, Template, TemplateId, UserId,
};
use coupond_store::checkout::{OrderRecord, OrderState};
use coupond_store::{CouponEvent, Issuance, IssuanceState, StoreError, StoreResult};

use crate::Row;

fn id<T>(v: i64, f: fn(i64) -> Result<T, String>) -> StoreResult<T> {
    f(v).map_err(StoreError::other)
}

fn user(r: &Row, col: &str) -> StoreResult<UserId> {
    UserId::parse(r.str(col)?).map_err(StoreError::other)
}

fn actor(r: &Row) -> StoreResult<Actor> {
    Ok(Actor::read(r.str("actor")?))
}

fn status(s: &str) -> StoreResult<CouponStatus> {
    CouponStatus::parse(s).ok_or_else(|| StoreError::other("unknown coupon status"))
}

/// A coupon (`SELECT *` of `coupons`, or `c.*` in a join).
pub fn coupon(r: &Row) -> StoreResult<Coupon> {
    Ok(Coupon {
        id: id(r.i64("id")?, CouponId::new)?,
        template_id: id(r.i64("template_id")?, TemplateId::new)?,
        user_id: user(r, "user_id")?,
        stored_status: status(r.str("status")?)?,
        claimed_at: r.time("claimed_at")?,
        valid_from: r.time("valid_from")?,
        valid_until: r.time("valid_until")?,
        code: r.opt_string("code")?,
        order_id: r
            .opt_str("order_id")?
            .map(|o| OrderId::parse(o).map_err(StoreError::other))
            .transpose()?,
        locked_until: r.opt_time("locked_until")?,
        discount: r
            .opt_i64("discount")?
            .map(|v| Money::new(v).map_err(StoreError::other))
            .transpose()?,
        used_at: r.opt_time("used_at")?,
    })
}

/// A row of a coupon's operation log (`coupon_events`).
pub fn coupon_event(r: &Row) -> StoreResult<CouponEvent> {
    Ok(CouponEvent {
        id: r.i64("id")?,
        coupon_id: id(r.i64("coupon_id")?, CouponId::new)?,
        from: r.opt_str("from_status")?.map(status).transpose()?,
        to: status(r.str("to_status")?)?,
        order_id: r.opt_string("order_id")?,
        actor: actor(r)?,
        reason: r.opt_string("reason")?,
        at: r.time("at")?,
    })
}

/// A template read with [`Db::template_columns`](crate::Db::template_columns).
pub fn template(r: &Row) -> StoreResult<Template> {
    crate::catalog::template_row(r)
}

/// An order (`SELECT *` of `orders`; its fingerprint is read by the caller).
pub fn order(r: &Row) -> StoreResult<OrderRecord> {
    Ok(OrderRecord {
        order_id: OrderId::parse(r.str("order_id")?).map_err(StoreError::other)?,
        user_id: user(r, "user_id")?,
        state: OrderState::parse(r.str("state")?)
            .ok_or_else(|| StoreError::other("unknown order state"))?,
        deadline: r.time("deadline")?,
        answer: serde_json::from_str(r.str("answer")?).map_err(StoreError::other)?,
        created_at: r.time("created_at")?,
        ended_at: r.opt_time("ended_at")?,
    })
}

/// An issuance job, read with [`ISSUANCE_COLS`](crate::issuance::ISSUANCE_COLS).
pub fn issuance(r: &Row) -> StoreResult<Issuance> {
    let n =
        |col: &str| -> StoreResult<u64> { u64::try_from(r.i64(col)?).map_err(StoreError::other) };
    Ok(Issuance {
        id: r.i64("id")?,
        template_id: id(r.i64("template_id")?, TemplateId::new)?,
        actor: actor(r)?,
        state: IssuanceState::parse(r.str("state")?)
            .ok_or_else(|| StoreError::other("unknown issuance state"))?,
        requested: n("requested")?,
        next_user: n("next_user")?,
        issued: n("issued")?,
        skipped: n("skipped")?,
        sold_out: n("sold_out")?,
        not_eligible: n("not_eligible")?,
        duplicates: n("duplicates")?,
        invalid: n("invalid")?,
        invalid_lines: serde_json::from_str(r.str("invalid_lines")?).map_err(StoreError::other)?,
        error: r.opt_string("error")?,
        created_at: r.time("created_at")?,
        started_at: r.opt_time("started_at")?,
        finished_at: r.opt_time("finished_at")?,
        key_fingerprint: r
            .opt_bytes("key_fingerprint")?
            .map(<[u8; 32]>::try_from)
            .transpose()
            .map_err(StoreError::other)?,
    })
}

/// A job's users as stored: one id per line.
pub fn user_list(blob: &[u8]) -> StoreResult<Vec<UserId>> {
    let text = std::str::from_utf8(blob).map_err(StoreError::other)?;
    if text.is_empty() {
        return Ok(vec![]);
    }
    text.split('\n')
        .map(|u| UserId::parse(u).map_err(StoreError::other))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use coupond_domain::Timestamp;

    use super::*;
    use crate::Value;

    fn row(cols: &[(&str, Value)]) -> Row {
        let names: Arc<[String]> = cols.iter().map(|(c, _)| (*c).to_owned()).collect();
        Row::new(names, cols.iter().map(|(_, v)| v.clone()).collect())
    }

    #[test]
    fn a_coupon_reads_from_either_storage_of_instants() {
        let t = Timestamp::from_unix_micros(1_700_000_000_000_000).unwrap();
        let cols = |at: Value| {
            row(&[
                ("id", Value::Int(7)),
                ("template_id", Value::Int(3)),
                ("user_id", Value::Text("u1".into())),
                ("status", Value::Text("unused".into())),
                ("claimed_at", at.clone()),
                ("valid_from", at.clone()),
                ("valid_until", at),
                ("code", Value::Null),
                ("order_id", Value::Null),
                ("locked_until", Value::Null),
                ("discount", Value::Int(150)),
                ("used_at", Value::Null),
            ])
        };
        let a = coupon(&cols(Value::Time(t))).unwrap();
        let b = coupon(&cols(Value::Int(t.unix_micros()))).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.valid_until, t);
        assert_eq!(a.discount.map(Money::minor), Some(150));
    }

    #[test]
    fn user_lists_are_one_id_a_line() {
        assert!(user_list(b"").unwrap().is_empty());
        let users = user_list(b"u1\nu2").unwrap();
        assert_eq!(
            users.iter().map(UserId::as_str).collect::<Vec<_>>(),
            ["u1", "u2"]
        );
        assert!(user_list(&[0xff]).is_err());
    }
}
