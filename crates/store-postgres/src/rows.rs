//! Row conversions and the mapping of driver errors into [`StoreError`], in one place.

use coupond_domain::{
    Activity, ActivityId, Actor, Coupon, CouponId, CouponStatus, MerchantId, Money, OrderId,
    Template, TemplateId, Timestamp, UserId, Window,
};
use coupond_store::checkout::{OrderRecord, OrderState};
use coupond_store::Conflict;
use coupond_store::{
    codec, CouponEvent, Event, Issuance, IssuanceState, Message, Reminder, StoreError,
};
use sqlx::postgres::PgRow;
use sqlx::Row;
use time::OffsetDateTime;

pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::RowNotFound => StoreError::NotFound,
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            StoreError::Conflict(Conflict::Unique)
        }
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => {
            StoreError::Conflict(Conflict::Reference)
        }
        // Class 08 (connection exception), 57P01..03 (admin shutdown, crash, cannot connect
        // now), 53300 (too many connections): the database is not there right now.
        sqlx::Error::Database(d)
            if d.code()
                .is_some_and(|c| c.starts_with("08") || c.starts_with("57P") || c == "53300") =>
        {
            StoreError::Unavailable(d.into())
        }
        e @ (sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)) => {
            StoreError::Unavailable(e.into())
        }
        e => StoreError::other(e),
    }
}

fn ts(dt: OffsetDateTime) -> Result<Timestamp, StoreError> {
    Timestamp::from_datetime(dt).ok_or_else(|| StoreError::other("instant out of range"))
}

fn opt_ts(dt: Option<OffsetDateTime>) -> Result<Option<Timestamp>, StoreError> {
    dt.map(ts).transpose()
}

fn get<'r, T>(r: &'r PgRow, col: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    r.try_get(col).map_err(db_err)
}

fn money(v: i64) -> Result<Money, StoreError> {
    Money::new(v).map_err(StoreError::other)
}

fn id<T>(v: i64, f: fn(i64) -> Result<T, String>) -> Result<T, StoreError> {
    f(v).map_err(StoreError::other)
}

fn opt_merchant(r: &PgRow) -> Result<Option<MerchantId>, StoreError> {
    get::<Option<i64>>(r, "merchant_id")?
        .map(|v| id(v, MerchantId::new))
        .transpose()
}

pub(crate) fn coupon(r: &PgRow) -> Result<Coupon, StoreError> {
    let status: String = get(r, "status")?;
    Ok(Coupon {
        id: id(get(r, "id")?, CouponId::new)?,
        template_id: id(get(r, "template_id")?, TemplateId::new)?,
        user_id: UserId::parse(&get::<String>(r, "user_id")?).map_err(StoreError::other)?,
        stored_status: CouponStatus::parse(&status)
            .ok_or_else(|| StoreError::other("unknown coupon status"))?,
        claimed_at: ts(get(r, "claimed_at")?)?,
        valid_from: ts(get(r, "valid_from")?)?,
        valid_until: ts(get(r, "valid_until")?)?,
        code: get(r, "code")?,
        order_id: get::<Option<String>>(r, "order_id")?
            .map(|o| OrderId::parse(&o).map_err(StoreError::other))
            .transpose()?,
        locked_until: opt_ts(get(r, "locked_until")?)?,
        discount: get::<Option<i64>>(r, "discount")?.map(money).transpose()?,
        used_at: opt_ts(get(r, "used_at")?)?,
    })
}

pub(crate) fn activity(r: &PgRow) -> Result<Activity, StoreError> {
    Ok(Activity {
        id: id(get(r, "id")?, ActivityId::new)?,
        spec: codec::activity_from_json(get(r, "id")?, get(r, "spec")?)?,
        created_at: ts(get(r, "created_at")?)?,
        updated_at: ts(get(r, "updated_at")?)?,
        aborted_at: opt_ts(get(r, "aborted_at")?)?,
        version: get(r, "version")?,
        enrollment_seq: get(r, "enrollment_seq")?,
    })
}

pub(crate) fn template(r: &PgRow) -> Result<Template, StoreError> {
    Ok(Template {
        id: id(get(r, "id")?, TemplateId::new)?,
        merchant_id: opt_merchant(r)?,
        spec: codec::template_from_json(
            get(r, "id")?,
            get(r, "spec")?,
            Window::new(ts(get(r, "claim_start")?)?, ts(get(r, "claim_end")?)?)
                .map_err(StoreError::other)?,
        )?,
        claimed: get(r, "claimed")?,
        used: get(r, "used")?,
        given: money(get(r, "given")?)?,
        reserved: money(get(r, "reserved")?)?,
        created_at: ts(get(r, "created_at")?)?,
        updated_at: ts(get(r, "updated_at")?)?,
        published_at: opt_ts(get(r, "published_at")?)?,
        aborted_at: opt_ts(get(r, "aborted_at")?)?,
        version: get(r, "version")?,
    })
}

