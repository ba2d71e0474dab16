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
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::RowNotFound => StoreError::NotFound,
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            StoreError::Conflict(Conflict::Unique)
        }
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => {
            StoreError::Conflict(Conflict::Reference)
        }
        // SQLITE_BUSY / SQLITE_LOCKED (any extended code) after the busy timeout: another
        // process holds the lock.
        sqlx::Error::Database(d)
            if d.code()
                .and_then(|c| c.parse::<i32>().ok())
                .is_some_and(|c| matches!(c & 0xff, 5 | 6)) =>
        {
            StoreError::Unavailable(d.into())
        }
        e @ (sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)) => {
            StoreError::Unavailable(e.into())
        }
        e => StoreError::other(e),
    }
}

pub(crate) fn ts(micros: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_unix_micros(micros).ok_or_else(|| StoreError::other("instant out of range"))
}

fn get<'r, T>(r: &'r SqliteRow, col: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>,
{
    r.try_get(col).map_err(db_err)
}

fn opt_ts(micros: Option<i64>) -> Result<Option<Timestamp>, StoreError> {
    micros.map(ts).transpose()
}

fn money(v: i64) -> Result<Money, StoreError> {
    Money::new(v).map_err(StoreError::other)
}

fn id<T>(v: i64, f: fn(i64) -> Result<T, String>) -> Result<T, StoreError> {
    f(v).map_err(StoreError::other)
}

/// A coupon's columns, in [`COUPON_JSON`]'s order: the one shape both readers decode.
type CouponColumns = (
    i64,
    i64,
    String,
    String,
    i64,
    i64,
    i64,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

/// A coupon row as a JSON array, for reads that aggregate many coupons into one row
/// (`json_group_array`): sqlx hands each row from its SQLite thread to the task on its own,
/// with a wake-up each, which cost more than the rows themselves on a 200-coupon wallet.
pub(crate) const COUPON_JSON: &str = "json_array(id, template_id, user_id, status, claimed_at, \
     valid_from, valid_until, code, order_id, locked_until, discount, used_at)";

pub(crate) fn coupon(r: &SqliteRow) -> Result<Coupon, StoreError> {
    coupon_of((
        get(r, "id")?,
        get(r, "template_id")?,
        get(r, "user_id")?,
        get(r, "status")?,
        get(r, "claimed_at")?,
        get(r, "valid_from")?,
        get(r, "valid_until")?,
        get(r, "code")?,
        get(r, "order_id")?,
        get(r, "locked_until")?,
        get(r, "discount")?,
        get(r, "used_at")?,
    ))
}

/// The coupons of a `json_group_array(COUPON_JSON)` value.
pub(crate) fn coupons_json(text: &str) -> Result<Vec<Coupon>, StoreError> {
    let all: Vec<CouponColumns> = serde_json::from_str(text).map_err(StoreError::other)?;
    all.into_iter().map(coupon_of).collect()
}

fn coupon_of(c: CouponColumns) -> Result<Coupon, StoreError> {
    let (id_, template, user, status, claimed, from, until, code, order, locked, discount, used) =
        c;
    Ok(Coupon {
        id: id(id_, CouponId::new)?,
        template_id: id(template, TemplateId::new)?,
        user_id: UserId::parse(&user).map_err(StoreError::other)?,
        stored_status: CouponStatus::parse(&status)
            .ok_or_else(|| StoreError::other("unknown coupon status"))?,
        claimed_at: ts(claimed)?,
        valid_from: ts(from)?,
        valid_until: ts(until)?,
        code,
        order_id: order
            .map(|o| OrderId::parse(&o).map_err(StoreError::other))
            .transpose()?,
        locked_until: opt_ts(locked)?,
        discount: discount.map(money).transpose()?,
        used_at: opt_ts(used)?,
    })
}

pub(crate) fn activity(r: &SqliteRow) -> Result<Activity, StoreError> {
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

pub(crate) fn template(r: &SqliteRow) -> Result<Template, StoreError> {
    Ok(Template {
        id: id(get(r, "id")?, TemplateId::new)?,
        merchant_id: get::<Option<i64>>(r, "merchant_id")?
            .map(|v| id(v, MerchantId::new))
            .transpose()?,
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

pub(crate) fn coupon_event(r: &SqliteRow) -> Result<CouponEvent, StoreError> {
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

pub(crate) fn event(r: &SqliteRow) -> Result<Event, StoreError> {
    Ok(Event {
        id: get(r, "id")?,
        txid: 0,
        kind: get(r, "kind")?,
        at: ts(get(r, "at")?)?,
        body: serde_json::from_str(&get::<String>(r, "body")?).map_err(StoreError::other)?,
    })
}

pub(crate) fn order(r: &SqliteRow) -> Result<OrderRecord, StoreError> {
    let state: String = get(r, "state")?;
    Ok(OrderRecord {
        order_id: OrderId::parse(&get::<String>(r, "order_id")?).map_err(StoreError::other)?,
        user_id: UserId::parse(&get::<String>(r, "user_id")?).map_err(StoreError::other)?,
        state: OrderState::parse(&state).ok_or_else(|| StoreError::other("unknown order state"))?,
        deadline: ts(get(r, "deadline")?)?,
        answer: serde_json::from_str(&get::<String>(r, "answer")?).map_err(StoreError::other)?,
        created_at: ts(get(r, "created_at")?)?,
        ended_at: opt_ts(get(r, "ended_at")?)?,
    })
}

pub(crate) fn reminder(r: &SqliteRow) -> Result<Reminder, StoreError> {
    Ok(Reminder {
        user_id: UserId::parse(&get::<String>(r, "user_id")?).map_err(StoreError::other)?,
        template_id: id(get(r, "template_id")?, TemplateId::new)?,
        day: get(r, "day")?,
        due_at: ts(get(r, "due_at")?)?,
    })
}

pub(crate) fn message(r: &SqliteRow) -> Result<Message, StoreError> {
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

pub(crate) fn issuance(r: &SqliteRow) -> Result<Issuance, StoreError> {
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