pub(crate) fn coupon_event(r: &PgRow) -> Result<CouponEvent, StoreError> {
    let status = |s: String| {
        CouponStatus::parse(&s).ok_or_else(|| StoreError::other("unknown coupon status"))
    };
    Ok(CouponEvent {
        id: get(r, "id")?,
        coupon_id: id(get(r, "coupon_id")?, CouponId::new)?,
        from: get::<Option<String>>(r, "from_status")?
            .map(status)
            .transpose()?,
        to: status(get(r, "to_status")?)?,
        order_id: get(r, "order_id")?,
        actor: Actor::parse(&get::<String>(r, "actor")?)
            .ok_or_else(|| StoreError::other("unknown actor"))?,
        at: ts(get(r, "at")?)?,
    })
}

pub(crate) fn event(r: &PgRow) -> Result<Event, StoreError> {
    Ok(Event {
        id: get(r, "id")?,
        txid: get(r, "txid")?,
        kind: get(r, "kind")?,
        at: ts(get(r, "at")?)?,
        body: get(r, "body")?,
    })
}

pub(crate) fn order(r: &PgRow) -> Result<OrderRecord, StoreError> {
    let state: String = get(r, "state")?;
    Ok(OrderRecord {
        order_id: OrderId::parse(&get::<String>(r, "order_id")?).map_err(StoreError::other)?,
        user_id: UserId::parse(&get::<String>(r, "user_id")?).map_err(StoreError::other)?,
        state: OrderState::parse(&state).ok_or_else(|| StoreError::other("unknown order state"))?,
        deadline: ts(get(r, "deadline")?)?,
        answer: get(r, "answer")?,
        created_at: ts(get(r, "created_at")?)?,
        ended_at: opt_ts(get(r, "ended_at")?)?,
    })
}

pub(crate) fn reminder(r: &PgRow) -> Result<Reminder, StoreError> {
    Ok(Reminder {
        user_id: UserId::parse(&get::<String>(r, "user_id")?).map_err(StoreError::other)?,
        template_id: id(get(r, "template_id")?, TemplateId::new)?,
        day: get(r, "day")?,
        due_at: ts(get(r, "due_at")?)?,
    })
}

pub(crate) fn message(r: &PgRow) -> Result<Message, StoreError> {
    Ok(Message {
        id: get(r, "id")?,
        user_id: UserId::parse(&get::<String>(r, "user_id")?).map_err(StoreError::other)?,
        kind: get(r, "kind")?,
        title: get(r, "title")?,
        body: get(r, "body")?,
        created_at: ts(get(r, "created_at")?)?,
        read_at: opt_ts(get(r, "read_at")?)?,
    })
}

pub(crate) fn issuance(r: &PgRow) -> Result<Issuance, StoreError> {
    let n = |col: &str| -> Result<u64, StoreError> {
        u64::try_from(get::<i64>(r, col)?).map_err(StoreError::other)
    };
    let state: String = get(r, "state")?;
    Ok(Issuance {
        id: get(r, "id")?,
        template_id: id(get(r, "template_id")?, TemplateId::new)?,
        actor: Actor::parse(&get::<String>(r, "actor")?)
            .ok_or_else(|| StoreError::other("unknown actor"))?,
        state: IssuanceState::parse(&state)
            .ok_or_else(|| StoreError::other("unknown issuance state"))?,
        requested: n("requested")?,
        next_user: n("next_user")?,
        issued: n("issued")?,
        skipped: n("skipped")?,
        sold_out: n("sold_out")?,
        not_eligible: n("not_eligible")?,
        duplicates: n("duplicates")?,
        invalid: n("invalid")?,
        invalid_lines: serde_json::from_str(&get::<String>(r, "invalid_lines")?)
            .map_err(StoreError::other)?,
        error: get(r, "error")?,
        created_at: ts(get(r, "created_at")?)?,
        started_at: opt_ts(get(r, "started_at")?)?,
        finished_at: opt_ts(get(r, "finished_at")?)?,
        key_fingerprint: get::<Option<Vec<u8>>>(r, "key_fingerprint")?
            .map(|f| <[u8; 32]>::try_from(f.as_slice()))
            .transpose()
            .map_err(StoreError::other)?,
    })
}

/// A job's users as stored: one id per line.
pub(crate) fn user_list(blob: &[u8]) -> Result<Vec<UserId>, StoreError> {
    let text = std::str::from_utf8(blob).map_err(StoreError::other)?;
    if text.is_empty() {
        return Ok(vec![]);
    }
    text.split('\n')
        .map(|u| UserId::parse(u).map_err(StoreError::other))
        .collect()
}
